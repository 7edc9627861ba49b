package node_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/node/nodetest"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// anyToken grants every token the demo room's topics (demo/general/#),
// under the token as the actor.
type anyToken struct{}

func (anyToken) Validate(_ context.Context, token string) (*auth.Grant, error) {
	return grant(token), nil
}

func (anyToken) Revalidate(_ context.Context, actor string) (*auth.Grant, error) {
	return grant(actor), nil
}

func grant(actor string) *auth.Grant {
	return &auth.Grant{
		ActorTokenID: actor, ProjectID: "demo-project", OrganizationID: "demo-org", ActorType: "user",
		Rules: acl.Rules{{Pattern: "demo/general/#", Topic: "demo-general", Permission: acl.PermPubSub,
			RoomID: "room-general", RoomSlug: "general", AppID: "demo-app", AppName: "demo"}},
	}
}

// mqttClient is a raw MQTT 3.1.1 client over TCP.
type mqttClient struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dialMQTT(t *testing.T, addr string) *mqttClient {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &mqttClient{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *mqttClient) send(b []byte) {
	c.t.Helper()
	if _, err := c.c.Write(b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// expect reads the next packet, failing unless its first byte is first,
// and returns its body.
func (c *mqttClient) expect(first byte) []byte {
	c.t.Helper()
	_ = c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := c.br.ReadByte()
	if err != nil {
		c.t.Fatalf("expecting packet 0x%02x: %v", first, err)
	}
	n, mul := 0, 1
	for range 4 {
		b, err := c.br.ReadByte()
		if err != nil {
			c.t.Fatalf("expecting packet 0x%02x: %v", first, err)
		}
		n += int(b&0x7f) * mul
		mul <<= 7
		if b&0x80 == 0 {
			break
		}
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(c.br, body); err != nil {
		c.t.Fatalf("expecting packet 0x%02x: %v", first, err)
	}
	if f != first {
		c.t.Fatalf("packet 0x%02x % x, want 0x%02x", f, body, first)
	}
	return body
}

func mqttString(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }

// mqttPacket is a packet of first byte first and body the parts joined.
func mqttPacket(first byte, parts ...[]byte) []byte {
	var body []byte
	for _, p := range parts {
		body = append(body, p...)
	}
	out := []byte{first}
	for n := len(body); ; {
		d := byte(n & 0x7f)
		if n >>= 7; n == 0 {
			out = append(out, d)
			break
		}
		out = append(out, d|0x80)
	}
	return append(out, body...)
}

// connectAndSubscribe is a clean-session CONNECT of client id (its
// password the token id) and a SUBSCRIBE to topic at qos, in one write.
func connectAndSubscribe(id, topic string, qos byte) []byte {
	connect := mqttPacket(0x10, mqttString("MQTT"), []byte{4, 0x02 | 0x80 | 0x40, 0, 60},
		mqttString(id), mqttString("device"), mqttString(id))
	return append(connect, mqttPacket(0x82, []byte{0, 1}, mqttString(topic), []byte{qos})...)
}

// One MQTT publisher, 1,000 WebSocket subscribers and 1,000 MQTT ones
// (half at QoS 0, half at QoS 1) on one topic of one node: every
// subscriber gets each of a few publications, and the hub encodes each
// publication once per form in use (hub.Hub.FramesEncoded): the WebSocket
// frame, the MQTT QoS 0 PUBLISH and the MQTT QoS 1 one, once each, however
// many subscribers share them.
func TestEachFormIsEncodedOnceForThousandsOfSubscribers(t *testing.T) {
	const (
		perTransport = 1000
		publications = 3
		topic        = "demo/general/fanout"
	)
	n, err := node.New(node.Config{Hub: hub.Config{Workers: 4},
		Session: session.Config{Auth: anyToken{}}})
	if err != nil {
		t.Fatal(err)
	}
	l, err := listener.New(n, listener.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(n, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Start(t, n, s, l)

	// Each step goes to every client before any answer is read, so the
	// sockets do their handshakes side by side.
	peers := make([]*testpeer.Peer, perTransport)
	for i := range peers {
		peers[i] = testpeer.Dial(t, s.Addr().String())
		peers[i].Send("type", "auth", "token", fmt.Sprintf("ws-%d", i))
	}
	for _, p := range peers {
		if f := p.ExpectType("auth"); f.Map["success"] != true {
			t.Fatalf("auth failed: %s", f)
		}
		p.Send("type", "subscribe", "topic", topic)
	}
	for _, p := range peers {
		p.ExpectFields("type", "subscribed", "topic", topic)
	}
	subs := make([]*mqttClient, perTransport)
	qos := func(i int) byte { return byte(i % 2) }
	for i := range subs {
		subs[i] = dialMQTT(t, l.Addr().String())
		subs[i].send(connectAndSubscribe(fmt.Sprintf("mqtt-%d", i), topic, qos(i)))
	}
	for i, c := range subs {
		if body := c.expect(0x20); body[1] != 0 {
			t.Fatalf("subscriber %d: CONNACK code %d", i, body[1])
		}
		if body := c.expect(0x90); body[2] != qos(i) {
			t.Fatalf("subscriber %d: SUBACK % x, want QoS %d granted", i, body, qos(i))
		}
	}
	h := n.Hub()
	if got := h.Stats().Subscriptions; got != 2*perTransport {
		t.Fatalf("%d subscriptions, want %d", got, 2*perTransport)
	}
	pub := dialMQTT(t, l.Addr().String())
	pub.send(mqttPacket(0x10, mqttString("MQTT"), []byte{4, 0x02 | 0x80 | 0x40, 0, 60},
		mqttString("publisher"), mqttString("device"), mqttString("publisher")))
	pub.expect(0x20)

	wsID, mqttID := wsframe.Encoding{}.ID(), uint8(listener.EncodingID)
	start := time.Now()
	for k := 1; k <= publications; k++ {
		payload := fmt.Sprintf("message %d", k)
		id := uint16(k)
		pub.send(mqttPacket(0x32, mqttString(topic), []byte{byte(id >> 8), byte(id)}, []byte(payload)))
		if body := pub.expect(0x40); binary.BigEndian.Uint16(body) != id {
			t.Fatalf("PUBACK % x, want packet identifier %d", body, id)
		}
		for _, p := range peers {
			p.ExpectFields("type", "message", "topic", topic, "data", []byte(payload))
		}
		for i, c := range subs {
			first := byte(0x30 | qos(i)<<1)
			body := c.expect(first)
			tl := int(binary.BigEndian.Uint16(body))
			gotTopic, rest := string(body[2:2+tl]), body[2+tl:]
			if qos(i) == 1 {
				c.send([]byte{0x40, 2, rest[0], rest[1]}) // PUBACK
				rest = rest[2:]
			}
			if gotTopic != topic || string(rest) != payload {
				t.Fatalf("MQTT subscriber %d got %q %q, want %q %q", i, gotTopic, rest, topic, payload)
			}
		}
		for _, f := range []struct {
			what  string
			enc   uint8
			acked bool
			want  uint64
		}{
			{"WebSocket frame", wsID, false, uint64(k)},
			{"MQTT QoS 0 PUBLISH", mqttID, false, uint64(k)},
			{"MQTT QoS 1 PUBLISH", mqttID, true, uint64(k)},
			{"acknowledged WebSocket frame", wsID, true, 0},
			{"MQTT-over-WebSocket frame", listener.WebSocketEncodingID, false, 0},
		} {
			if got := h.FramesEncoded(f.enc, f.acked); got != f.want {
				t.Errorf("after publication %d: %s encoded %d times, want %d", k, f.what, got, f.want)
			}
		}
	}
	t.Logf("%d publications to %d subscribers delivered in %v", publications, 2*perTransport, time.Since(start))
	if d := h.Stats().Deliveries; d < publications*2*perTransport {
		t.Errorf("%d deliveries counted, want at least %d", d, publications*2*perTransport)
	}
}
