package reactor

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/cloudwego/netpoll"

	"github.com/NoLagApp/kraken/pkg/hub"
)

// plainPool holds the buffers records are decrypted into before their
// plaintext is appended to a Stream's partial buffer.
var plainPool = sync.Pool{New: func() any { b := make([]byte, 1<<14); return &b }}

// readTLS is read for a connection on a TLS Loop (tls.go): before the
// handshake is done the ciphertext goes to it (tlsSocket.feed); after, the
// records netpoll holds are decrypted here, up to readChunk bytes of them,
// and their plaintext is handled as a plain connection's input is, from
// the partial buffer.
func (l *Loop[C]) readTLS(st C, t *tlsSocket, r netpoll.Reader) {
	s, c := st.stream(), st.Record()
	t.mu.Lock()
	defer t.mu.Unlock()
	n := r.Len()
	if c == nil || s.closing || c.Closing() || t.eof || t.state.Load() == tlsFailed {
		_ = r.Skip(n)
		_ = r.Release()
		return
	}
	if !t.established() {
		if l.cfg.ProxyProtocolTLS {
			if !l.proxyHeader(st, s, c, r) { // proxy.go: the header comes before the handshake
				return
			}
			if len(s.part()) > 0 { // the handshake's first bytes, read with the header
				t.in = append(t.in, s.part()...)
				s.setPart(nil)
			}
		}
		if !t.feed(r) {
			if t.state.Load() == tlsWaiting { // else its handshake goroutine fails, counts and marks it
				l.tls.failed.Add(1)
				t.state.Store(tlsFailed)
			}
			t.in = nil
			_ = r.Skip(r.Len())
			_ = t.Close() // a handshake goroutine's read then ends (io.EOF)
		}
		_ = r.Release()
		return
	}
	if l.overflowed(st, s, c, r) {
		return
	}
	n = min(n, readChunk)
	l.received.Add(uint64(n))
	t.src, t.srcMax = r, n
	l.decryptAndProcess(st, t, s, c)
	if t.eof {
		_ = r.Skip(t.srcMax)
	}
	t.src, t.srcMax = nil, 0
	_ = r.Release()
	l.settle(s, c, r.Len())
}

// afterHandshake reads what came with the handshake, once it succeeded,
// on the handshake goroutine with t.mu held (tlsSocket.after): the event
// loop calls OnRequest only for bytes that arrive later.
func (l *Loop[C]) afterHandshake(st C, t *tlsSocket) {
	s, c := st.stream(), st.Record()
	if c == nil || s.closing || c.Closing() {
		return
	}
	l.decryptAndProcess(st, t, s, c)
	l.settle(s, c, 0)
}

// decryptAndProcess decrypts every complete record the source holds onto
// s's partial buffer and hands it to the Handler. A record that fails
// (a bad MAC, an alert, a renegotiation attempt, which crypto/tls refuses)
// ends the connection: crypto/tls has told the client why with an alert,
// and nothing can be written on the connection any more.
func (l *Loop[C]) decryptAndProcess(st C, t *tlsSocket, s *Stream, c *hub.Conn) {
	p := plainPool.Get().(*[]byte)
	got := false
	var err error
	for {
		var k int
		k, err = t.conn.Read(*p)
		if k > 0 {
			s.setPart(append(s.part(), (*p)[:k]...))
			got = true
		}
		if err != nil {
			break
		}
	}
	plainPool.Put(p)
	if got {
		l.process(st, s, c, s.part(), true, time.Now().UnixNano())
	}
	var wb wouldBlock
	switch {
	case errors.As(err, &wb):
	case errors.Is(err, io.EOF):
		// The client's close_notify: it sends nothing more, and may still
		// read (RFC 8446 §6.1); its TCP close ends the connection.
		t.eof = true
	default:
		s.closing = true
		s.setPart(nil)
		t.closeSoon()
	}
}
