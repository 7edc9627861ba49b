package listener

import (
	"context"
	"errors"
	"net"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
)

// Config configures a Listener. Zero fields take the documented defaults.
type Config struct {
	// Addr is the TCP listen address, e.g. ":1883" or "127.0.0.1:0".
	Addr string
	// Protocol is the node's session protocol, shared with the WebSocket
	// listener (server.Server.Protocol): the same hub, grants, limits and
	// retained store. Required; its owner starts and shuts it down.
	Protocol *session.Protocol
	// MaxPacketSize bounds an inbound packet in bytes; a larger one closes
	// the connection (MQTT 3.1.1 has no code for it). 0 means
	// session.PayloadCeiling plus 64 KiB for the topic and header.
	MaxPacketSize int
	// MaxInputBacklog bounds a connection's received but unprocessed bytes
	// (disconnect.InputOverflow above it). 0 means 4 × MaxPacketSize.
	MaxInputBacklog int
	// MaxInflight bounds a connection's outbound QoS 1 PUBLISHes awaiting
	// their PUBACK; one more closes the connection as a slow consumer. 0
	// means 64.
	MaxInflight int
	// OnOpen is told of every connection accepted, before anything is read
	// from it, for the owner's accounting (server.Server.OpenedMQTT: the
	// session protocol's OnClose tells of its end); nil for none.
	OnOpen func(*hub.Conn)
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
		c.MaxInflight = 64
	}
	c.MaxInflight = min(c.MaxInflight, 1<<15)
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Listener serves MQTT 3.1.1 clients on one address, on its own netpoll
// event loop (pkg/reactor; netpoll's pollers are shared by the process), as
// a second transport of the session protocol.
type Listener struct {
	cfg   Config
	log   *zap.Logger
	proto *session.Protocol
	hub   *hub.Hub
	loop  *reactor.Loop[*conn] // accepts and reads the connections (read.go)
}

// New validates cfg and builds a Listener. It does not listen yet.
func New(cfg Config) (*Listener, error) {
	if cfg.Protocol == nil {
		return nil, errors.New("mqtt: a session Protocol is required")
	}
	cfg.setDefaults()
	l := &Listener{cfg: cfg, log: cfg.Logger.Named("mqtt"), proto: cfg.Protocol, hub: cfg.Protocol.Hub()}
	var err error
	l.loop, err = reactor.New[*conn](handler{l}, reactor.Config{Hub: l.hub, MaxInputBacklog: cfg.MaxInputBacklog,
		OnHangup: l.proto.Hangup, Logger: l.log})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// Start listens on cfg.Addr and serves in the background.
func (l *Listener) Start() error {
	if err := l.loop.Listen(l.cfg.Addr); err != nil {
		return err
	}
	l.loop.Serve()
	return nil
}

// Addr returns the listening address (useful with port 0).
func (l *Listener) Addr() net.Addr { return l.loop.Addr() }

// Drain makes the listener close every connection it accepts from now on;
// call it before the session protocol's Shutdown, which closes the
// connections already served (they are on its hub).
func (l *Listener) Drain() { l.loop.Drain() }

// Shutdown drains, stops accepting and closes the event loop within ctx;
// call it after the session protocol's Shutdown.
func (l *Listener) Shutdown(ctx context.Context) error { return l.loop.Shutdown(ctx) }
