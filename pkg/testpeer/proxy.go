package testpeer

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy on a loopback port in front of a server, to cut a
// client's connections for real: Cut closes both sockets of every proxied
// connection, so the client reads EOF and the server a FIN, as when a
// network goes. While held (Hold), new connections are accepted but not
// forwarded until Release, so a reconnecting client waits in its
// handshake. Everything stops when the test ends.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	held   bool
	gate   chan struct{} // closed by Release
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewProxy starts a proxy to upstream (host:port).
func NewProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}, gate: make(chan struct{})}
	close(p.gate)
	p.wg.Add(1)
	go p.accept() // owned by wg: close (a test cleanup) waits for the proxy's goroutines
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Hold makes new connections wait, accepted but not forwarded.
func (p *Proxy) Hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		p.held, p.gate = true, make(chan struct{})
	}
}

// Release forwards the held connections and the new ones.
func (p *Proxy) Release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		close(p.gate)
	}
}

// Cut closes every connection proxied or held so far.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}

// upstreamConn marks a connection to the server in Proxy.conns.
type upstreamConn struct{ net.Conn }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			_ = c.Close()
			return
		}
		p.wg.Add(1)
		go p.serve(c) // owned by wg
	}
}

// track adds c to the open connections; false after close.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// untrack removes c; false when it was cut (or the proxy closed) already.
func (p *Proxy) untrack(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.conns[c]
	delete(p.conns, c)
	return ok
}

func (p *Proxy) open(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.conns[c]
	return ok
}

func (p *Proxy) serve(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		if p.untrack(c) {
			_ = c.Close()
		}
	}()
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	// Wait for Release, or for the connection to be cut or closed meanwhile
	// (a read returns then; a held client sends nothing we must keep but
	// its handshake, which stays in the socket until it is read below).
	<-gate
	if !p.open(c) {
		return
	}
	nu, err := net.Dial("tcp", p.upstream)
	if err != nil {
		return
	}
	up := &upstreamConn{nu}
	if !p.track(up) || !p.open(c) {
		if p.untrack(up) {
			_ = up.Close()
		}
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// One side ended: end both, as a dropped network would.
		if p.untrack(dst) {
			_ = dst.Close()
		}
		if p.untrack(src) {
			_ = src.Close()
		}
		done <- struct{}{}
	}
	// Both end when either side closes; serve waits for both below.
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// close stops the proxy and closes every connection, waiting for its
// goroutines.
func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	if p.held {
		p.held = false
		close(p.gate)
	}
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}
