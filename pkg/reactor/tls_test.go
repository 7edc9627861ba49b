package reactor_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestTLSBacklogKeepsOrderAndFraming: a TLS subscriber that stops reading
// while messages pile up (the socket full, records waiting, the hub
// retrying) gets every message, in order and well-framed, once it reads
// again.
func TestTLSBacklogKeepsOrderAndFraming(t *testing.T) {
	n := startNode(t, 0, func(c *hub.Config) { c.OutboundMaxBytes = 64 << 20; c.WriteTimeout = time.Minute })
	sub := testpeer.DialTLS(t, n.ws.TLSAddr().String(), n.ca.ClientConfig())
	sub.Auth("bob")
	sub.Send("type", "subscribe", "topic", topic)
	sub.ExpectFields("type", "subscribed", "topic", topic)
	pub := testpeer.Dial(t, n.ws.Addr().String())
	pub.Auth("alice")
	const total = 3000
	pad := string(bytes.Repeat([]byte{'x'}, 1500)) // 4.5 MB in all: far more than the socket buffers
	for i := range total {
		pub.Send("type", "publish", "topic", topic, "data", fmt.Sprintf("%d %s", i, pad))
	}
	time.Sleep(500 * time.Millisecond) // the queue backs up behind the full socket
	for i := range total {
		f, err := sub.Read(10 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		want := fmt.Sprintf("%d %s", i, pad)
		if f.Map["type"] != "message" || f.Map["data"] != want {
			t.Fatalf("frame %d is %v %.20q, want message %.20q", i, f.Map["type"], f.Map["data"], want)
		}
	}
}

// TestTLSSlowConsumerClosedWellFramed: a TLS subscriber whose queue passes
// OutboundMaxBytes is closed as a slow consumer, and what it reads up to
// the close frame is whole frames, the close frame last.
func TestTLSSlowConsumerClosedWellFramed(t *testing.T) {
	n := startNode(t, 0, func(c *hub.Config) { c.OutboundMaxBytes = 256 << 10 })
	conn, err := tls.Dial("tcp", n.ws.TLSAddr().String(), n.ca.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	c := upgrade(t, conn, "bob")
	if _, err := c.Write(wsFrame(ws.OpBinary, testpeer.Map("type", "subscribe", "topic", topic))); err != nil {
		t.Fatal(err)
	}
	if f, err := ws.ReadFrame(c.br); err != nil || !bytes.Contains(f.Payload, []byte("subscribed")) {
		t.Fatalf("subscribe answered %q, %v", f.Payload, err)
	}
	pub := testpeer.Dial(t, n.ws.Addr().String())
	pub.Auth("alice")
	// Past the bound while the subscriber does not read: 1.6 MB a round,
	// until the close is decided. The kernel's socket buffers (autotuned
	// to several MB on loopback) may take a round or more first.
	pad := string(bytes.Repeat([]byte{'y'}, 4000))
	closed := func() bool { return n.ws.Node().Hub().Stats().Closed[disconnect.SlowConsumer] == 1 }
	for round := 0; !closed(); round++ {
		if round == 25 {
			t.Fatalf("not closed as a slow consumer after %d MB it did not read", round*16/10)
		}
		for i := range 400 {
			pub.Send("type", "publish", "topic", topic, "data", fmt.Sprintf("%d %d %s", round, i, pad))
		}
		time.Sleep(100 * time.Millisecond)
	}
	n.waitClosed(t, disconnect.SlowConsumer)
	code, _ := closedWebSocket(t, c) // fails on a frame that does not parse
	if code != disconnect.SlowConsumer.Code() {
		t.Fatalf("closed with %d, want %d", code, disconnect.SlowConsumer.Code())
	}
}

// TestTLSIdleConnectionsHoldNoGoroutine: authenticated TLS connections that
// send nothing hold no goroutine each once their handshakes are done, and
// a TCP connection that never starts its handshake holds none either.
func TestTLSIdleConnectionsHoldNoGoroutine(t *testing.T) {
	n := startNode(t, 0, nil)
	settle := func() int {
		var g int
		for range 50 {
			runtime.GC()
			g = runtime.NumGoroutine()
			time.Sleep(20 * time.Millisecond)
			if runtime.NumGoroutine() == g {
				break
			}
		}
		return g
	}
	before := settle()
	const conns = 200
	for range conns / 2 {
		dialWebSocket(t, n.overTLS())
		dialMQTT(t, n.overTLS())
	}
	for range 50 { // silent: no ClientHello
		c, err := net.Dial("tcp", n.ws.TLSAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	// The client side's own goroutines: none per connection (crypto/tls
	// client connections read on the caller's goroutine).
	if after := settle(); after-before > conns/10 {
		t.Fatalf("%d goroutines before %d idle TLS connections and 50 silent ones, %d after: one per connection", before, conns, after)
	}
}

// TestTLSStalledHandshakeEndsAtTheHandshakeDeadline: a client that sends a
// ClientHello and then nothing (a slowloris handshake) is closed at the
// hub's handshake deadline, and its handshake goroutine ends with it.
func TestTLSStalledHandshakeEndsAtTheHandshakeDeadline(t *testing.T) {
	n := startNode(t, 0, func(c *hub.Config) { c.HandshakeTimeout = 500 * time.Millisecond })
	hello := clientHello(t)
	before := runtime.NumGoroutine()
	var stalled []net.Conn
	for range 20 {
		c, err := net.Dial("tcp", n.ws.TLSAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := c.Write(hello); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, c)
	}
	began := time.Now()
	for _, c := range stalled {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			t.Fatalf("a stalled handshake was not closed: %v", err)
		}
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("stalled handshakes closed after %v, want near the 500ms deadline", took)
	}
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before+2 })
	dialWebSocket(t, n.overTLS()) // still served
}

// TestTLSHostileInput: bytes that are not TLS on the TLS listener, a
// garbage record after the handshake, and a flood of handshake bytes are
// each closed, and the listener goes on serving.
func TestTLSHostileInput(t *testing.T) {
	n := startNode(t, 0, nil)
	cases := []struct {
		name string
		run  func(t *testing.T) net.Conn
	}{
		{"MQTT CONNECT on the TLS port", func(t *testing.T) net.Conn {
			c := rawDial(t, n.mqtt.TLSAddr())
			_, _ = c.Write(mqttPacket(0x10, mqttString("MQTT"), []byte{4, 2, 0, 30}, mqttString("plain")))
			return c
		}},
		{"garbage record after the handshake", func(t *testing.T) net.Conn {
			c := dialWebSocket(t, n.overTLS())
			under := c.Conn.(*tls.Conn).NetConn()
			_, _ = under.Write([]byte{23, 3, 3, 0, 40}) // application data, 40 bytes that fail authentication
			_, _ = under.Write(bytes.Repeat([]byte{0xaa}, 40))
			return c
		}},
		{"handshake record larger than allowed", func(t *testing.T) net.Conn {
			c := rawDial(t, n.mqtt.TLSAddr())
			_, _ = c.Write([]byte{22, 3, 1, 0xff, 0xff})
			_, _ = c.Write(bytes.Repeat([]byte{1}, 70<<10))
			return c
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.run(t)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err := io.Copy(io.Discard, c)
			var ne net.Error
			if ok := asNetError(err, &ne); ok && ne.Timeout() {
				t.Fatal("the connection is still open")
			}
			dialWebSocket(t, n.overTLS())
			dialMQTT(t, n.overTLS())
		})
	}
	if _, failed := n.mqtt.TLSHandshakes(); failed != 2 {
		t.Fatalf("%d failed handshakes counted on the MQTT TLS listener, want 2", failed)
	}
}

// TestTLSCloseNotifyThenClose: a client that ends with close_notify and
// its close is released.
func TestTLSCloseNotifyThenClose(t *testing.T) {
	n := startNode(t, 0, nil)
	c := dialMQTT(t, n.overTLS())
	if err := c.Conn.(*tls.Conn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	waitFor(t, func() bool { return n.ws.Node().Hub().Stats().Connections == 0 })
}

func rawDial(t *testing.T, a net.Addr) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", a.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// clientHello returns the first flight of a real crypto/tls client: its
// ClientHello record.
func clientHello(t *testing.T) []byte {
	t.Helper()
	a, b := net.Pipe()
	go func() {
		_ = tls.Client(a, &tls.Config{InsecureSkipVerify: true}).Handshake()
	}()
	buf := make([]byte, 64<<10)
	_ = b.SetReadDeadline(time.Now().Add(5 * time.Second))
	k, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	_ = a.Close()
	_ = b.Close()
	return buf[:k]
}

// TestTLSPlainHTTPIsToldToUseTLS: a plain WebSocket upgrade on the TLS
// listener gets Go's net/http answer, which clients read as "use wss://",
// and is closed.
func TestTLSPlainHTTPIsToldToUseTLS(t *testing.T) {
	n := startNode(t, 0, nil)
	c := rawDial(t, n.ws.TLSAddr())
	if _, err := c.Write([]byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(got), "HTTP/1.0 400 Bad Request\r\n") ||
		!strings.HasSuffix(string(got), "Client sent an HTTP request to an HTTPS server.\n") {
		t.Fatalf("answered %q, %v", got, err)
	}
}

// TestTLSRenegotiationRefused: a TLS 1.2 client asking to renegotiate
// (openssl s_client's "R") is refused by crypto/tls with an alert, its
// connection ends, and the listener goes on serving.
func TestTLSRenegotiationRefused(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("SKIPPED: openssl not found; install openssl to test a client-initiated renegotiation")
	}
	n := startNode(t, 0, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "openssl", "s_client", "-connect", n.mqtt.TLSAddr().String(), "-tls1_2",
		"-CAfile", n.ca.File, "-servername", "localhost")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { done, _ := n.mqtt.TLSHandshakes(); return done == 1 })
	_, _ = in.Write([]byte("R\n"))
	err = cmd.Wait() // s_client ends when the server closes
	if ctx.Err() != nil {
		t.Fatalf("the connection stayed open after a renegotiation attempt:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "RENEGOTIATING") {
		t.Fatalf("openssl did not attempt a renegotiation (%v):\n%s", err, out.String())
	}
	waitFor(t, func() bool { return n.ws.Node().Hub().Stats().Connections == 0 })
	dialMQTT(t, n.overTLS())
}
