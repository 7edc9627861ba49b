package server

import (
	"context"
	"crypto/tls"
	"net"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// Config configures a Server: the WebSocket and HTTP settings only; the
// session, the hub and the backends are the node's (node.Config). Zero
// fields take the documented defaults.
type Config struct {
	// Addr is the TCP listen address, e.g. ":8080" or "127.0.0.1:0".
	Addr string
	// TLSAddr, when not "", is the listen address of the TLS listener
	// (WSS_PORT: wss:// on /ws, and every path of the plain one), served
	// with TLS; both are required for it.
	TLSAddr string
	TLS     *tls.Config
	// MaxFrameSize bounds an inbound frame and a reassembled message, in
	// bytes; larger ones close the connection with 1009. 0 means 1 MiB.
	MaxFrameSize int
	// MaxHeaderBytes bounds the HTTP upgrade request; 0 means 8 KiB.
	MaxHeaderBytes int
	// MaxInputBacklog bounds a connection's received but unprocessed bytes;
	// a connection over it (a client sending faster than its frames can be
	// handled) is closed with 1008 input_overflow. 0 means 4 × MaxFrameSize,
	// at least 4 MiB.
	MaxInputBacklog int
	// InternalSecret is the bearer secret of POST /internal/publish
	// (INTERNAL_SECRET, wire-reference.md §5.4); while it is "" or
	// DefaultInternalSecret the endpoint answers 404 (OQ-26).
	InternalSecret string
	// MaxInternalBody bounds the body of POST /internal/publish in bytes
	// (413 above it); 0 means MaxFrameSize.
	MaxInternalBody int
	// Carried maps a path to the protocol served in the binary messages
	// of the WebSocket connections upgraded on it (Carried): MQTTPath to
	// the MQTT listener's Listener.WebSocket when MQTT is enabled. A path
	// not in it, /ws aside, answers 404 (MQTTPath saying MQTT is off).
	Carried map[string]Carried
	// AllowedOrigins is the browser origins an upgrade (/ws and the Carried
	// paths) may come from (ALLOWED_ORIGINS, edge.Origins): one whose Origin
	// header matches none is refused with 403 and the reason. Empty allows
	// every origin; a request without an Origin header is not checked.
	AllowedOrigins edge.Origins
	// ProxyProtocol says every connection begins with a PROXY protocol
	// header, version 1 or 2 (PROXY_PROTOCOL has "ws"): the client's
	// address is read from it (reactor.Config.ProxyProtocol), the edge
	// limits of the address are applied to that one, and a connection
	// without a valid header is closed without an answer.
	// ProxyProtocolTLS says the same of the TLS listener (PROXY_PROTOCOL
	// has "wss"; the header comes before the TLS handshake).
	ProxyProtocol, ProxyProtocolTLS bool
	// TrustedProxies is the networks whose Forwarded and X-Forwarded-For
	// headers are believed (TRUSTED_PROXIES, edge.TrustedProxies.ClientAddr):
	// a request from one of them (its address after the PROXY protocol)
	// takes its client's address from them, and the edge limits of that
	// address apply (429 with the reason). Empty trusts nobody.
	TrustedProxies edge.TrustedProxies
	// Logger receives the server's logs; nil means none.
	Logger *zap.Logger
}

// MQTTPath is the path of MQTT over WebSocket (docs/mqtt.md), served when
// Config.Carried has it.
const MQTTPath = "/mqtt"

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
}

// Server is the WebSocket and HTTP transport of a node: its listener and
// event loop, serving the node's session protocol on the node's hub.
type Server struct {
	cfg   Config
	log   *zap.Logger
	node  *node.Node
	proto *session.Protocol         // node.Protocol()
	sess  session.Config            // proto.Config(): the limits in force
	hub   *hub.Hub                  // node.Hub()
	loop  *reactor.Loop[*connState] // accepts and reads the connections (read.go)
	obs   instruments               // counters for /metrics (stats.go)
	// lameDuck is set by LameDuck: only /health and /ready are answered.
	lameDuck atomic.Bool
}

// New builds the Server of n's WebSocket connections (encoding 0,
// wsframe.Encoding) and registers it with n (node.Node.AddTransport), so
// that n's Shutdown drains and stops it. It does not listen yet (Start).
// The error is the event loop's (reactor.New).
func New(n *node.Node, cfg Config) (*Server, error) {
	cfg.setDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger.Named("server"), node: n, proto: n.Protocol(), hub: n.Hub()}
	s.sess = s.proto.Config()
	var err error
	s.loop, err = reactor.New[*connState](handler{s}, reactor.Config{Hub: s.hub,
		MaxInputBacklog: s.cfg.MaxInputBacklog, OnHangup: s.proto.Hangup, Logger: s.log,
		NetpollLogger: s.cfg.Logger.Named("netpoll"),
		ProxyProtocol: s.cfg.ProxyProtocol, ProxyProtocolTLS: s.cfg.ProxyProtocolTLS, Readdress: len(s.cfg.TrustedProxies) > 0})
	if err != nil {
		return nil, err
	}
	n.AddTransport(wsframe.Encoding{}.ID(), s)
	return s, nil
}

// Start listens on cfg.Addr and serves in the background; start the node
// first (node.Node.Start). The error is the listener's.
func (s *Server) Start() error {
	if err := s.loop.Listen(s.cfg.Addr); err != nil {
		return err
	}
	if s.cfg.TLSAddr != "" {
		if err := s.loop.ListenTLS(s.cfg.TLSAddr, s.cfg.TLS); err != nil {
			_ = s.loop.Shutdown(context.Background())
			return err
		}
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

// TLSHandshakes returns the TLS listener's handshakes that succeeded and
// that failed (reactor.Loop.TLSHandshakes).
func (s *Server) TLSHandshakes() (done, failed uint64) { return s.loop.TLSHandshakes() }

// TLSAddr returns the TLS listener's address, nil without one.
func (s *Server) TLSAddr() net.Addr { return s.loop.TLSAddr() }

// Node returns the node the server serves.
func (s *Server) Node() *node.Node { return s.node }

// Kind tells a WebSocket connection from a plain HTTP one, for the node's
// counts (node.Transport): node.KindWebSocket once upgraded, else
// node.KindHTTP.
func (s *Server) Kind(c *hub.Conn) node.Kind {
	if c.Phase() != hub.PhaseHandshake {
		return node.KindWebSocket
	}
	return node.KindHTTP
}

// Drain makes the server close every connection it accepts from now on
// (node.Transport); the node's Shutdown calls it.
func (s *Server) Drain() { s.loop.Drain() }

// LameDuck makes the server refuse every new request but the probes
// (node.LameDuck; the node's Drain calls it instead of Drain): /health and
// /ready are still answered, so a load balancer reads /ready's 503
// "draining"; an upgrade (/ws, /mqtt) or any other request gets 503
// Service Unavailable with Retry-After: 1 and is closed. It never blocks.
func (s *Server) LameDuck() { s.lameDuck.Store(true) }

// Shutdown stops accepting and closes the event loop within ctx
// (node.Transport); the node's Shutdown calls it once the hub has closed
// the connections.
func (s *Server) Shutdown(ctx context.Context) error { return s.loop.Shutdown(ctx) }
