package reactor

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/cloudwego/netpoll"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// Conn is a transport's state of one connection, as the Loop reads it. It
// embeds a Stream (which makes it a context.Context and the socket half of
// its hub.Transport) and is registered with the hub by Handler.Open.
type Conn interface {
	context.Context
	// Record returns the connection's hub record (session.State.Record),
	// set by Handler.Open.
	Record() *hub.Conn
	// Disconnect closes the connection for d from its reader, the
	// transport's way (session.Sink.Disconnect: a WebSocket close frame, an
	// MQTT connection closed without a packet); it calls Stream.CloseNow.
	Disconnect(d disconnect.Disconnect)

	stream() *Stream
}

// Handler is one transport over the reactor: it makes the state of each
// connection accepted and parses its input. Both methods run on netpoll's
// goroutines; Process never concurrently for one connection.
type Handler[C Conn] interface {
	// Open returns the state of a connection just accepted on sock,
	// embedding NewStream(sock), registered with the hub (hub.Hub.Register)
	// and in the phase its transport starts in (hub.PhaseHandshake for an
	// HTTP upgrade, hub.PhaseOpen when there is none). It runs in netpoll's
	// OnPrepare, before anything is read.
	Open(sock Socket) C
	// Process handles every complete frame (or request) at the start of
	// buf, stopping at the first incomplete one or once the connection is
	// closing (Stream.CloseNow), and returns the bytes used and whether at
	// least one frame was complete. It never waits for more input: the
	// Loop keeps buf[used:] and calls it again, with those bytes first,
	// once more have arrived. buf is valid only until Process returns. It
	// calls Stream.EndMessage for each message that ends, SetNeed for the
	// incomplete frame it stops at when its length is known, and queues its
	// replies with Stream.Queue.
	Process(st C, buf []byte) (used int, complete bool)
}

// Closer is a Handler that is told when a connection it opened has
// closed: Closed runs from netpoll's OnClose (the event loop's close
// handler), after hub.Hub.Closed, once per connection; Process never runs
// for st again and is not running (netpoll runs OnClose only once OnRequest
// has returned). It must not block. The MQTT listener publishes a client's
// will there.
type Closer[C Conn] interface {
	Closed(st C)
}

// Config configures a Loop. Hub and MaxInputBacklog are required.
type Config struct {
	// Hub is the worker pool the connections are registered with: its
	// input flow control (hub.Hub.HoldInput) and its close (hub.Hub.Closed,
	// from the event loop's OnClose).
	Hub *hub.Hub
	// MaxInputBacklog bounds a connection's received but unprocessed bytes,
	// what netpoll holds plus the partial frame, in bytes: above it the
	// connection is closed with disconnect.InputOverflow, unless the hub is
	// behind (its socket is then paused instead) or the bytes came in at
	// once when its paused socket was resumed (up to 4 × the bound).
	MaxInputBacklog int
	// OnHangup, when not nil, is told of a connection whose peer hung up,
	// on netpoll's poller (its OnDisconnect), beside a Process that may
	// still be running for it: the moment to cancel what its reader waits
	// for (session.Protocol.Hangup). It must not block. Hub.Hub.Closed
	// follows from the event loop's OnClose as usual.
	OnHangup func(*hub.Conn)
	// ProxyProtocol says every connection of the plain listener (Listen)
	// begins with a PROXY protocol header, version 1 or 2 (PROXY_PROTOCOL;
	// the specification by HAProxy): the client's address is taken from it
	// before anything is handed to Process (proxy.go), and a connection
	// whose first bytes are not one is closed without an answer.
	// ProxyProtocolTLS says the same of the TLS listener (ListenTLS), whose
	// header comes before the TLS handshake.
	ProxyProtocol, ProxyProtocolTLS bool
	// Readdress lets a transport set a connection's client address from
	// what a trusted proxy forwards (Stream.Readdress; TRUSTED_PROXIES).
	// With it or ProxyProtocol each connection's Socket is wrapped at its
	// accept (one small allocation) so that its RemoteAddr can change.
	Readdress bool
	// Logger receives the loop's logs ("listening"); nil means none.
	Logger *zap.Logger
	// NetpollLogger receives netpoll's own log lines from Listen on, for
	// every loop of the process (netpoll has one logger); nil leaves them
	// where an earlier Listen sent them.
	NetpollLogger *zap.Logger
}

// Loop is a transport's listeners, each served by a netpoll event loop
// (netpoll's pollers are shared by the process): a plain one (Listen) and
// a TLS one (ListenTLS), either or both. It accepts connections through
// its Handler, reads them (read.go), and stops. Start it with Listen,
// ListenTLS and Serve; stop it with Drain and Shutdown.
type Loop[C Conn] struct {
	h        Handler[C]
	cfg      Config
	log      *zap.Logger
	plain    *endpoint // Listen's, nil until it succeeds
	secure   *endpoint // ListenTLS's, nil until it succeeds
	draining atomic.Bool
	serving  atomic.Bool   // Serve was called
	received atomic.Uint64 // bytes read and handed to Process
	tls      tlsStats      // handshakes of a TLS Loop (tls.go)
	stopOnce sync.Once

	proxyErrors     atomic.Uint64 // connections closed for a malformed PROXY protocol header (proxy.go)
	proxyLogAt      atomic.Int64  // when one was last logged, in Unix nanoseconds
	proxyLogSkipped atomic.Uint64 // those not logged since
}

// endpoint is one listener and its event loop.
type endpoint struct {
	ln     net.Listener
	loop   netpoll.EventLoop
	tls    *tls.Config // nil for plain connections
	proxy  bool        // its connections begin with a PROXY protocol header
	served chan error  // Serve's goroutine's result
}

// New returns a Loop of h's connections; it does not listen yet. The error
// says which required field of cfg is missing.
func New[C Conn](h Handler[C], cfg Config) (*Loop[C], error) {
	switch {
	case cfg.Hub == nil:
		return nil, errors.New("reactor: a Hub is required")
	case cfg.MaxInputBacklog <= 0:
		return nil, errors.New("reactor: MaxInputBacklog must be positive")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Loop[C]{h: h, cfg: cfg, log: cfg.Logger}, nil
}

// Listen binds the TCP address addr (":8080", "127.0.0.1:0") for plain
// connections and prepares its event loop; connections are accepted once
// Serve is called.
func (l *Loop[C]) Listen(addr string) (err error) {
	l.plain, err = l.listen(addr, nil)
	return err
}

// ListenTLS binds addr for TLS connections (tls.go): every connection's
// bytes pass through a TLS record layer between the socket and the
// Handler, which reads and writes plaintext as on the plain listener; no
// goroutine or timer is kept per idle connection. cfg's certificates,
// versions and client authentication are the caller's (pkg/certs builds
// it); it must not be changed afterwards.
func (l *Loop[C]) ListenTLS(addr string, cfg *tls.Config) (err error) {
	if cfg == nil {
		return errors.New("reactor: ListenTLS needs a tls.Config")
	}
	l.secure, err = l.listen(addr, cfg)
	return err
}

func (l *Loop[C]) listen(addr string, cfg *tls.Config) (*endpoint, error) {
	if l.cfg.NetpollLogger != nil {
		netpollLogger.log.Store(l.cfg.NetpollLogger)
	}
	ln, err := netpoll.CreateListener("tcp", addr)
	if err != nil {
		return nil, err
	}
	ep := &endpoint{tls: cfg, proxy: l.cfg.ProxyProtocol, served: make(chan error, 1)}
	if cfg != nil {
		ep.proxy = l.cfg.ProxyProtocolTLS
	}
	prepare := func(nc netpoll.Connection) context.Context { return l.onPrepare(nc, ep) }
	opts := []netpoll.Option{netpoll.WithOnPrepare(prepare), netpoll.WithOnClose(l.onClose)}
	if l.cfg.OnHangup != nil {
		opts = append(opts, netpoll.WithOnDisconnect(l.onDisconnect))
	}
	loop, err := netpoll.NewEventLoop(l.onRequest, opts...)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	ep.ln, ep.loop = ln, loop
	return ep, nil
}

// endpoints returns the listeners that Listen and ListenTLS bound.
func (l *Loop[C]) endpoints() []*endpoint {
	var eps []*endpoint
	for _, ep := range [2]*endpoint{l.plain, l.secure} {
		if ep != nil {
			eps = append(eps, ep)
		}
	}
	return eps
}

// Serve accepts and serves connections in the background on every
// listener bound, after Listen or ListenTLS.
func (l *Loop[C]) Serve() {
	l.serving.Store(true)
	for _, ep := range l.endpoints() {
		go func() { ep.served <- ep.loop.Serve(ep.ln) }()
		l.log.Info("listening", zap.String("addr", ep.ln.Addr().String()), zap.Bool("tls", ep.tls != nil))
	}
}

// Addr returns the plain listener's address (useful with port 0), after
// Listen; nil without one.
func (l *Loop[C]) Addr() net.Addr { return l.plain.addr() }

// TLSAddr returns the TLS listener's address, after ListenTLS; nil
// without one.
func (l *Loop[C]) TLSAddr() net.Addr { return l.secure.addr() }

func (ep *endpoint) addr() net.Addr {
	if ep == nil {
		return nil
	}
	return ep.ln.Addr()
}

// Drain makes the loop close every connection it accepts from now on; the
// connections already served are closed by the hub's shutdown.
func (l *Loop[C]) Drain() { l.draining.Store(true) }

// Draining reports whether Drain (or Shutdown) was called.
func (l *Loop[C]) Draining() bool { return l.draining.Load() }

// ReceivedBytes returns the bytes read from the loop's sockets and handed
// to its Handler (requests and frames, headers included).
func (l *Loop[C]) ReceivedBytes() uint64 { return l.received.Load() }

// TLSHandshakes returns the TLS handshakes of the loop's connections that
// succeeded and that failed (a client that is not TLS, a bad or stalled
// handshake, a client certificate refused); both 0 on a plain Loop.
func (l *Loop[C]) TLSHandshakes() (done, failed uint64) {
	return l.tls.done.Load(), l.tls.failed.Load()
}

// Shutdown drains, stops accepting and closes the event loops within ctx,
// and waits for Serve's goroutines (until ctx is done). Call it after the
// hub's connections are closed (the session protocol's Shutdown). Only its
// first call acts; it does nothing when no Listen succeeded, and only
// closes the listeners when Serve was never called. The error is an event
// loop's, or nil.
func (l *Loop[C]) Shutdown(ctx context.Context) error {
	var err error
	l.stopOnce.Do(func() {
		l.draining.Store(true)
		for _, ep := range l.endpoints() {
			if !l.serving.Load() {
				_ = ep.ln.Close()
				continue
			}
			if e := ep.loop.Shutdown(ctx); e != nil && !errors.Is(e, netpoll.ErrConnClosed) && err == nil {
				err = e
			}
			select {
			case <-ep.served:
			case <-ctx.Done():
			}
		}
	})
	return err
}

// onPrepare is netpoll's OnPrepare: the Handler opens the connection (its
// state is the context OnRequest and OnClose get back), and the hub is told
// of its close from the event loop's close handler (onClose), before the
// descriptor is released. A connection accepted while draining is closed at
// once and gets no state.
func (l *Loop[C]) onPrepare(nc netpoll.Connection, ep *endpoint) context.Context {
	sock, ok := nc.(Socket)
	if !ok || l.draining.Load() {
		_ = nc.Close()
		return nil // netpoll uses context.Background(): onRequest discards
	}
	if ep.proxy || l.cfg.Readdress {
		sock = &addrSocket{Socket: sock, header: ep.proxy}
	}
	var t *tlsSocket
	if ep.tls != nil { // under the PROXY header, which comes first on the wire
		t = newTLSSocket(sock, ep.tls, &l.tls)
		sock = t
	}
	st := l.h.Open(sock)
	if t == nil {
		// The common case: no close callback of its own (onClose gets st
		// back as the connection's context), where a closure of l and st
		// took 32 B a connection.
		return st
	}
	t.after = func() { l.afterHandshake(st, t) }
	// netpoll runs a connection's close callbacks before the event loop's
	// OnClose, so the handshake's goroutine has let go before onClose's
	// l.closed(st).
	_ = nc.AddCloseCallback(func(netpoll.Connection) error {
		t.onClose() // waits for a TLS handshake's goroutine to let go
		return nil
	})
	return st
}

// onClose is netpoll's OnClose, set once per event loop: the close of a
// connection it accepted, with the state onPrepare returned as ctx. A
// connection closed while onPrepare ran still gets it, once onPrepare has
// returned (netpoll holds the close until then); one that got no state (nil
// from onPrepare when draining: netpoll's context.Background()) is skipped.
func (l *Loop[C]) onClose(ctx context.Context, _ netpoll.Connection) {
	if st, ok := ctx.(C); ok {
		l.closed(st)
	}
}

// closed runs from netpoll's OnClose (onClose) for the connection whose
// state is st, after its own close callbacks (a TLS connection's t.onClose)
// and before its descriptor is released, once its Process never runs
// again: the hub lets go of its record, then the transport's Closer, if it
// has one, runs.
func (l *Loop[C]) closed(st C) {
	l.cfg.Hub.Closed(st.Record())
	if closer, ok := l.h.(Closer[C]); ok {
		closer.Closed(st)
	}
}

// onDisconnect is netpoll's OnDisconnect: the peer hung up (Config.OnHangup).
func (l *Loop[C]) onDisconnect(ctx context.Context, _ netpoll.Connection) {
	if st, ok := ctx.(C); ok {
		if c := st.Record(); c != nil {
			l.cfg.OnHangup(c)
		}
	}
}
