package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// Config configures a Server. Zero fields take the documented defaults.
type Config struct {
	// Addr is the TCP listen address, e.g. ":8080" or "127.0.0.1:0".
	Addr string
	// Auth validates tokens; required. Wrap it in auth.NewCache for the 30 s
	// token cache (wire-reference.md §4.8).
	Auth auth.Authenticator
	// Hub configures the worker pool. Its Revalidate and OnClose hooks are
	// set by the session protocol.
	Hub hub.Config
	// MaxFrameSize bounds an inbound frame and a reassembled message, in
	// bytes; larger ones close the connection with 1009. 0 means 1 MiB.
	MaxFrameSize int
	// MaxMessageSize is the default bound on a publish's data in bytes
	// (42930 above it); a token may lower it. Capped at 921600 (OQ-7).
	MaxMessageSize int
	// Store records accepted publishes and acks (wire-reference.md §6.4–§6.5); nil
	// records nothing.
	Store store.Store
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
	// answer nothing a client waits for (OQ-67, amended); 0 means 10. Errors
	// that answer a request are never dropped.
	ErrorFrameLimit int
	// ErrorFloodLimit closes, with 1008 too_many_errors, a connection that
	// provokes more error frames than this in one second, answered or not;
	// 0 means 1000.
	ErrorFloodLimit int
	// MaxAuthFailures closes a connection with 4004 too_many_auth_failures
	// after this many failed auth attempts, refused reauth tokens included
	// (OQ-65, amended); 0 means 5.
	MaxAuthFailures int
	// MaxHeaderBytes bounds the HTTP upgrade request; 0 means 8 KiB.
	MaxHeaderBytes int
	// MaxInputBacklog bounds a connection's received but unprocessed bytes;
	// a connection over it (a client sending faster than its frames can be
	// handled) is closed with 1008 input_overflow. 0 means 4 × MaxFrameSize,
	// at least 4 MiB.
	MaxInputBacklog int
	// Control is the control plane's batcher (wire-reference.md §5.2): usage and
	// subscription reports, and the blocked projects whose publishes are
	// refused with 42920. nil reports nothing and blocks nothing
	// (CONTROL_BACKEND=noop). The caller starts and closes it.
	Control *control.Batcher
	// Webhooks sends the customer webhooks of the grants' apps (§5.3); nil
	// sends none. The caller closes it.
	Webhooks *webhook.Dispatcher
	// Resume makes connections resumable (RESUME_SESSIONS, issue 16).
	Resume session.ResumeConfig
	// InternalSecret is the bearer secret of POST /internal/publish
	// (INTERNAL_SECRET, wire-reference.md §5.4); while it is "" or
	// DefaultInternalSecret the endpoint answers 404 (OQ-26).
	InternalSecret string
	// MaxInternalBody bounds the body of POST /internal/publish in bytes
	// (413 above it); 0 means MaxFrameSize.
	MaxInternalBody int
	// Logger receives the server's logs; nil means none.
	Logger *zap.Logger
	// Context is the node's base context (session.Config.Context): every
	// backend call made for a connection, and the broker's start, derive
	// from it. Shutdown cancels the calls in any case. nil means
	// context.Background().
	Context context.Context
}

// PayloadCeiling is the hard upper bound of a publish's data in bytes
// (wire-reference.md §6.11).
const PayloadCeiling = session.PayloadCeiling

func (c *Config) setDefaults() {
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = 1 << 20
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 8 << 10
	}
	if c.MaxInternalBody <= 0 {
		c.MaxInternalBody = c.MaxFrameSize
	}
	if c.MaxInputBacklog <= 0 {
		c.MaxInputBacklog = max(4*c.MaxFrameSize, 4<<20)
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Context == nil {
		c.Context = context.Background()
	}
}

// sessionConfig is the part of c the session protocol takes.
func (c *Config) sessionConfig() session.Config {
	return session.Config{Auth: c.Auth, Hub: c.Hub, MaxMessageSize: c.MaxMessageSize, Store: c.Store,
		Broker: c.Broker, NodeID: c.NodeID, RecordMessages: c.RecordMessages, RateLimit: c.RateLimit,
		ErrorFrameLimit: c.ErrorFrameLimit, ErrorFloodLimit: c.ErrorFloodLimit, MaxAuthFailures: c.MaxAuthFailures,
		Control: c.Control, Webhooks: c.Webhooks, Logger: c.Logger, Resume: c.Resume, Context: c.Context}
}

// Server is one kraken listener: the WebSocket transport of the session
// protocol, with its worker pool.
type Server struct {
	cfg      Config
	log      *zap.Logger
	proto    *session.Protocol
	hub      *hub.Hub                  // proto.Hub()
	loop     *reactor.Loop[*connState] // accepts and reads the connections (read.go)
	obs      instruments               // counters for /metrics and readiness checks (stats.go)
	stopOnce sync.Once
}

// New validates cfg and builds a Server. It does not listen yet.
func New(cfg Config) (*Server, error) {
	if cfg.Auth == nil {
		return nil, errors.New("server: an Authenticator is required")
	}
	cfg.setDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger.Named("server")}
	scfg := cfg.sessionConfig()
	scfg.OnClose = s.closed
	proto, err := session.New(scfg)
	if err != nil {
		return nil, err
	}
	s.proto, s.hub = proto, proto.Hub()
	applied := proto.Config()
	s.cfg.MaxMessageSize, s.cfg.Broker = applied.MaxMessageSize, applied.Broker
	s.loop, err = reactor.New[*connState](handler{s}, reactor.Config{Hub: s.hub,
		MaxInputBacklog: s.cfg.MaxInputBacklog, OnHangup: s.proto.Hangup, Logger: s.log,
		NetpollLogger: s.cfg.Logger.Named("netpoll")})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Start listens on cfg.Addr, starts the session protocol (its hub and
// fan-out broker) and serves in the background.
func (s *Server) Start() error {
	if err := s.loop.Listen(s.cfg.Addr); err != nil {
		return err
	}
	if err := s.proto.Start(s.cfg.Context); err != nil {
		_ = s.loop.Shutdown(context.Background()) // closes the listener
		return fmt.Errorf("server: start the fan-out broker: %w", err)
	}
	s.loop.Serve()
	switch s.cfg.InternalSecret {
	case "":
		s.log.Info("POST /internal/publish is disabled: set INTERNAL_SECRET to enable it")
	case DefaultInternalSecret:
		s.log.Warn("INTERNAL_SECRET is the placeholder \"change_me\": POST /internal/publish stays disabled until it is set to a real secret")
	}
	return nil
}

// Addr returns the listening address (useful with port 0).
func (s *Server) Addr() net.Addr { return s.loop.Addr() }

// Hub returns the worker pool, for stats.
func (s *Server) Hub() *hub.Hub { return s.hub }

// Protocol returns the session protocol, for another transport of the same
// node (the MQTT listener, pkg/mqtt/listener) to serve its connections on
// the same hub, grants and limits.
func (s *Server) Protocol() *session.Protocol { return s.proto }

// Shutdown stops accepting, closes every connection with 1012 (service
// restart, decisions.md D-5) after what is queued to it, gives the
// peers Hub CloseTimeout to close their side, stops the workers and closes
// the event loop, within ctx.
func (s *Server) Shutdown(ctx context.Context) error {
	var err error
	s.stopOnce.Do(func() {
		s.loop.Drain()
		err = s.proto.Shutdown(ctx)
		if e := s.loop.Shutdown(ctx); err == nil {
			err = e
		}
	})
	return err
}
