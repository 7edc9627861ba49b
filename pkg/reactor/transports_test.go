package reactor_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/certs"
	"github.com/NoLagApp/kraken/pkg/certs/certstest"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	knode "github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/node/nodetest"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// The read loop's rules over real sockets, once per transport: every test
// below runs each row of transports, a WebSocket client on pkg/server and
// an MQTT client on pkg/mqtt/listener, both on one node (one hub).

const topic = "demo/general/reactor"

// transport is one transport's client side, over a raw socket.
type transport struct {
	name string
	// dial connects and authenticates as alice.
	dial func(t *testing.T, n *node) *client
	// publish is a publish of data to topic that is not answered.
	publish func(data string) []byte
	// head begins a frame that declares payload bytes of payload; any
	// bytes may follow it.
	head func(payload int) []byte
	// flood is a burst of small frames, each one handled and answered.
	flood []byte
	// refused is a frame the reader refuses with a protocol error.
	refused []byte
	// closed reads until the connection ends and returns the close code
	// and text it got: the WebSocket close frame, nothing for MQTT (3.1.1
	// has no packet for a server's close).
	closed func(t *testing.T, c *client) (ws.StatusCode, string)
}

var transports = []transport{
	{
		name:    "websocket",
		dial:    dialWebSocket,
		publish: func(data string) []byte { return wsFrame(ws.OpBinary, publishMap(data)) },
		head:    func(payload int) []byte { return []byte{0x82, 0x80 | byte(payload), 0, 0, 0, 0} },
		// Bytes that are not MessagePack: each answered bad_request.
		flood:   bytes.Repeat(wsFrame(ws.OpBinary, []byte{0xc1}), 4<<20/7),
		refused: ws.MustCompileFrame(ws.NewBinaryFrame([]byte{0x80})), // not masked
		closed:  closedWebSocket,
	},
	{
		name:    "mqtt",
		dial:    dialMQTT,
		publish: func(data string) []byte { return mqttPacket(0x30, mqttString(topic), []byte(data)) },
		head:    func(payload int) []byte { return []byte{0x30, byte(payload)} },
		flood:   bytes.Repeat([]byte{0xc0, 0}, 2<<20), // PINGREQ, each answered PINGRESP
		refused: []byte{0x80, 0},                      // SUBSCRIBE with reserved flags 0000
		closed:  closedMQTT,
	},
}

// tlsTransports are the transports over their TLS listeners: the same
// rules hold on the plaintext under the record layer.
var tlsTransports = func() []transport {
	var out []transport
	for _, tr := range transports {
		plain := tr.dial
		tr.name += "/tls"
		tr.dial = func(t *testing.T, n *node) *client { return plain(t, n.overTLS()) }
		out = append(out, tr)
	}
	return out
}()

// allTransports is transports, then tlsTransports.
var allTransports = append(append([]transport(nil), transports...), tlsTransports...)

// TestInputOverflowClosesWithTheTransportsClose: a client whose unprocessed
// input passes the bound while the workers are not behind is closed for
// input_overflow, the transport's way (1008 input_overflow; an MQTT
// connection just closes), and counted.
func TestInputOverflowClosesWithTheTransportsClose(t *testing.T) {
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			n := startNode(t, 64<<10, nil)
			c := tr.dial(t, n)
			done := make(chan struct{})
			go func() { // keep writing until the broker hangs up
				defer close(done)
				for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
					_ = c.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := c.Write(tr.flood); err != nil {
						return
					}
				}
			}()
			code, text := tr.closed(t, c)
			<-done
			if want := wantClose(tr, disconnect.InputOverflow); code != want || text != wantText(tr, disconnect.InputOverflow) {
				t.Fatalf("closed with %d %q, want %d %q", code, text, want, wantText(tr, disconnect.InputOverflow))
			}
			n.waitClosed(t, disconnect.InputOverflow)
		})
	}
}

// TestTrickledFrameMeetsTheFrameTimeout: a frame whose bytes keep coming,
// but too slowly to complete within the frame timeout, is closed for
// frame_timeout at that timeout: its bytes do not move the idle deadline.
func TestTrickledFrameMeetsTheFrameTimeout(t *testing.T) {
	const bound = 600 * time.Millisecond
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			n := startNode(t, 0, func(c *hub.Config) { c.FrameTimeout = bound; c.IdleTimeout = 10 * time.Second })
			c := tr.dial(t, n)
			began := time.Now()
			if _, err := c.Write(tr.head(100)); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { // one byte every 50 ms: 99 bytes take 5 s
				defer close(done)
				for range 99 {
					time.Sleep(50 * time.Millisecond)
					if _, err := c.Write([]byte{'x'}); err != nil {
						return
					}
				}
			}()
			code, text := tr.closed(t, c)
			elapsed := time.Since(began)
			<-done
			if want := wantClose(tr, disconnect.FrameTimeout); code != want || text != wantText(tr, disconnect.FrameTimeout) {
				t.Fatalf("closed with %d %q, want %d %q", code, text, want, wantText(tr, disconnect.FrameTimeout))
			}
			if elapsed < bound || elapsed > 3*time.Second {
				t.Fatalf("closed after %v, want soon after the %v frame timeout", elapsed, bound)
			}
			n.waitClosed(t, disconnect.FrameTimeout)
		})
	}
}

// TestInputAfterACloseDecisionIsDiscarded: a publish sent right behind a
// frame the reader refuses, in the same write, is never handled: its
// subscriber gets nothing, while a publish from another client arrives.
func TestInputAfterACloseDecisionIsDiscarded(t *testing.T) {
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			n := startNode(t, 0, nil)
			sub := n.subscriber(t)
			c := tr.dial(t, n)
			if _, err := c.Write(append(append([]byte(nil), tr.refused...), tr.publish("after the close")...)); err != nil {
				t.Fatal(err)
			}
			if code, _ := tr.closed(t, c); code != wantClose(tr, disconnect.ProtocolError) {
				t.Fatalf("closed with %d, want %d", code, wantClose(tr, disconnect.ProtocolError))
			}
			n.waitClosed(t, disconnect.ProtocolError)
			sub.ExpectNothing(300 * time.Millisecond)
			other := tr.dial(t, n)
			if _, err := other.Write(tr.publish("from another")); err != nil {
				t.Fatal(err)
			}
			expectMessage(t, sub, "from another")
		})
	}
}

// TestPausedSocketResumes: while the workers are behind, a connection that
// sends is not read any more (its socket is paused) and is not closed;
// once they catch up it is read again, and what it sent meanwhile is
// handled in order.
func TestPausedSocketResumes(t *testing.T) {
	for _, tr := range allTransports {
		t.Run(tr.name, func(t *testing.T) {
			n := startNode(t, 0, func(c *hub.Config) { c.Workers = 1; c.MaxPendingPublications = 64 })
			sub := n.subscriber(t)
			c := tr.dial(t, n)
			h := n.ws.Node().Hub()
			release, blocked := make(chan struct{}), make(chan struct{})
			h.RunShared(func(hub.Writer) { close(blocked); <-release }) // the only worker is busy
			<-blocked
			if _, err := c.Write(tr.publish("one")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool { return h.InputPauses() == 1 }) // behind after "one": paused
			if _, err := c.Write(tr.publish("two")); err != nil {
				t.Fatal(err)
			}
			close(release)
			expectMessage(t, sub, "one")
			expectMessage(t, sub, "two")
			if _, err := c.Write(tr.publish("three")); err != nil {
				t.Fatal(err)
			}
			expectMessage(t, sub, "three")
			if closed := h.Stats().Closed; closed != [len(closed)]uint64{} {
				t.Fatalf("connections closed: %v", closed)
			}
		})
	}
}

// wantClose is the close code a client of tr reads for r: 0 for MQTT.
func wantClose(tr transport, r disconnect.Reason) ws.StatusCode {
	if strings.HasPrefix(tr.name, "mqtt") {
		return 0
	}
	return r.Code()
}

// wantText is the close text a client of tr reads for r: "" for MQTT.
func wantText(tr transport, r disconnect.Reason) string {
	if strings.HasPrefix(tr.name, "mqtt") {
		return ""
	}
	return r.Text()
}

// node is a WebSocket server and an MQTT listener on one session protocol,
// each with a plain and a TLS listener.
type node struct {
	ws   *server.Server
	mqtt *listener.Listener
	ca   *certstest.CA
	tls  bool // dial the TLS listeners (overTLS)
}

// overTLS is n whose clients dial the TLS listeners.
func (n *node) overTLS() *node {
	m := *n
	m.tls = true
	return &m
}

// dial connects to the plain listener at plain or, over TLS, to secure.
func (n *node) dial(t *testing.T, plain, secure net.Addr) net.Conn {
	t.Helper()
	var conn net.Conn
	var err error
	if n.tls {
		conn, err = tls.Dial("tcp", secure.String(), n.ca.ClientConfig())
	} else {
		conn, err = net.Dial("tcp", plain.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// startNode starts a node whose transports bound their input at backlog
// bytes (0: their defaults), its hub configured by mutate, and stops it
// when the test ends.
func startNode(t *testing.T, backlog int, mutate func(*hub.Config)) *node {
	t.Helper()
	grant := func(actor string) *auth.Grant {
		return &auth.Grant{ActorTokenID: actor, ProjectID: "demo-project", OrganizationID: "demo-org",
			ActorType: "user", Rules: acl.Rules{{Pattern: "demo/general/#", Topic: "demo-general",
				Permission: acl.PermPubSub, RoomID: "room-general", RoomSlug: "general", AppID: "demo-app"}}}
	}
	cfg := knode.Config{Session: session.Config{Auth: tokens{"alice": grant("alice"), "bob": grant("bob")},
		RateLimit: 1 << 20, ErrorFloodLimit: 1 << 30},
		Hub: hub.Config{Workers: 2, Tick: 20 * time.Millisecond}}
	if mutate != nil {
		mutate(&cfg.Hub)
	}
	n, err := knode.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ca := certstest.New(t, "reactor")
	certFile, keyFile := ca.Server("kraken", time.Hour)
	store, err := certs.Load(certs.Files{Cert: certFile, Key: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(n, server.Config{Addr: "127.0.0.1:0", MaxInputBacklog: backlog,
		TLSAddr: "127.0.0.1:0", TLS: store.Config(false)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := listener.New(n, listener.Config{Addr: "127.0.0.1:0", MaxInputBacklog: backlog,
		TLSAddr: "127.0.0.1:0", TLS: store.Config(false)})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Start(t, n, s, l)
	return &node{ws: s, mqtt: l, ca: ca}
}

// subscriber is a WebSocket client of bob's subscribed to topic.
func (n *node) subscriber(t *testing.T) *testpeer.Peer {
	t.Helper()
	p := testpeer.Dial(t, n.ws.Addr().String())
	p.Auth("bob")
	p.Send("type", "subscribe", "topic", topic)
	p.ExpectFields("type", "subscribed", "topic", topic)
	return p
}

// waitClosed waits until the node counted one close for r.
func (n *node) waitClosed(t *testing.T, r disconnect.Reason) {
	t.Helper()
	waitFor(t, func() bool { return n.ws.Node().Hub().Stats().Closed[r] == 1 })
}

// expectMessage reads the next frame of sub: a `message` on topic with
// data (a string from WebSocket, a bin from MQTT).
func expectMessage(t *testing.T, sub *testpeer.Peer, data string) {
	t.Helper()
	f := sub.ExpectFields("type", "message", "topic", topic)
	got := f.Map["data"]
	if b, ok := got.([]byte); ok {
		got = string(b)
	}
	if got != data {
		t.Fatalf("message data %v, want %q", f.Map["data"], data)
	}
}

// tokens is an in-memory Authenticator: a token is its actor.
type tokens map[string]*auth.Grant

func (tk tokens) Validate(_ context.Context, token string) (*auth.Grant, error) {
	if g, ok := tk[token]; ok {
		return g, nil
	}
	return nil, auth.ErrDenied
}

func (tk tokens) Revalidate(_ context.Context, actor string) (*auth.Grant, error) {
	return tk.Validate(context.Background(), actor)
}

// client is a raw connection to one of the node's listeners.
type client struct {
	net.Conn
	br *bufio.Reader
}

// dialWebSocket upgrades a connection and authenticates it as alice.
func dialWebSocket(t *testing.T, n *node) *client {
	t.Helper()
	return upgrade(t, n.dial(t, n.ws.Addr(), n.ws.TLSAddr()), "alice")
}

// upgrade upgrades conn to /ws and authenticates it as actor.
func upgrade(t *testing.T, conn net.Conn, actor string) *client {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	br, _, err := ws.Dialer{}.Upgrade(conn, &url.URL{Scheme: "ws", Host: "kraken", Path: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Time{})
	if br == nil {
		br = bufio.NewReader(conn)
	}
	c := &client{Conn: conn, br: br}
	if _, err := c.Write(wsFrame(ws.OpBinary, testpeer.Map("type", "auth", "token", actor))); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if f, err := ws.ReadFrame(c.br); err != nil || !bytes.Contains(f.Payload, []byte("success\xc3")) {
		t.Fatalf("auth answered %q, %v; want success:true", f.Payload, err)
	}
	_ = c.SetReadDeadline(time.Time{})
	return c
}

// dialMQTT connects with a CONNECT whose password is alice's token and
// expects CONNACK 0.
func dialMQTT(t *testing.T, n *node) *client {
	t.Helper()
	conn := n.dial(t, n.mqtt.Addr(), n.mqtt.TLSAddr())
	c := &client{Conn: conn, br: bufio.NewReader(conn)}
	connect := mqttPacket(0x10, mqttString("MQTT"), []byte{4, 0xc2, 0, 30}, // user name, password, clean session, 30 s
		mqttString("reactor-test"), mqttString("any"), mqttString("alice"))
	if _, err := c.Write(connect); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var connack [4]byte
	if _, err := io.ReadFull(c.br, connack[:]); err != nil || connack != [4]byte{0x20, 2, 0, 0} {
		t.Fatalf("CONNACK % x, %v; want 20 02 00 00", connack, err)
	}
	return c
}

// closedWebSocket reads frames until the close frame, and then the end of
// the connection.
func closedWebSocket(t *testing.T, c *client) (ws.StatusCode, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(25 * time.Second))
	for {
		f, err := ws.ReadFrame(c.br)
		if err != nil {
			t.Fatalf("connection ended without a close frame: %v", err)
		}
		if f.Header.OpCode == ws.OpClose {
			code, text := ws.ParseCloseFrameData(f.Payload)
			expectEOF(t, c)
			return code, text
		}
	}
}

// closedMQTT reads until the end of the connection.
func closedMQTT(t *testing.T, c *client) (ws.StatusCode, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(25 * time.Second))
	expectEOF(t, c)
	return 0, ""
}

// expectEOF discards what c receives until the server closes it.
func expectEOF(t *testing.T, c *client) {
	t.Helper()
	if _, err := io.Copy(io.Discard, c.br); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the connection is still open")
		}
	}
}

// asNetError is errors.As for a net.Error.
func asNetError(err error, ne *net.Error) bool { return errors.As(err, ne) }

// wsFrame is a masked client frame.
func wsFrame(op ws.OpCode, payload []byte) []byte {
	return ws.MustCompileFrame(ws.MaskFrame(ws.NewFrame(op, true, payload)))
}

// publishMap is the MessagePack of a publish of data to topic.
func publishMap(data string) []byte {
	return testpeer.Map("type", "publish", "topic", topic, "data", data)
}

// mqttPacket is an MQTT packet: its first byte, the Remaining Length, the
// body.
func mqttPacket(first byte, body ...[]byte) []byte {
	b := bytes.Join(body, nil)
	out := []byte{first}
	for n := len(b); ; {
		d := byte(n & 0x7f)
		if n >>= 7; n == 0 {
			out = append(out, d)
			break
		}
		out = append(out, d|0x80)
	}
	return append(out, b...)
}

// mqttString is an MQTT UTF-8 string: a 2-byte length, then s.
func mqttString(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
	}
}
