package node

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
)

// Config configures a Node: one configuration per component, each taking
// its own documented defaults for zero fields (hub.Config and
// session.Config; the resumable sessions are session.Config.Resume).
type Config struct {
	// Hub configures the worker pool. Its hooks (Revalidate, OnClose,
	// OnClosing, OnTooManySubscriptions, the interest hooks) and its
	// Logger are the session protocol's (session.Protocol.HubConfig).
	Hub hub.Config
	// Session configures the session protocol and carries the backends:
	// Auth (required), Store, Broker, Control, Webhooks. Its OnClose is
	// the node's (the counts by transport); its Context is the parent of
	// the node's base context (Node.Context); its Logger is the node's.
	Session session.Config
	// Limits bound the node's connections at its edge (edge.Limits:
	// MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS, MAX_PENDING_CONNECTIONS,
	// MAX_PENDING_PER_ADDRESS); the zero value bounds nothing. Its
	// OnAuthenticated hook of Session is the node's.
	Limits edge.Limits
	// Sessions, when set (STORE_BACKEND=jetstream: *sessionkv.Store),
	// keeps the resumable sessions where every node, and this one after a
	// restart, can resume them, under the name NodeID; a session resumed
	// from it is replayed from Session.History, which must then also be a
	// resume.History (*history.History is both).
	Sessions resume.Store
	NodeID   string
}

// Transport is what the node asks of a transport it serves connections
// for (AddTransport).
type Transport interface {
	// Kind returns the kind under which c, a connection of the transport,
	// is counted and logged when it ends; KindHTTP for one never counted
	// open (Node.Opened), KindInternal for one the transport keeps for
	// itself (neither counted nor logged; see Keeper).
	Kind(c *hub.Conn) Kind
	// Drain makes the transport close every connection it accepts from
	// now on (and stop accepting); it never blocks.
	Drain()
	// Shutdown stops the transport's event loop within ctx, after the
	// hub has closed its connections.
	Shutdown(ctx context.Context) error
}

// LameDuck is a Transport that keeps answering its health and readiness
// probes during a drain (Node.Drain): LameDuck makes it refuse every new
// client connection from now on, the probes still answered; it never
// blocks. Node.Drain calls it instead of Transport.Drain; Shutdown calls
// Drain as for any transport.
type LameDuck interface {
	LameDuck()
}

// Keeper is a Transport that holds hub connections of its own, no
// client's (KindInternal: an MQTT persistent session kept while its client
// is away): KeptConnections is how many, left out of the connection
// gauges.
type Keeper interface {
	KeptConnections() int
}

// Node is one kraken node: the hub, the session protocol, the resumable
// sessions and the broker slot, with their lifecycle. Build it with New.
type Node struct {
	log    *zap.Logger // named "server": the connection close lines
	proto  *session.Protocol
	hub    *hub.Hub
	resume *resume.Registry
	broker broker.Broker
	ctx    context.Context
	cancel context.CancelFunc

	mu         sync.Mutex                     // guards transports and byEnc writes
	transports []Transport                    // in the order added
	byEnc      [hub.MaxEncodings]atomic.Value // of transportBox, by encoding ID
	draining   atomic.Bool                    // Shutdown has begun
	lameDuck   atomic.Bool                    // Drain has begun (drain.go)
	drained    atomic.Bool                    // Drain has returned (drain.go)
	limits     *edge.Limiter                  // nil when Config.Limits bounds nothing
	obs        counts                         // stats.go
	checksMu   sync.Mutex                     // serialises AddReadyCheck
	checks     atomic.Pointer[[]ReadyCheck]   // ready.go
	stopOnce   sync.Once
}

// transportBox holds a Transport in an atomic.Value (one concrete type).
type transportBox struct{ t Transport }

// New builds a Node from cfg: the session protocol, the hub of cfg.Hub
// with the session's hooks, and the registry of resumable sessions on that
// hub. Nothing runs yet (Start). The error is session.New's: cfg.Session
// has no Authenticator.
func New(cfg Config) (*Node, error) {
	parent := cfg.Session.Context
	if parent == nil {
		parent = context.Background()
	}
	n := &Node{}
	n.ctx, n.cancel = context.WithCancel(parent)
	scfg := cfg.Session
	scfg.Context = n.ctx
	scfg.OnClose = n.closed
	if n.limits = edge.NewLimiter(cfg.Limits); n.limits != nil {
		scfg.OnAuthenticated = func(c *hub.Conn) { n.limits.Authenticated(peerOf(c)) }
	}
	p, err := session.New(scfg)
	if err != nil {
		n.cancel()
		return nil, err
	}
	applied := p.Config()
	n.log = applied.Logger.Named("server")
	n.proto, n.broker = p, applied.Broker
	n.hub = hub.New(p.HubConfig(cfg.Hub))
	rc := p.ResumeConfig(cfg.Hub.IdleTimeout)
	if cfg.Sessions != nil {
		rc.Store, rc.Node, rc.Logger = cfg.Sessions, cfg.NodeID, applied.Logger.Named("resume")
		rc.History, _ = cfg.Session.History.(resume.History)
	}
	n.resume = resume.New(rc, n.hub)
	p.Attach(n.hub, n.resume)
	return n, nil
}

// AddTransport registers t as the transport of the connections whose
// encoding has ID enc (hub.Encoding.ID, below hub.MaxEncodings): their
// ends are counted under t.Kind, and Shutdown drains and stops t. Call it
// from the transport's constructor, before Start.
func (n *Node) AddTransport(enc uint8, t Transport) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.transports = append(n.transports, t)
	n.byEnc[enc].Store(transportBox{t})
}

// Start starts the workers, then the fan-out broker, which brings other
// nodes' messages in through the session protocol (broker.Handler); the
// broker starts with the node's base context; then, with Config.Sessions,
// the saving of resumable sessions (resume.Registry.StartSaving). The
// broker's or the Store's error is returned wrapped; the hub is running
// then, and Shutdown stops it.
func (n *Node) Start() error {
	n.hub.Start()
	if err := n.broker.Start(n.ctx, n.proto.Handler()); err != nil {
		return fmt.Errorf("node: start the fan-out broker: %w", err)
	}
	if err := n.resume.StartSaving(); err != nil {
		return fmt.Errorf("node: listen for resumable sessions taken over: %w", err)
	}
	return nil
}

// Shutdown stops a started node (Start) within ctx, in this order: readiness answers
// shutting_down; every transport stops accepting (Drain); the backend
// calls in flight for connections and revalidations are cancelled
// (session.Protocol.Stop); the hub closes every connection with 1012
// (service restart, decisions.md D-5) after what is queued to it, gives
// the peers hub.Config.CloseTimeout to close their side and stops the
// workers; the resumable sessions it parked are saved (Config.Sessions);
// every transport's event loop stops; the broker closes; the
// base context is cancelled. Only the first call does anything; its
// error, the first of the hub's and the transports' (ctx's end), is
// returned to that call alone.
func (n *Node) Shutdown(ctx context.Context) error {
	var err error
	n.stopOnce.Do(func() {
		n.draining.Store(true)
		ts := n.transportList()
		for _, t := range ts {
			t.Drain()
		}
		n.proto.Stop()
		err = n.hub.Shutdown(ctx)
		n.resume.StopSaving(ctx) // the sessions the shutdown parked
		for _, t := range ts {
			if e := t.Shutdown(ctx); err == nil {
				err = e
			}
		}
		_ = n.broker.Close()
		n.cancel()
	})
	return err
}

// Context returns the node's base context: every backend call made for the
// node derives from it, and Shutdown cancels it last.
func (n *Node) Context() context.Context { return n.ctx }

// Protocol returns the session protocol the transports serve.
func (n *Node) Protocol() *session.Protocol { return n.proto }

// Hub returns the worker pool.
func (n *Node) Hub() *hub.Hub { return n.hub }

// Sessions returns the node's resumable sessions: with Config.Sessions,
// their saves to the Store and their replays from the history, which
// another transport's durable sessions use too (resume.Registry.AddSource,
// Fetch, ReadStored).
func (n *Node) Sessions() *resume.Registry { return n.resume }

// Broker returns the fan-out broker (session.Config.Broker, local.Broker
// for a single node).
func (n *Node) Broker() broker.Broker { return n.broker }

// Draining reports whether Drain or Shutdown has begun: the transports
// accept no new connection.
func (n *Node) Draining() bool { return n.draining.Load() || n.lameDuck.Load() }

// transportList returns the transports, in the order added.
func (n *Node) transportList() []Transport {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]Transport(nil), n.transports...)
}
