package listener

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/cloudwego/netpoll"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
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
// event loop (netpoll's pollers are shared by the process), as a second
// transport of the session protocol.
type Listener struct {
	cfg      Config
	log      *zap.Logger
	proto    *session.Protocol
	hub      *hub.Hub
	loop     netpoll.EventLoop
	ln       net.Listener
	draining atomic.Bool
	served   chan error
	stopOnce sync.Once
}

// New validates cfg and builds a Listener. It does not listen yet.
func New(cfg Config) (*Listener, error) {
	if cfg.Protocol == nil {
		return nil, errors.New("mqtt: a session Protocol is required")
	}
	cfg.setDefaults()
	return &Listener{cfg: cfg, log: cfg.Logger.Named("mqtt"), proto: cfg.Protocol, hub: cfg.Protocol.Hub(),
		served: make(chan error, 1)}, nil
}

// Start listens on cfg.Addr and serves in the background.
func (l *Listener) Start() error {
	ln, err := netpoll.CreateListener("tcp", l.cfg.Addr)
	if err != nil {
		return err
	}
	loop, err := netpoll.NewEventLoop(l.onRequest, netpoll.WithOnPrepare(l.onPrepare),
		netpoll.WithOnDisconnect(l.onDisconnect))
	if err != nil {
		_ = ln.Close()
		return err
	}
	l.ln, l.loop = ln, loop
	// Ends when Serve does, once Shutdown has closed the loop; Shutdown
	// waits for it within its ctx (served has room for its result, so it
	// never blocks).
	go func() { l.served <- loop.Serve(ln) }()
	l.log.Info("listening", zap.String("addr", ln.Addr().String()))
	return nil
}

// Addr returns the listening address (useful with port 0).
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Drain makes the listener close every connection it accepts from now on;
// call it before the session protocol's Shutdown, which closes the
// connections already served (they are on its hub).
func (l *Listener) Drain() { l.draining.Store(true) }

// Shutdown drains, stops accepting and closes the event loop within ctx;
// call it after the session protocol's Shutdown.
func (l *Listener) Shutdown(ctx context.Context) error {
	var err error
	l.stopOnce.Do(func() {
		l.draining.Store(true)
		if l.loop == nil {
			return
		}
		if e := l.loop.Shutdown(ctx); e != nil && !errors.Is(e, netpoll.ErrConnClosed) {
			err = e
		}
		select {
		case <-l.served:
		case <-ctx.Done():
		}
	})
	return err
}

// onPrepare registers a new connection with the hub, already open: MQTT
// has no handshake, so the hub's auth deadline is what closes a
// connection that never sends a CONNECT.
func (l *Listener) onPrepare(nc netpoll.Connection) context.Context {
	st := &conn{}
	sock, ok := nc.(socket)
	if !ok || l.draining.Load() {
		_ = nc.Close()
		return st
	}
	st.nc = sock
	st.NotResumable() // clean sessions only (doc.go)
	st.Conn = l.hub.Register(st)
	st.Conn.SetPhase(hub.PhaseOpen)
	c := st.Conn
	if l.cfg.OnOpen != nil {
		l.cfg.OnOpen(c)
	}
	_ = nc.AddCloseCallback(func(netpoll.Connection) error {
		l.hub.Closed(c)
		return nil
	})
	return st
}

// onDisconnect runs on netpoll's poller when the peer hangs up, beside an
// OnRequest that may still be running (the close callback waits for it to
// return): the backend call the connection's reader has in flight, the
// auth of a CONNECT, is cancelled now (session.Protocol.Hangup).
func (l *Listener) onDisconnect(ctx context.Context, _ netpoll.Connection) {
	if st, ok := ctx.(*conn); ok && st.Conn != nil {
		l.proto.Hangup(st.Conn)
	}
}
