package client

import (
	"crypto/tls"
	"time"
)

// DefaultURL is the broker address used when Options.URL is empty: a kraken
// running on this machine with its defaults.
const DefaultURL = "ws://localhost:8080/ws"

// Defaults of the zero Options fields.
const (
	DefaultReconnectDelay      = 5 * time.Second
	DefaultReconnectMultiplier = 1.5
	DefaultMaxReconnectDelay   = 30 * time.Second
	DefaultReconnectJitter     = 0.2
	DefaultHeartbeatInterval   = 30 * time.Second
	DefaultRequestTimeout      = 10 * time.Second
	DefaultAckInterval         = 100 * time.Millisecond
	DefaultAckBatchSize        = 100
	DefaultHandlerQueueSize    = 4096
	DefaultProtocolVersion     = 2
)

// Options configure a Client. Every zero field takes the default named in
// its comment.
type Options struct {
	// URL is the broker's WebSocket endpoint; "" means DefaultURL.
	URL string
	// ProtocolVersion is the version asked for in the auth frame; the broker
	// answers with min(asked, its own). 0 means 2. Version 1 gets
	// `not_authorized` instead of `unknown_topic` for a topic outside the
	// grants.
	ProtocolVersion int
	// ProjectID is sent in the auth frame for the broker's logs; optional.
	ProjectID string
	// ClientID names this client's session, sent as `clientId` in every
	// auth frame when not "". A broker with resumable sessions (kraken's
	// RESUME_SESSIONS, docs/protocol.md "Resumable sessions") keys a session by the actor plus this id,
	// which it keeps only [A-Za-z0-9_-] of and cuts at 64 characters. Give
	// each device or process of one token its own stable ClientID: without
	// one, only the actor's first live connection is resumable.
	ClientID string

	// DisableReconnect turns automatic reconnection off: a lost connection
	// leaves the client disconnected (Connect may be called again, and
	// re-subscribes everything).
	DisableReconnect bool
	// ReconnectDelay is the wait before the first reconnect attempt; 0
	// means 5 s. Attempt n waits ReconnectDelay × ReconnectMultiplier^(n-1),
	// at most MaxReconnectDelay, less a random part of up to
	// ReconnectJitter of it.
	ReconnectDelay time.Duration
	// ReconnectMultiplier is the growth factor of the wait; values below 1
	// mean 1.5.
	ReconnectMultiplier float64
	// MaxReconnectDelay caps the wait; 0 means 30 s.
	MaxReconnectDelay time.Duration
	// ReconnectJitter is the fraction of each wait that is random, in
	// [0, 1]: 0 means 0.2, a negative value means no jitter.
	ReconnectJitter float64
	// MaxReconnectAttempts stops reconnecting after this many failed
	// attempts in a row; 0 means never stop.
	MaxReconnectAttempts int

	// HeartbeatInterval is how often an empty binary frame is sent to keep
	// the connection alive (the broker closes connections idle for 60 s);
	// 0 means 30 s, negative disables heartbeats. While heartbeats are on,
	// a connection that receives nothing for two intervals plus 10 s is
	// considered dead and is replaced.
	HeartbeatInterval time.Duration
	// DialTimeout bounds the WebSocket handshake plus the auth exchange of
	// each connection attempt; 0 means RequestTimeout.
	DialTimeout time.Duration
	// TLSConfig is the TLS configuration of a wss:// URL (a private CA in
	// RootCAs, a client certificate); nil means Go's defaults: the
	// system's CAs and the URL's host name.
	TLSConfig *tls.Config
	// RequestTimeout bounds a request (Subscribe, Publish, ...) whose
	// context has no deadline; 0 means 10 s.
	RequestTimeout time.Duration

	// DisableAutoAck stops the client from acknowledging messages that
	// carry requiresAck. By default each such message is acknowledged once
	// its handler has returned, in batchAck frames sent every AckInterval
	// (0 means 100 ms) or as soon as AckBatchSize ids (0 means 100) are
	// waiting.
	DisableAutoAck bool
	AckInterval    time.Duration
	AckBatchSize   int

	// HandlerQueueSize bounds the deliveries waiting for the handler
	// goroutine; 0 means 4096. When it is full, new deliveries are dropped
	// and a *SlowConsumerError is reported to OnError: the reader never
	// blocks on handlers, so heartbeats and replies keep flowing.
	HandlerQueueSize int

	// Event callbacks. They run on the handler goroutine, in order with the
	// message handlers, so they may call the client's methods (for example
	// Subscribe from OnConnect). None is called after Close.

	// OnConnect runs after each successful connect and reconnect, once
	// every subscription has been re-established.
	OnConnect func(Info)
	// OnDisconnect runs when a live connection is lost, with the reason.
	OnDisconnect func(err error)
	// OnReconnecting runs when a reconnect attempt is scheduled, with the
	// attempt number (from 1) and the wait before it.
	OnReconnecting func(attempt int, delay time.Duration)
	// OnError receives errors that no call returns: broker errors for
	// Emit, re-subscriptions refused after a reconnect, dropped deliveries.
	OnError func(err error)
	// OnPresence receives room presence events (wire-reference.md §7.1); needs a
	// broker with presence.
	OnPresence func(PresenceEvent)
	// OnLobbyPresence receives lobby presence events (wire-reference.md §7.4);
	// needs a broker with presence.
	OnLobbyPresence func(LobbyPresenceEvent)
	// OnHydration receives the `hydration` frames the broker sends after a
	// subscribe whose app has a hydration webhook: the webhook's answer,
	// sent once, after the broker confirmed the subscription (kraken's
	// docs/backends.md, "Webhooks"). Without it they are dropped.
	OnHydration func(Hydration)
	// OnReplay runs once per `replayEnd` the broker sends, after the
	// handlers of the replayed messages that came before it: on a
	// reconnect that resumed a session (see the package documentation,
	// "Reconnects"), and on one that found no session to resume
	// (Complete false, Reason ReplaySessionExpired). kraken starts the
	// replay right after the auth reply, so OnReplay usually runs before
	// that reconnect's OnConnect (which waits for the answers to the
	// re-subscriptions), but the order is not guaranteed.
	OnReplay func(ReplayInfo)
}

func (o *Options) setDefaults() {
	if o.URL == "" {
		o.URL = DefaultURL
	}
	if o.ProtocolVersion <= 0 {
		o.ProtocolVersion = DefaultProtocolVersion
	}
	if o.ReconnectDelay <= 0 {
		o.ReconnectDelay = DefaultReconnectDelay
	}
	if o.ReconnectMultiplier < 1 {
		o.ReconnectMultiplier = DefaultReconnectMultiplier
	}
	if o.MaxReconnectDelay <= 0 {
		o.MaxReconnectDelay = DefaultMaxReconnectDelay
	}
	switch {
	case o.ReconnectJitter == 0:
		o.ReconnectJitter = DefaultReconnectJitter
	case o.ReconnectJitter < 0:
		o.ReconnectJitter = 0
	case o.ReconnectJitter > 1:
		o.ReconnectJitter = 1
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = o.RequestTimeout
	}
	if o.AckInterval <= 0 {
		o.AckInterval = DefaultAckInterval
	}
	if o.AckBatchSize <= 0 {
		o.AckBatchSize = DefaultAckBatchSize
	}
	if o.HandlerQueueSize <= 0 {
		o.HandlerQueueSize = DefaultHandlerQueueSize
	}
}

// backoff returns the wait before reconnect attempt n (from 1): the
// exponential delay capped at MaxReconnectDelay, less jitter × rnd of it,
// rnd being uniform in [0, 1).
func (o *Options) backoff(n int, rnd float64) time.Duration {
	d := float64(o.ReconnectDelay)
	for i := 1; i < n && d < float64(o.MaxReconnectDelay); i++ {
		d *= o.ReconnectMultiplier
	}
	d = min(d, float64(o.MaxReconnectDelay))
	return time.Duration(d - d*o.ReconnectJitter*rnd)
}

// FilterSet is the filters of a subscription (wire-reference.md §6.9): a message
// published with a filter is delivered when that filter equals one of
// Values, or one of the AND Groups (lowercased, sorted and joined with "|"
// by the broker). An empty FilterSet receives everything on the topic,
// filtered or not.
type FilterSet struct {
	Values []string
	Groups [][]string
}

// IsEmpty reports a set with no filters.
func (f FilterSet) IsEmpty() bool { return len(f.Values) == 0 && len(f.Groups) == 0 }

func (f FilterSet) clone() FilterSet {
	out := FilterSet{Values: append([]string(nil), f.Values...)}
	for _, g := range f.Groups {
		out.Groups = append(out.Groups, append([]string(nil), g...))
	}
	return out
}

// subOptions are the options of one subscription, kept to re-subscribe
// after a reconnect.
type subOptions struct {
	qos         int
	loadBalance bool
	group       string
	filters     FilterSet
}

// pubOptions are the options of one publish.
type pubOptions struct {
	qos       int
	noEcho    bool
	retain    bool
	filter    string
	composite []string
	msgRef    string
}

// SubscribeOption configures Subscribe.
type SubscribeOption interface{ applySubscribe(*subOptions) }

// PublishOption configures Publish and Emit.
type PublishOption interface{ applyPublish(*pubOptions) }

type subscribeOptionFunc func(*subOptions)

func (f subscribeOptionFunc) applySubscribe(o *subOptions) { f(o) }

type publishOptionFunc func(*pubOptions)

func (f publishOptionFunc) applyPublish(o *pubOptions) { f(o) }

// QoSOption is returned by WithQoS; it applies to Subscribe and Publish.
type QoSOption int

func (q QoSOption) applySubscribe(o *subOptions) { o.qos = int(q) }
func (q QoSOption) applyPublish(o *pubOptions)   { o.qos = int(q) }

// WithQoS sets the QoS (0, 1 or 2) of a subscription or a publish; the
// default is 1. kraken's in-process fan-out delivers at most once whatever
// the QoS.
func WithQoS(qos int) QoSOption { return QoSOption(qos) }

// WithLoadBalance makes the subscription a member of a load-balanced group:
// each message goes to one member of the group (round-robin on kraken). An
// empty group means the broker's default, the actor's token id.
func WithLoadBalance(group string) SubscribeOption {
	return subscribeOptionFunc(func(o *subOptions) { o.loadBalance, o.group = true, group })
}

// WithFilters adds filter values to the subscription: it then receives
// only messages published with one of these filters.
func WithFilters(values ...string) SubscribeOption {
	return subscribeOptionFunc(func(o *subOptions) {
		o.filters.Values = append(o.filters.Values, values...)
	})
}

// WithFilterGroup adds one AND group of at least two values: it matches a
// publish made with WithCompositeFilter of the same values, in any order
// and case.
func WithFilterGroup(values ...string) SubscribeOption {
	return subscribeOptionFunc(func(o *subOptions) {
		o.filters.Groups = append(o.filters.Groups, append([]string(nil), values...))
	})
}

// NoEcho keeps the broker from delivering the publish back to this
// connection's own subscriptions (other connections of the same actor still
// get it).
func NoEcho() PublishOption { return publishOptionFunc(func(o *pubOptions) { o.noEcho = true }) }

// Retain asks the broker to keep the message and deliver it to later
// subscribers of the topic, right after their `subscribed`; a retained nil
// clears it.
func Retain() PublishOption { return publishOptionFunc(func(o *pubOptions) { o.retain = true }) }

// WithFilter publishes with one filter value, used as is.
func WithFilter(value string) PublishOption {
	return publishOptionFunc(func(o *pubOptions) { o.filter = value })
}

// WithCompositeFilter publishes with a composite filter: the values are
// lowercased, sorted and joined with "|" by the broker, matching a
// subscription's WithFilterGroup of the same values.
func WithCompositeFilter(values ...string) PublishOption {
	return publishOptionFunc(func(o *pubOptions) { o.composite = append([]string(nil), values...) })
}

// WithMsgRef sets the msgRef of a publish instead of a generated one. With
// Emit it asks the broker for a `published` acknowledgement that Emit does
// not wait for; errors then go to OnError with this MsgRef.
func WithMsgRef(ref string) PublishOption {
	return publishOptionFunc(func(o *pubOptions) { o.msgRef = ref })
}
