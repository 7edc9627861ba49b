package listener_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	knode "github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
	"github.com/NoLagApp/kraken/pkg/wire"
)

const topic = "demo/general/messages"

// CONNECT: the token in the password (any user name beside it), or in the
// user name alone; CONNACK 5 for a refused token, 4 without one, 3 when the
// auth service is down, each followed by the close.
func TestConnectReturnCodes(t *testing.T) {
	n := startNode(t, nil)
	for _, tc := range []struct {
		name       string
		user, pass string
		code       byte
	}{
		{"password", "anyone", "dev-token-bob", 0},
		{"user name alone", "dev-token-bob", "", 0},
		{"empty password", "dev-token-bob", "\x00empty", 0},
		{"refused token", "anyone", "wrong", 5},
		{"no token", "", "", 4},
		{"auth service down", "anyone", tokenUnavailable, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, n.mqttAddr())
			c.send(connectPkt(30, tc.user, tc.pass))
			if body := c.expect(0x20); !bytes.Equal(body, []byte{0, tc.code}) {
				t.Fatalf("CONNACK % x, want 00 %02x", body, tc.code)
			}
			if tc.code != 0 {
				c.expectClosed()
				return
			}
			c.send(pkt(0xc0)) // PINGREQ
			c.expect(0xd0)
		})
	}
}

// Protocol errors: CONNACK 1 for a protocol level other than 4, then the
// close; a first packet other than CONNECT, a second CONNECT and malformed
// packets close without an answer.
func TestProtocolErrorsClose(t *testing.T) {
	n := startNode(t, nil)
	t.Run("level 5", func(t *testing.T) {
		c := dial(t, n.mqttAddr())
		c.send(pkt(0x10, str("MQTT"), []byte{5, 0x02, 0, 30}, str("x")))
		if body := c.expect(0x20); !bytes.Equal(body, []byte{0, 1}) {
			t.Fatalf("CONNACK % x, want 00 01", body)
		}
		c.expectClosed()
	})
	t.Run("not connect first", func(t *testing.T) {
		c := dial(t, n.mqttAddr())
		c.send(pkt(0xc0))
		c.expectClosed()
	})
	for name, b := range map[string][]byte{
		"second connect":    connectPkt(30, "x", "dev-token-bob"),
		"reserved type":     {0xf0, 0x00},
		"pingreq with body": {0xc0, 0x01, 0x00},
		"wildcard publish":  publishPkt("demo/+/x", 0, false, 0, "hi"),
		"qos 3":             {0x36, 0x04, 0x00, 0x01, 'a', 0x00},
		"bad flags":         {0x80, 0x06, 0x00, 0x01, 0x00, 0x01, 'a', 0x00},
		"too large":         {0x30, 0xff, 0xff, 0xff, 0x7f}, // 256 MiB declared: refused at the header
		"5-byte length":     {0x30, 0xff, 0xff, 0xff, 0xff, 0x01},
		"server packet":     {0x20, 0x02, 0x00, 0x00}, // CONNACK
	} {
		t.Run(name, func(t *testing.T) {
			c := connected(t, n.mqttAddr(), "dev-token-bob")
			c.send(b)
			c.expectClosed()
		})
	}
}

// A WebSocket publish reaches an MQTT subscriber (a str data as its text, a
// map as its MessagePack), and an MQTT publish reaches a WebSocket
// subscriber, data a bin of the payload (OQ-27). The MQTT subscriber's two
// matching subscriptions give it one copy at their highest QoS
// [MQTT-3.3.5-1].
func TestCrossTransportDelivery(t *testing.T) {
	n := startNode(t, nil)
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribePkt(7, "demo/general/#", topic))
	if body := m.expect(0x90); !bytes.Equal(body, []byte{0, 7, 1, 1}) {
		t.Fatalf("SUBACK % x, want 00 07 01 01", body)
	}
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", topic)
	ws.ExpectType("subscribed")

	ws.Send("type", "publish", "topic", topic, "data", "hello from alice")
	if tp, payload := m.expectPublish(); tp != topic || string(payload) != "hello from alice" {
		t.Fatalf("PUBLISH %q %q", tp, payload)
	}
	ws.ExpectType("message")

	ws.Send("type", "publish", "topic", topic, "data", map[string]any{"text": "hi"})
	want := testpeer.Map("text", "hi")
	if _, payload := m.expectPublish(); !bytes.Equal(payload, want) {
		t.Fatalf("payload % x, want the msgpack % x", payload, want)
	}
	ws.ExpectType("message")

	m.send(publishPkt(topic, 1, false, 9, "from a device\xff"))
	m.expect(0x40) // PUBACK, before the publisher's own copies
	f := ws.ExpectType("message")
	if d, ok := f.Map["data"].([]byte); !ok || string(d) != "from a device\xff" {
		t.Fatalf("data %#v, want the bin of the payload", f.Map["data"])
	}
	// MQTT has no "no local" in 3.1.1: the publisher gets its copy.
	if _, payload := m.expectPublish(); string(payload) != "from a device\xff" {
		t.Fatalf("echo %q", payload)
	}
	m.expectNothing(100 * time.Millisecond) // one copy, not one per subscription
}

// A SUBSCRIBE gets one SUBACK with a code per filter: 0x80 for a filter
// outside the grants. A denied PUBLISH is acknowledged and not delivered.
func TestDenials(t *testing.T) {
	n := startNode(t, nil)
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribePkt(3, "other/room", "demo/general/#", "other/#"))
	if body := m.expect(0x90); !bytes.Equal(body, []byte{0, 3, 0x80, 1, 0x80}) {
		t.Fatalf("SUBACK % x, want 00 03 80 01 80", body)
	}
	m.send(publishPkt("other/room", 1, false, 4, "x"))
	if body := m.expect(0x40); !bytes.Equal(body, []byte{0, 4}) {
		t.Fatalf("PUBACK % x", body)
	}
	m.send(publishPkt("$SYS/x", 1, false, 5, "x"))
	m.expect(0x40)
	m.expectNothing(100 * time.Millisecond)

	ws := testpeer.Dial(t, n.wsAddr()) // nor may an SDK client publish to a '$' topic
	ws.Auth("dev-token-alice")
	ws.Send("type", "publish", "topic", "$SYS/x", "data", "x", "msgRef", "r1")
	ws.ExpectFields("type", "error", "error", "invalid_topic", "detail", session.DetailDollarTopic)
}

// UNSUBSCRIBE really removes a wildcard subscription.
func TestUnsubscribeRemovesWildcard(t *testing.T) {
	n := startNode(t, nil)
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribePkt(1, "demo/general/#", "demo/+/messages"))
	m.expect(0x90)
	m.send(unsubscribePkt(2, "demo/general/#", "demo/+/messages"))
	if body := m.expect(0xb0); !bytes.Equal(body, []byte{0, 2}) {
		t.Fatalf("UNSUBACK % x", body)
	}
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "publish", "topic", topic, "data", "after", "msgRef", "r1")
	ws.ExpectType("published")
	m.expectNothing(200 * time.Millisecond)
}

// A retained PUBLISH is delivered to a later subscriber; an empty retained
// PUBLISH clears it.
func TestRetained(t *testing.T) {
	n := startNode(t, nil)
	pub := connected(t, n.mqttAddr(), "dev-token-alice")
	pub.send(publishPkt(topic, 1, true, 1, "kept"))
	pub.expect(0x40)

	sub := connected(t, n.mqttAddr(), "dev-token-bob")
	sub.send(subscribePkt(1, topic))
	got := map[byte]bool{}
	for range 2 { // the retained PUBLISH and the SUBACK, in either order
		f, body, err := sub.read(3 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got[f>>4] = true
		if f>>4 == 3 && (!bytes.HasSuffix(body, []byte("kept")) || f&1 != 1) {
			t.Fatalf("retained 0x%02x % x, want the RETAIN flag and the payload", f, body)
		}
		if f>>4 == 3 && f&0x06 != 0 { // QoS 1: acknowledge
			n := int(body[0])<<8 | int(body[1])
			sub.send([]byte{0x40, 2, body[2+n], body[3+n]})
		}
	}
	if !got[3] || !got[9] {
		t.Fatalf("got packet types %v, want PUBLISH and SUBACK", got)
	}

	pub.send(publishPkt(topic, 1, true, 2, ""))
	pub.expect(0x40)
	if f, _, err := sub.read(3 * time.Second); err != nil || f>>4 != 3 || f&1 != 0 {
		t.Fatalf("the live clearing publish: 0x%02x %v, want a PUBLISH without RETAIN", f, err)
	}
	late := connected(t, n.mqttAddr(), "dev-token-bob")
	late.send(subscribePkt(1, topic))
	late.expect(0x90)
	late.expectNothing(150 * time.Millisecond)
}

// Keep-alive: a client silent for 1.5 × its keep-alive is closed; any
// packet resets the deadline.
func TestKeepAlive(t *testing.T) {
	n := startNode(t, func(c *testConfig) { c.Hub.IdleTimeout = time.Hour })
	c := dial(t, n.mqttAddr())
	c.send(connectPkt(1, "x", "dev-token-bob"))
	c.expect(0x20)
	for range 3 { // 2.4 s of activity, past the 1.5 s deadline
		time.Sleep(800 * time.Millisecond)
		c.send(publishPkt(topic, 0, false, 0, "alive"))
	}
	began := time.Now()
	c.expectClosed()
	if d := time.Since(began); d < time.Second {
		t.Fatalf("closed %v after the last packet, want about 1.5 s", d)
	}
}

// A packet split across reads is reassembled.
func TestSplitPackets(t *testing.T) {
	n := startNode(t, nil)
	c := dial(t, n.mqttAddr())
	b := append(connectPkt(30, "x", "dev-token-bob"), subscribePkt(5, topic)...)
	b = append(b, pkt(0xc0)...)
	for i := range b {
		c.send(b[i : i+1])
		time.Sleep(time.Millisecond)
	}
	c.expect(0x20)
	c.expect(0x90)
	c.expect(0xd0)
}

// The server counts MQTT connections apart from its WebSocket ones, open
// and closed.
func TestConnectionsCountedAsMQTT(t *testing.T) {
	n := startNode(t, nil)
	c := connected(t, n.mqttAddr(), "dev-token-bob")
	waitFor(t, func() bool {
		st := n.node.Stats()
		return st.Open[knode.KindMQTT] == 1 && st.Open[knode.KindWebSocket] == 0
	})
	c.send(pkt(0xe0)) // DISCONNECT
	c.expectClosed()
	waitFor(t, func() bool {
		st := n.node.Stats()
		var closed uint64
		for _, v := range st.Closed[knode.KindMQTT] {
			closed += v
		}
		return st.Open[knode.KindMQTT] == 0 && closed == 1
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 3 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Outbound QoS 1: a QoS 1 subscription gets QoS 1 PUBLISHes with their own
// Packet Identifiers, a QoS 0 one or a QoS 0 publish QoS 0.
func TestOutboundQoS1(t *testing.T) {
	n := startNode(t, nil)
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribeQoS(1, 1, topic))
	if body := m.expect(0x90); !bytes.Equal(body, []byte{0, 1, 1}) {
		t.Fatalf("SUBACK % x, want QoS 1 granted", body)
	}
	zero := connected(t, n.mqttAddr(), "dev-token-bob")
	zero.send(subscribeQoS(1, 0, topic))
	if body := zero.expect(0x90); !bytes.Equal(body, []byte{0, 1, 0}) {
		t.Fatalf("SUBACK % x", body)
	}
	pub := connected(t, n.mqttAddr(), "dev-token-alice")
	pub.send(publishPkt(topic, 1, false, 1, "one"))
	pub.expect(0x40)
	_, p1, q1, id1 := m.expectPublishNoAck()
	if q1 != 1 || id1 == 0 || string(p1) != "one" {
		t.Fatalf("QoS 1 subscriber got qos %d id %d %q", q1, id1, p1)
	}
	if _, p, q, _ := zero.expectPublishNoAck(); q != 0 || string(p) != "one" {
		t.Fatalf("QoS 0 subscriber got qos %d %q", q, p)
	}
	pub.send(publishPkt(topic, 0, false, 0, "two")) // published at QoS 0: delivered at 0
	if _, p, q, _ := m.expectPublishNoAck(); q != 0 || string(p) != "two" {
		t.Fatalf("a QoS 0 publish came as qos %d %q", q, p)
	}
	zero.expectPublish()
	pub.send(publishPkt(topic, 1, false, 2, "three"))
	pub.expect(0x40)
	_, _, _, id3 := m.expectPublishNoAck()
	if id3 == id1 {
		t.Fatalf("two in-flight PUBLISHes share Packet Identifier %d", id1)
	}
	m.send([]byte{0x40, 2, byte(id1 >> 8), byte(id1)})
	m.send([]byte{0x40, 2, byte(id3 >> 8), byte(id3)})
	m.send(pkt(0xc0))
	m.expect(0xd0)

}

// A full in-flight window throttles: the next messages wait until
// acknowledgements free slots, then go out in order; nothing is closed.
func TestInflightWindowThrottles(t *testing.T) {
	n := startNodeWith(t, nil, func(c *listener.Config) { c.MaxInflight = 4 })
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribePkt(1, topic))
	m.expect(0x90)
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	const total = 50
	for i := range total {
		ws.Send("type", "publish", "topic", topic, "data", fmt.Sprint(i), "echo", false)
	}
	var ids []uint16
	for range 4 {
		_, _, q, id := m.expectPublishNoAck()
		if q != 1 {
			t.Fatal("not QoS 1")
		}
		ids = append(ids, id)
	}
	m.expectNothing(150 * time.Millisecond) // the window is full: the rest wait
	next := 4
	for len(ids) > 0 {
		id := ids[0]
		ids = ids[1:]
		m.send([]byte{0x40, 2, byte(id >> 8), byte(id)})
		if next < total {
			_, p, q, nid := m.expectPublishNoAck()
			if q != 1 || string(p) != fmt.Sprint(next) {
				t.Fatalf("after a PUBACK got qos %d %q, want message %d", q, p, next)
			}
			next++
			ids = append(ids, nid)
		}
	}
	m.send(pkt(0xc0))
	m.expect(0xd0)
	if got := n.node.Stats().Hub.SlowConsumers; got != 0 {
		t.Fatalf("%d slow consumers, want none", got)
	}
}

// A subscriber that acknowledges nothing is closed as a slow consumer once
// the messages waiting behind its full window pass the queue bound.
func TestInflightQueueBound(t *testing.T) {
	n := startNodeWith(t, nil, func(c *listener.Config) { c.MaxInflight = 2; c.MaxQueuedBytes = 1000 })
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribePkt(1, topic))
	m.expect(0x90)
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	payload := strings.Repeat("x", 100)
	for range 20 { // 2 in flight, ~9 × ~120 B fit the queue, the next does not
		ws.Send("type", "publish", "topic", topic, "data", payload, "echo", false)
	}
	for range 2 {
		m.expectPublishNoAck()
	}
	m.expectClosed()
	waitFor(t, func() bool { return n.node.Stats().Hub.SlowConsumers == 1 })
}

// TestMQTTSessionsAreNotKept: with RESUME_SESSIONS on, an MQTT connection
// is still a clean session: nothing is parked when it drops, and it does
// not hold its actor's resumable session, so a WebSocket connection of the
// same actor is resumable beside it.
func TestMQTTSessionsAreNotKept(t *testing.T) {
	n := startNode(t, func(c *testConfig) {
		c.Resume = session.ResumeConfig{Enabled: true, Expiry: time.Minute}
	})
	m := dial(t, n.mqttAddr())
	m.send(connectPkt(30, "anyone", "dev-token-bob"))
	m.expect(0x20)
	m.send(subscribePkt(1, "demo/general/mqtt-only"))
	m.expect(0x90)

	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-bob")
	ws.Send("type", "subscribe", "topic", topic, "qos", 1)
	ws.ExpectFields("type", "subscribed")

	_ = m.c.Close()
	_ = ws.Conn.Close()
	deadline := time.Now().Add(5 * time.Second)
	for n.node.Stats().Resume.Parked != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("parked sessions = %d, want the WebSocket one only", n.node.Stats().Resume.Parked)
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the MQTT close is handled too
	if p := n.node.Stats().Resume.Parked; p != 1 {
		t.Fatalf("parked sessions = %d after both closed, want 1 (the WebSocket one)", p)
	}
	ws2 := testpeer.Dial(t, n.wsAddr())
	f := ws2.Auth("dev-token-bob", "reconnect", true)
	rs, _ := f.Map["restoredSubscriptions"].([]any)
	if r, _ := firstOf(rs).(map[string]any); len(rs) != 1 || r["name"] != topic {
		t.Fatalf("restoredSubscriptions = %v, want the WebSocket connection's %s", f.Map["restoredSubscriptions"], topic)
	}
	ws2.ExpectFields("type", "replayStart")
	ws2.ExpectFields("type", "replayEnd", "complete", true)
}

func firstOf(s []any) any {
	if len(s) == 0 {
		return nil
	}
	return s[0]
}

// MQTT has no error frames: a refused subscribe or publish is a SUBACK
// 0x80 or a plain PUBACK, and its log line carries the topic bounded as a
// WebSocket error frame has it (wire.Echo): a 5 KB topic is logged as 1024
// bytes. (A topic that is not UTF-8 never gets this far: the packet is
// malformed and the connection closed, MQTT 3.1.1 §1.5.3.)
func TestRefusedLongTopicIsLoggedBounded(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	n := startNode(t, func(c *testConfig) { c.Logger = zap.New(core) })
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	long := "demo/general/" + strings.Repeat("x", 5000)
	m.send(subscribePkt(3, long))
	if body := m.expect(0x90); !bytes.Equal(body, []byte{0, 3, 0x80}) {
		t.Fatalf("SUBACK % x, want 00 03 80", body)
	}
	m.send(publishPkt(long, 1, false, 4, "x"))
	m.expect(0x40)
	for _, msg := range []string{"subscribe refused", "publish refused"} {
		lines := logs.FilterMessage(msg).All()
		if len(lines) != 1 {
			t.Fatalf("%d %q lines, want 1", len(lines), msg)
		}
		got, _ := lines[0].ContextMap()["topic"].(string)
		if got != wire.Echo(long) || len(got) > wire.MaxEcho {
			t.Errorf("%q logs a topic of %d bytes, want %d", msg, len(got), len(wire.Echo(long)))
		}
	}
}
