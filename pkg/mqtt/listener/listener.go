package listener

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
)

// Config configures a Listener. Zero fields take the documented defaults.
type Config struct {
	// Addr is the TCP listen address, e.g. ":1883" or "127.0.0.1:0".
	Addr string
	// TLSAddr, when not "", is the listen address of MQTT over TLS
	// (MQTTS_PORT, 8883 by convention), served with TLS; both are required
	// for it. TLS's own client authentication (mutual TLS) is TLS's.
	TLSAddr string
	TLS     *tls.Config
	// MaxPacketSize bounds an inbound packet in bytes; a larger one closes
	// the connection (MQTT 3.1.1 has no code for it). 0 means
	// session.PayloadCeiling plus 64 KiB for the topic and header.
	MaxPacketSize int
	// MaxInputBacklog bounds a connection's received but unprocessed bytes
	// (disconnect.InputOverflow above it). 0 means 4 × MaxPacketSize.
	MaxInputBacklog int
	// MaxInflight bounds a connection's outbound QoS 1 and 2 PUBLISHes
	// awaiting their acknowledgement (MQTT_MAX_INFLIGHT); more wait in its
	// queue until acknowledgements come (inflight.go). 0 means 64; at most
	// 32,768.
	MaxInflight int
	// MaxQueuedBytes bounds the bytes of a connection's outbound QoS 1 and
	// 2 PUBLISHes waiting for a free in-flight slot (MQTT_MAX_QUEUED_BYTES);
	// one more closes the connection as a slow consumer, as does a client
	// that acknowledges nothing for the hub's write deadline while messages
	// wait. 0 means 4 MiB.
	MaxQueuedBytes int
	// SessionExpiry is how long the session of a Clean Session 0
	// connection is kept once it has gone (docs/mqtt.md), unless its token
	// carries its own (auth.Grant.SessionExpiry). 0 means
	// resume.DefaultExpiry, the WebSocket resumable sessions' default
	// (RESUME_EXPIRY_SECONDS).
	SessionExpiry time.Duration
	// SessionMaxBytes and SessionMaxMessages bound what a kept session
	// collects while its client is away (QoS 1 and 2 messages; the newest
	// past a bound are dropped). 0 means resume.DefaultMaxBytes and no
	// count bound (RESUME_MAX_BYTES, STORE_MAX_MESSAGES).
	SessionMaxBytes, SessionMaxMessages int
	// MaxSessions caps the sessions kept while disconnected; one more is
	// not kept (logged). 0 means resume.DefaultMaxSessions
	// (RESUME_MAX_SESSIONS).
	MaxSessions int
	// ProxyProtocol says every connection begins with a PROXY protocol
	// header, version 1 or 2 (PROXY_PROTOCOL has "mqtt"): the client's
	// address is read from it (reactor.Config.ProxyProtocol) and the edge
	// limits of the address apply to that one (CONNACK 3 when they
	// refuse); a connection without a valid header is closed without an
	// answer. ProxyProtocolTLS says the same of MQTT over TLS (PROXY_PROTOCOL
	// has "mqtts"; the header comes before the TLS handshake).
	ProxyProtocol, ProxyProtocolTLS bool
	// Logger receives the listener's logs (named "mqtt"); nil means none.
	Logger *zap.Logger
}

func (c *Config) setDefaults() {
	if c.MaxPacketSize <= 0 {
		c.MaxPacketSize = session.PayloadCeiling + 64<<10
	}
	c.MaxPacketSize = min(c.MaxPacketSize, packet.MaxPacketSize)
	if c.MaxInputBacklog <= 0 {
		c.MaxInputBacklog = 4 * c.MaxPacketSize
	}
	if c.MaxInflight <= 0 {
		c.MaxInflight = DefaultMaxInflight
	}
	c.MaxInflight = min(c.MaxInflight, 1<<15)
	if c.MaxQueuedBytes <= 0 {
		c.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if c.SessionExpiry <= 0 {
		c.SessionExpiry = resume.DefaultExpiry
	}
	if c.SessionMaxBytes <= 0 {
		c.SessionMaxBytes = resume.DefaultMaxBytes
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = resume.DefaultMaxSessions
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// DefaultMaxInflight is Config.MaxInflight's default: 64 outbound QoS 1
// and 2 PUBLISHes awaiting acknowledgement per connection.
const DefaultMaxInflight = 64

// DefaultMaxQueuedBytes is Config.MaxQueuedBytes's default, 4 MiB, the
// hub's default outbound bound (OUTBOUND_MAX_BYTES).
const DefaultMaxQueuedBytes = 4 << 20

// Listener serves MQTT 3.1.1 clients on one address, on its own netpoll
// event loop (pkg/reactor; netpoll's pollers are shared by the process), as
// a transport of a node: its session protocol, on its hub.
type Listener struct {
	cfg   Config
	log   *zap.Logger
	node  *node.Node
	proto *session.Protocol    // node.Protocol()
	hub   *hub.Hub             // node.Hub()
	loop  *reactor.Loop[*conn] // accepts and reads the connections (read.go)

	clients clients // connected client identifiers, for takeovers (clients.go)
	// store is the node's resumable sessions when they are kept in a
	// session store (resume.Registry.Durable): the persistent sessions are
	// saved there and resumed from it (stored.go); nil without one.
	store *resume.Registry

	wills, takeovers, sessionDrops atomic.Uint64 // counters (metrics.go)
}

// New builds the Listener of n's MQTT connections (encoding EncodingID)
// and registers it with n (node.Node.AddTransport), so that n's Shutdown
// drains and stops it. It does not listen yet (Start). The error is the
// event loop's (reactor.New).
func New(n *node.Node, cfg Config) (*Listener, error) {
	cfg.setDefaults()
	l := &Listener{cfg: cfg, log: cfg.Logger.Named("mqtt"), node: n, proto: n.Protocol(), hub: n.Hub()}
	var err error
	l.loop, err = reactor.New[*conn](handler{l}, reactor.Config{Hub: l.hub, MaxInputBacklog: cfg.MaxInputBacklog,
		OnHangup: l.proto.Hangup, Logger: l.log, ProxyProtocol: cfg.ProxyProtocol, ProxyProtocolTLS: cfg.ProxyProtocolTLS})
	if err != nil {
		return nil, err
	}
	if r := n.Sessions(); r.Durable() {
		l.store = r
		r.AddSource(l)
	}
	n.AddTransport(EncodingID, l)
	n.AddTransport(WebSocketEncodingID, overWebSocket{})
	return l, nil
}

// Start listens on cfg.Addr and serves in the background; start the node
// first (node.Node.Start). The error is the listener's.
func (l *Listener) Start() error {
	if err := l.loop.Listen(l.cfg.Addr); err != nil {
		return err
	}
	if l.cfg.TLSAddr != "" {
		if err := l.loop.ListenTLS(l.cfg.TLSAddr, l.cfg.TLS); err != nil {
			_ = l.loop.Shutdown(context.Background())
			return err
		}
	}
	l.loop.Serve()
	return nil
}

// Addr returns the listening address (useful with port 0).
func (l *Listener) Addr() net.Addr { return l.loop.Addr() }

// TLSHandshakes returns the TLS listener's handshakes that succeeded and
// that failed (reactor.Loop.TLSHandshakes).
func (l *Listener) TLSHandshakes() (done, failed uint64) { return l.loop.TLSHandshakes() }

// TLSAddr returns the MQTT over TLS listener's address, nil without one.
func (l *Listener) TLSAddr() net.Addr { return l.loop.TLSAddr() }

// Kind implements node.Transport: every connection the listener accepted
// (or /mqtt handed over) is node.KindMQTT, counted open from its accept; a
// persistent session's parked connection is node.KindInternal, neither
// counted nor logged.
func (l *Listener) Kind(c *hub.Conn) node.Kind {
	if _, ok := c.Transport().(*offline); ok {
		return node.KindInternal // a persistent session's parked connection (sessions.go)
	}
	return node.KindMQTT
}

// KeptConnections implements node.Keeper: the parked hub connections of
// the persistent sessions kept (KeptSessions), none of them a client's.
func (l *Listener) KeptConnections() int { return l.clients.sessions() }

// Drain makes the listener close every connection it accepts from now on
// (node.Transport); the node's Shutdown calls it.
func (l *Listener) Drain() { l.loop.Drain() }

// Shutdown stops accepting and closes the event loop within ctx
// (node.Transport); the node's Shutdown calls it once the hub has closed
// the connections.
func (l *Listener) Shutdown(ctx context.Context) error { return l.loop.Shutdown(ctx) }

// KeptSessions returns the number of persistent sessions kept for clients
// that are not connected (sessions.go).
func (l *Listener) KeptSessions() int { return l.clients.sessions() }
