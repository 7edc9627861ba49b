package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Helpers shared by the end-to-end transcript tests (e2e_*_test.go): every
// test talks to a real server over loopback sockets.

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v", timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startWith runs a server whose Authenticator is a, then applies mutate.
func startWith(t testing.TB, a auth.Authenticator, mutate func(*testConfig)) *Server {
	t.Helper()
	return start(t, func(c *testConfig) {
		c.Auth = a
		if mutate != nil {
			mutate(c)
		}
	})
}

// demoTokensWith returns the demo tokens (alice and bob) with mod applied to
// each grant.
func demoTokensWith(mod func(g *auth.Grant)) tokens {
	ts := demoTokens()
	for _, g := range ts {
		mod(g)
	}
	return ts
}

// lockedTokens is an Authenticator whose token map a test changes while the
// server runs (revalidation tests).
type lockedTokens struct {
	mu sync.Mutex
	m  map[string]*auth.Grant
	// unavailable makes Revalidate answer auth.ErrUnavailable.
	unavailable bool
	revalidated int
}

func newLockedTokens(m map[string]*auth.Grant) *lockedTokens { return &lockedTokens{m: m} }

func (l *lockedTokens) Validate(_ context.Context, token string) (*auth.Grant, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g, ok := l.m[token]; ok {
		return g, nil
	}
	return nil, auth.ErrDenied
}

func (l *lockedTokens) Revalidate(_ context.Context, actor string) (*auth.Grant, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.revalidated++
	if l.unavailable {
		return nil, auth.ErrUnavailable
	}
	for _, g := range l.m {
		if g.ActorTokenID == actor {
			return g, nil
		}
	}
	return nil, auth.ErrDenied
}

func (l *lockedTokens) set(token string, g *auth.Grant) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if g == nil {
		delete(l.m, token)
		return
	}
	l.m[token] = g
}

func (l *lockedTokens) revalidations() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.revalidated
}

// overTLS, while set (TestHostileSuitesOverTLS), makes start give the
// server a TLS listener with its server side and dialPeer, dialTCP and
// authed dial that listener with its client side.
var overTLS *struct{ server, client *tls.Config }

// tlsDials counts the connections dialled over TLS while overTLS is set.
var tlsDials atomic.Int64

// dialPeer connects a test client to s: its plain listener, or its TLS one
// while overTLS is set.
func dialPeer(t testing.TB, s *Server) *testpeer.Peer {
	t.Helper()
	if overTLS != nil {
		tlsDials.Add(1)
		return testpeer.DialTLS(t, s.TLSAddr().String(), overTLS.client)
	}
	return testpeer.Dial(t, s.Addr().String())
}

// authed dials the server and authenticates with token.
func authed(t testing.TB, s *Server, token string, extra ...any) *testpeer.Peer {
	t.Helper()
	p := dialPeer(t, s)
	p.Auth(token, extra...)
	return p
}

// subscribe subscribes p to topic and expects the `subscribed` reply.
func subscribe(t testing.TB, p *testpeer.Peer, topic string, extra ...any) {
	t.Helper()
	p.Send(append([]any{"type", "subscribe", "topic", topic}, extra...)...)
	p.ExpectFields("type", "subscribed", "topic", topic)
}

// expectPong sends a ping and expects the pong: proof that the connection is
// still open and that every frame sent before was processed.
func expectPong(t testing.TB, p *testpeer.Peer) {
	t.Helper()
	payload := []byte("still-there")
	p.SendFrame(ws.NewPingFrame(append([]byte(nil), payload...)))
	f := p.Expect()
	if f.OpCode != ws.OpPong || string(f.Payload) != string(payload) {
		t.Fatalf("expected pong %q, got %s", payload, f)
	}
}

// expectCloseCode expects a close frame with code (and reason, unless "*").
func expectCloseCode(t testing.TB, p *testpeer.Peer, code ws.StatusCode, reason string) {
	t.Helper()
	got, why := p.ExpectClose()
	if got != code || (reason != "*" && why != reason) {
		t.Fatalf("close = %d %q, want %d %q", got, why, code, reason)
	}
}

// compiled returns the wire bytes of f, masked as a client sends it.
func compiled(f ws.Frame) []byte { return ws.MustCompileFrame(ws.MaskFrame(f)) }

// binFrame returns the wire bytes of a masked binary frame holding the map kv.
func binFrame(kv ...any) []byte { return compiled(ws.NewBinaryFrame(testpeer.Map(kv...))) }

// rawHeader builds a masked frame header by hand (for frames a library
// refuses to build): b0 is FIN/RSV/opcode, length the declared length.
func rawHeader(b0 byte, length int) []byte {
	h := []byte{b0}
	switch {
	case length < 126:
		h = append(h, 0x80|byte(length))
	case length < 1<<16:
		h = append(h, 0x80|126, byte(length>>8), byte(length))
	default:
		h = append(h, 0x80|127)
		for i := 7; i >= 0; i-- {
			h = append(h, byte(uint64(length)>>(8*i)))
		}
	}
	return append(h, 0, 0, 0, 0) // zero mask: the payload goes as is
}

// upgradeRequest is a valid WebSocket upgrade request for /ws.
func upgradeRequest() string {
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	return "GET /ws HTTP/1.1\r\nHost: kraken.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + base64.StdEncoding.EncodeToString(key) + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
}

// dialTCP opens a plain TCP connection to the server, closed when the test
// ends.
func dialTCP(t testing.TB, s *Server) net.Conn {
	t.Helper()
	var conn net.Conn
	var err error
	if overTLS != nil {
		tlsDials.Add(1)
		conn, err = tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.TLSAddr().String(), overTLS.client)
	} else {
		conn, err = net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// readResponse reads one HTTP response from br; it returns the response and
// its body (none for 101).
func readResponse(t testing.TB, conn net.Conn, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("read HTTP response: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read HTTP body: %v", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return resp, string(body)
}

// httpExchange sends req on a fresh connection and reads the response.
func httpExchange(t testing.TB, s *Server, req string) (*http.Response, string) {
	t.Helper()
	conn := dialTCP(t, s)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	return readResponse(t, conn, bufio.NewReader(conn))
}

// expectClosedBy fails unless the server ends the TCP connection (EOF or a
// reset) within wait; it returns everything read until then.
func expectClosedBy(t testing.TB, conn net.Conn, r io.Reader, wait time.Duration) []byte {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	b, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v (read %d bytes)", wait, len(b))
	}
	return b
}

// alignToSecond sleeps until just after the next wall-clock second starts,
// so that a burst sent right away falls in one rate window (wire-reference.md
// §6.10 windows are whole wall-clock seconds).
func alignToSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second + 5*time.Millisecond).Sub(now))
}

// rawField returns the raw msgpack bytes of key's value in the map payload.
func rawField(t testing.TB, payload []byte, key string) []byte {
	t.Helper()
	n, b, err := msgp.ReadMapHeaderBytes(payload)
	if err != nil {
		t.Fatalf("not a map: %v", err)
	}
	for i := uint32(0); i < n; i++ {
		var k string
		k, b, err = msgp.ReadStringBytes(b)
		if err != nil {
			t.Fatalf("bad key: %v", err)
		}
		rest, err := msgp.Skip(b)
		if err != nil {
			t.Fatalf("bad value of %q: %v", k, err)
		}
		if k == key {
			return b[:len(b)-len(rest)]
		}
		b = rest
	}
	t.Fatalf("no %q in frame", key)
	return nil
}

// asInt returns a decoded msgpack integer as an int64.
func asInt(t testing.TB, v any) int64 {
	t.Helper()
	switch n := v.(type) {
	case int64:
		return n
	case uint64:
		return int64(n)
	}
	t.Fatalf("%v (%T) is not an integer", v, v)
	return 0
}

// itoa is strconv.Itoa, short for msgRefs.
func itoa(i int) string { return strconv.Itoa(i) }

// sameJSON compares two decoded values after JSON rendering, so that 1 ==
// int64(1).
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
