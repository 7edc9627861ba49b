package reactor

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/certs/certstest"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// closerHandler is testHandler that is a Closer: it records, per
// connection, Process calls in progress, whether Process ran after
// Closed, and how often Closed ran.
type closerHandler struct {
	testHandler
	mu     sync.Mutex
	state  map[*testConn]*closerState
	closed atomic.Int64
}

type closerState struct {
	inProcess atomic.Bool
	closed    atomic.Int32
	late      atomic.Bool // Process after Closed, or Closed during Process
}

func (h *closerHandler) Open(sock Socket) *testConn {
	st := h.testHandler.Open(sock)
	h.mu.Lock()
	h.state[st] = &closerState{}
	h.mu.Unlock()
	return st
}

func (h *closerHandler) of(st *testConn) *closerState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state[st]
}

func (h *closerHandler) Process(st *testConn, buf []byte) (int, bool) {
	s := h.of(st)
	if s.closed.Load() != 0 {
		s.late.Store(true)
	}
	s.inProcess.Store(true)
	time.Sleep(200 * time.Microsecond) // widen the window a close could fall in
	used, complete := h.testHandler.Process(st, buf)
	s.inProcess.Store(false)
	return used, complete
}

func (h *closerHandler) Closed(st *testConn) {
	s := h.of(st)
	if s.inProcess.Load() {
		s.late.Store(true)
	}
	s.closed.Add(1)
	h.closed.Add(1)
}

// TestCloserRunsOnceAfterTheLastProcess: the rule of reactor.Closer (the
// MQTT listener publishes wills there). 200 clients each send frames and
// hang up at once, over real sockets, plain and TLS (where the frames that
// come with the handshake are read on the handshake's goroutine): Closed
// runs exactly once per connection, never while its Process runs, and
// Process never runs after it.
func TestCloserRunsOnceAfterTheLastProcess(t *testing.T) {
	plainAndTLS(t, "closer", func(t *testing.T, secure bool, ca *certstest.CA, cert tls.Certificate) {
		ch, addr := serveCloser(t, secure, cert, func(ch *closerHandler) Handler[*testConn] { return ch })
		const clients = 200
		frames := testFrames(testFrame(1, 10), testFrame(1, 10), testFrame(1, 10))
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				raw, err := net.Dial("tcp", addr())
				if err != nil {
					t.Error(err)
					return
				}
				var c net.Conn = raw
				if secure {
					c = tls.Client(raw, ca.ClientConfig())
				}
				_, _ = c.Write(frames)              // over TLS: the handshake, then the frames
				_ = raw.(*net.TCPConn).SetLinger(0) // a reset, while its frames may still be processed
				_ = raw.Close()
			})
		}
		wg.Wait()
		deadline := time.Now().Add(5 * time.Second)
		for ch.closed.Load() < clients && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if n := ch.closed.Load(); n != clients {
			t.Fatalf("Closed ran %d times for %d connections", n, clients)
		}
		ch.mu.Lock()
		defer ch.mu.Unlock()
		for _, s := range ch.state {
			if s.closed.Load() != 1 || s.late.Load() {
				t.Fatalf("a connection's Closed ran %d times, overlapping or followed by Process: %v", s.closed.Load(), s.late.Load())
			}
		}
	})
}

// closeInOpenHandler is closerHandler whose Open closes the socket from
// another goroutine, as the hub may once hub.Hub.Register has returned,
// and returns only once that Close has.
type closeInOpenHandler struct{ *closerHandler }

func (h closeInOpenHandler) Open(sock Socket) *testConn {
	st := h.closerHandler.Open(sock)
	done := make(chan struct{})
	go func() {
		_ = sock.Close()
		close(done)
	}()
	<-done
	return st
}

// TestClosedInOpen: a connection closed while Handler.Open runs (before
// netpoll has the state as its context) is still reported closed once,
// plain and TLS: netpoll holds the close path until OnPrepare returns, so
// the Loop's OnClose gets the state (hub.Hub.Closed, Closer.Closed).
func TestClosedInOpen(t *testing.T) {
	plainAndTLS(t, "closed-in-open", func(t *testing.T, secure bool, ca *certstest.CA, cert tls.Certificate) {
		ch, addr := serveCloser(t, secure, cert, func(ch *closerHandler) Handler[*testConn] { return closeInOpenHandler{ch} })
		const clients = 20
		for range clients {
			c, err := net.Dial("tcp", addr())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
		}
		deadline := time.Now().Add(5 * time.Second)
		for ch.closed.Load() < clients && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond) // a second Closed, if any
		if n := ch.closed.Load(); n != clients {
			t.Fatalf("Closed ran %d times for %d connections closed in Open", n, clients)
		}
		ch.mu.Lock()
		defer ch.mu.Unlock()
		for st, s := range ch.state {
			if s.closed.Load() != 1 || !st.c.Closed() {
				t.Fatalf("a connection closed in Open: Closed ran %d times, hub record closed: %v", s.closed.Load(), st.c.Closed())
			}
		}
	})
}

// serveCloser starts a hub and a Loop, plain or TLS (with cert), whose
// Handler is handler(ch) for a new closerHandler ch; both stop when the test
// ends. addr returns the address to dial.
func serveCloser(t *testing.T, secure bool, cert tls.Certificate, handler func(*closerHandler) Handler[*testConn]) (ch *closerHandler, addr func() string) {
	t.Helper()
	h := hub.New(hub.Config{Workers: 2})
	h.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	ch = &closerHandler{testHandler: testHandler{h}, state: map[*testConn]*closerState{}}
	l, err := New[*testConn](handler(ch), Config{Hub: h, MaxInputBacklog: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	addr = func() string { return l.Addr().String() }
	if secure {
		err = l.ListenTLS("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
		addr = func() string { return l.TLSAddr().String() }
	} else {
		err = l.Listen("127.0.0.1:0")
	}
	if err != nil {
		t.Fatal(err)
	}
	l.Serve()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
	})
	return ch, addr
}

// plainAndTLS runs run as two subtests, on a plain listener and on a TLS
// one with a certificate of a new test CA named name.
func plainAndTLS(t *testing.T, name string, run func(t *testing.T, secure bool, ca *certstest.CA, cert tls.Certificate)) {
	ca := certstest.New(t, name)
	certFile, keyFile := ca.Server("kraken", time.Hour)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("plain", func(t *testing.T) { run(t, false, ca, cert) })
	t.Run("tls", func(t *testing.T) { run(t, true, ca, cert) })
}
