package session

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/presence"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/store/noop"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// Config configures a Protocol. Zero fields take the documented defaults.
type Config struct {
	// Auth validates tokens; required. Wrap it in auth.NewCache for the 30 s
	// token cache (wire-reference.md §4.8).
	Auth auth.Authenticator
	// MaxMessageSize is the default bound on a publish's data in bytes
	// (42930 above it); a token may lower it. Capped at PayloadCeiling
	// (OQ-7).
	MaxMessageSize int
	// Store records accepted publishes and acks (wire-reference.md §6.4–§6.5); nil
	// records nothing.
	Store store.Store
	// History keeps every accepted publish durably (STORE_BACKEND=jetstream,
	// pkg/history; decisions.md OQ-72); nil keeps nothing and costs the
	// publish path nothing. See History for what each entry holds.
	History History
	// Durable feeds the durable load-balanced groups from the history
	// (pkg/durable, decisions.md OQ-74); nil makes no group durable.
	// DurableAll makes every load-balanced group on an exact topic durable
	// (DURABLE_GROUPS=true); otherwise only the groups a member whose token
	// has persistentSession joins are (wire-reference.md §6.6).
	Durable    DurableGroups
	DurableAll bool
	// Broker carries accepted publishes to the other nodes and brings
	// theirs in; nil means a single node (local.Broker).
	Broker broker.Broker
	// NodeID names this node to the Broker; "" means a random id.
	NodeID string
	// RecordMessages stamps every publish with a UUIDv4 msgId and
	// requiresAck:true (wire-reference.md §6.4).
	RecordMessages bool
	// RateLimit is the default publishes per second per connection (42910
	// above it, OQ-6); 0 means 50.
	RateLimit int
	// ErrorFrameLimit caps, per second per connection, the error frames that
	// answer nothing a client waits for (OQ-67, amended); 0 means 10.
	ErrorFrameLimit int
	// ErrorFloodLimit closes, with 1008 too_many_errors, a connection that
	// provokes more error frames than this in one second; 0 means 1000.
	ErrorFloodLimit int
	// MaxAuthFailures closes a connection with 4004 too_many_auth_failures
	// after this many failed auth attempts (OQ-65, amended), a reauth whose
	// token is refused counting as one; 0 means 5.
	MaxAuthFailures int
	// Control is the control plane's batcher (wire-reference.md §5.2); nil
	// reports nothing and blocks nothing. The caller starts and closes it.
	Control *control.Batcher
	// Webhooks sends the customer webhooks of the grants' apps (§5.3); nil
	// sends none. The caller closes it.
	Webhooks *webhook.Dispatcher
	// OnClose is called on a connection's worker once the session has let
	// go of a closed connection (its organisation slot, its presence), for
	// the transport's own accounting; nil for none.
	OnClose func(*hub.Conn)
	// OnAuthenticated is called on the connection's reader when an auth
	// succeeds, once the connection is in hub.PhaseAuthed (the node's edge
	// limits count it out of the pending connections); nil for none. It
	// must not block.
	OnAuthenticated func(*hub.Conn)
	// Logger receives the session's logs (named "server"); nil means none.
	Logger *zap.Logger
	// Resume makes connections resumable (RESUME_SESSIONS); its
	// zero value keeps nothing across a dropped connection (resume.go).
	Resume ResumeConfig
	// Context is the node's base context: every backend call the session
	// makes (auth, reauth, room-access checks, revalidations, the message
	// store) carries its values and ends with it, so cancelling it cancels
	// them all; a call made for a connection also ends when the connection
	// closes (calls.go). Shutdown cancels them in any case. nil means
	// context.Background().
	Context context.Context
}

// PayloadCeiling is the hard upper bound of a publish's data in bytes
// (wire-reference.md §6.11).
const PayloadCeiling = 921600

// The defaults of Config's zero fields that a setting of pkg/config also
// documents (its default is derived from these).
const (
	// DefaultRateLimit is Config.RateLimit's default, in publishes per
	// second per connection (RATE_LIMIT).
	DefaultRateLimit = 50
	// DefaultErrorFrameLimit is Config.ErrorFrameLimit's default, in
	// error frames per second per connection (ERROR_FRAME_LIMIT).
	DefaultErrorFrameLimit = 10
	// DefaultErrorFloodLimit is Config.ErrorFloodLimit's default, in error
	// frames in one second (ERROR_FLOOD_LIMIT).
	DefaultErrorFloodLimit = 1000
	// DefaultMaxAuthFailures is Config.MaxAuthFailures's default, in failed
	// auth attempts per connection (MAX_AUTH_FAILURES).
	DefaultMaxAuthFailures = 5
)

func (c *Config) setDefaults() {
	if c.MaxMessageSize <= 0 || c.MaxMessageSize > PayloadCeiling {
		c.MaxMessageSize = PayloadCeiling
	}
	if c.RateLimit <= 0 {
		c.RateLimit = DefaultRateLimit
	}
	if c.ErrorFrameLimit <= 0 {
		c.ErrorFrameLimit = DefaultErrorFrameLimit
	}
	if c.ErrorFloodLimit <= 0 {
		c.ErrorFloodLimit = DefaultErrorFloodLimit
	}
	if c.MaxAuthFailures <= 0 {
		c.MaxAuthFailures = DefaultMaxAuthFailures
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Context == nil {
		c.Context = context.Background()
	}
	if c.Store == nil {
		c.Store = noop.Store{}
	}
	if c.Broker == nil {
		c.Broker = local.Broker{}
	}
	if c.NodeID == "" {
		c.NodeID = uuid.NewString()
	}
}

// Protocol is the session protocol of one node, shared by every connection
// of every transport: the configuration, the hub, the presence registry,
// the organisation counts and the counters. Its methods are safe for
// concurrent use; those taking a *State run on that connection's reader.
type Protocol struct {
	cfg    Config
	log    *zap.Logger
	hub    *hub.Hub
	orgs   orgCounter
	pres   *presence.Registry[*hub.Conn] // owned by the hub's shared worker
	obs    counters
	multi  bool             // the broker is not local.Broker: a node of a cluster
	resume *resume.Registry // nil unless Config.Resume.Enabled
	// ctx is Config.Context's child, cancelled by Shutdown (stop): the
	// parent of the revalidations and store calls, and the end of every
	// connection's call, which calls holds (calls.go) and cancels once ctx
	// is done (cancelAll, on the goroutine of context.AfterFunc, which
	// Shutdown waits for through ended).
	ctx   context.Context
	stop  context.CancelFunc
	calls calls
	ended sync.WaitGroup
}

// New validates cfg and builds the Protocol. It has no hub yet: its owner
// builds one from HubConfig and hands it over with Attach before any
// connection is served (pkg/node does both). The error says that
// cfg.Auth is missing.
func New(cfg Config) (*Protocol, error) {
	if cfg.Auth == nil {
		return nil, errors.New("session: an Authenticator is required")
	}
	cfg.setDefaults()
	_, single := cfg.Broker.(local.Broker)
	p := &Protocol{cfg: cfg, log: cfg.Logger.Named("server"), pres: presence.New[*hub.Conn](), multi: !single}
	p.ctx, p.stop = context.WithCancel(cfg.Context)
	p.calls.init(p.ctx)
	p.ended.Add(1)
	context.AfterFunc(p.ctx, func() { defer p.ended.Done(); p.calls.cancelAll() })
	if p.multi {
		p.orgs.share = cfg.Broker.SetConnections
	}
	return p, nil
}

// HubConfig returns hc with the hooks the session answers set: the logger,
// Revalidate, OnClose, OnClosing, OnTooManySubscriptions, TooManyFrame and,
// on a node of a cluster, the broker's interest hooks. The other fields are
// hc's.
func (p *Protocol) HubConfig(hc hub.Config) hub.Config {
	hc.Logger = p.cfg.Logger
	hc.Revalidate = p.revalidate
	hc.OnClose = p.closed
	hc.OnClosing = p.calls.closing
	hc.OnTooManySubscriptions = p.tooManySubscriptions
	hc.TooManyFrame = tooManyFrame
	if p.cfg.Durable != nil {
		hc.OnDurableInterest = p.cfg.Durable.Interest
	}
	if p.multi {
		hc.OnInterest = p.cfg.Broker.Interest
		hc.OnGroupInterest = p.cfg.Broker.GroupInterest
		if w, ok := p.cfg.Broker.(broker.InterestWaiter); ok {
			hc.InterestReady = w.InterestReady
		}
	}
	return hc
}

// ResumeConfig returns the configuration of the registry of resumable
// sessions for a hub whose idle timeout is idle (hub.Config.IdleTimeout,
// 0 for its default). The registry always exists, as any token may ask
// for a session to be kept, and costs nothing unused.
func (p *Protocol) ResumeConfig(idle time.Duration) resume.Config {
	r := p.cfg.Resume
	return resume.Config{Expiry: r.Expiry, MaxSessions: r.MaxSessions, MaxBytes: r.MaxBytes,
		MaxMessages: r.MaxMessages, MaxAge: r.MaxAge, IdleTimeout: idle}
}

// Attach hands the Protocol its hub, built from HubConfig, and the registry
// of resumable sessions on that hub (ResumeConfig); call it once, before
// the hub starts. A token backend that is an auth.Notifier revalidates
// every connection of h on change from then on.
func (p *Protocol) Attach(h *hub.Hub, r *resume.Registry) {
	p.hub, p.resume = h, r
	if n, ok := p.cfg.Auth.(auth.Notifier); ok {
		n.OnChange(h.RevalidateAll)
	}
	if p.cfg.Durable != nil {
		p.cfg.Durable.Attach(h)
	}
}

// Handler returns the Protocol's side of the fan-out broker, to hand to
// broker.Broker.Start: other nodes' messages, group copies, presence and
// connection counts come in through it.
func (p *Protocol) Handler() broker.Handler { return remote{p} }

// Stop cancels every backend call in flight (auths, reauths, room-access
// checks, revalidations, as Config.Context's end would) and waits until
// they are cancelled; calls started afterwards are cancelled at once. Its
// owner calls it first at shutdown, before closing the connections through
// the hub.
func (p *Protocol) Stop() {
	p.stop()
	p.ended.Wait()
}

// Hangup tells the session that the peer of c went away while c's reader
// may still be running (a transport's netpoll OnDisconnect, which runs
// beside the reader; its close path waits for the reader to return):
// the backend call c has in flight is cancelled, and one its reader starts
// afterwards is cancelled at once. It never blocks. The transport's close
// (hub.Hub.Closed, from the event loop's OnClose) follows as usual.
func (p *Protocol) Hangup(c *hub.Conn) { p.calls.hangup(c) }

// Config returns the configuration in force, defaults applied.
func (p *Protocol) Config() Config { return p.cfg }

// Hub returns the worker pool (Attach).
func (p *Protocol) Hub() *hub.Hub { return p.hub }

// Broker returns the fan-out broker (Config.Broker, local.Broker for a
// single node).
func (p *Protocol) Broker() broker.Broker { return p.cfg.Broker }

// Distributed reports whether the node is one of a cluster: its broker is
// not the single-node local.Broker, so groups are served through the bus.
func (p *Protocol) Distributed() bool { return p.multi }

// closed lets go of a connection that ended (hub.Config.OnClose, on its
// worker): what calls holds for it, its organisation slot and its
// presence, then Config.OnClose.
func (p *Protocol) closed(c *hub.Conn) {
	p.calls.forget(c)
	if p.parkOnClose(c) {
		return // a parked session's own connection (resume.go)
	}
	if sess := c.Session(); sess != nil && sess.LimitOrg != "" {
		p.orgs.release(sess.LimitOrg)
	}
	// A connection authenticated here has a session (set before its phase,
	// auth.go); one adopted in PhaseAuthed to hold a kept MQTT session
	// (hub.Conn.Adopt) has none, and was never counted.
	if c.Phase() == hub.PhaseAuthed && c.Session() != nil {
		p.obs.authed.Add(-1)
		p.hub.RunShared(func(w hub.Writer) {
			p.unsharePresence(c)
			p.emit(w, p.pres.Disconnect(c))
		})
	}
	if p.cfg.OnClose != nil {
		p.cfg.OnClose(c)
	}
}
