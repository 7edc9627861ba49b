package listener_test

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	knode "github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// connectID is a CONNECT with client identifier id, token as the password,
// and the Clean Session flag clean.
func connectID(id, token string, clean bool) []byte {
	flags := byte(0x80 | 0x40)
	if clean {
		flags |= 0x02
	}
	body := append(append(str(id), str("device")...), str(token)...)
	return pkt(0x10, str("MQTT"), []byte{4, flags, 0, 30}, body)
}

// sessionClient connects a raw client with identifier id and the Clean
// Session flag clean, and returns it with its CONNACK's session present.
func sessionClient(t *testing.T, n *node, id string, clean bool) (*client, bool) {
	t.Helper()
	c := dial(t, n.mqttAddr())
	c.send(connectID(id, "dev-token-bob", clean))
	body := c.expect(0x20)
	if len(body) != 2 || body[1] != 0 {
		t.Fatalf("CONNACK % x", body)
	}
	return c, body[0]&1 == 1
}

// publisher is an SDK client that publishes to topic.
func publisher(t *testing.T, n *node) func(data string) {
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	return func(data string) {
		ws.Send("type", "publish", "topic", topic, "data", data, "msgRef", data)
		ws.ExpectType("published")
	}
}

// A Clean Session 0 client that drops and reconnects gets session present
// 1, keeps its subscription without subscribing again, gets the PUBLISH
// it had not acknowledged again with DUP=1 and its Packet Identifier, then
// the messages published while it was away, in order [MQTT-4.4.0-1].
func TestPersistentSessionResumes(t *testing.T) {
	n := startNode(t, nil)
	pub := publisher(t, n)
	c, present := sessionClient(t, n, "meter-7", false)
	if present {
		t.Fatal("a first connect got session present 1")
	}
	c.send(subscribeQoS(1, 1, topic))
	c.expect(0x90)
	pub("one")
	_, p, _, id := c.expectPublishNoAck() // never acknowledged
	if string(p) != "one" {
		t.Fatalf("payload %q", p)
	}
	_ = c.c.Close() // dropped, no DISCONNECT
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	pub("two")
	pub("three")

	c, present = sessionClient(t, n, "meter-7", false)
	if !present {
		t.Fatal("reconnect got session present 0")
	}
	f, body, err := c.read(3 * time.Second)
	if err != nil || f != 0x3a || !bytes.Contains(body, []byte("one")) || publishID(body) != id {
		t.Fatalf("first packet 0x%02x % x (%v), want the unacknowledged PUBLISH with DUP=1 (0x3a) and id %d", f, body, err, id)
	}
	c.send(ack(0x40, id))
	for _, want := range []string{"two", "three"} {
		_, p, q, _ := c.expectPublishNoAck()
		if string(p) != want || q != 1 {
			t.Fatalf("got %q qos %d, want %q at QoS 1", p, q, want)
		}
	}
	pub("four") // live, on the subscription it did not send again
	if _, p := c.expectPublish(); string(p) != "four" {
		t.Fatalf("live %q", p)
	}
}

// A Clean Session 1 CONNECT discards the kept session [MQTT-3.1.2-6]: a
// later Clean Session 0 one starts anew. A session expires after
// SessionExpiry.
func TestPersistentSessionDiscardAndExpiry(t *testing.T) {
	n := startNodeWith(t, nil, func(c *listener.Config) { c.SessionExpiry = 300 * time.Millisecond })
	c, _ := sessionClient(t, n, "s-1", false)
	c.send(subscribePkt(1, topic))
	c.expect(0x90)
	c.send(pkt(0xe0)) // DISCONNECT: the session is kept all the same
	c.expectClosed()
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	c, present := sessionClient(t, n, "s-1", true)
	if present {
		t.Fatal("a Clean Session 1 CONNECT got session present 1")
	}
	_ = c.c.Close()
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 0 })
	if _, present = sessionClient(t, n, "s-1", false); present {
		t.Fatal("the discarded session came back")
	}

	c, _ = sessionClient(t, n, "s-2", false)
	c.send(subscribePkt(1, topic))
	c.expect(0x90)
	_ = c.c.Close()
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	kept := time.Now()
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 0 }) // expired
	if d := time.Since(kept); d < 200*time.Millisecond {
		t.Fatalf("the session was kept %v, want about its 300 ms expiry", d)
	}
	if _, present := sessionClient(t, n, "s-2", false); present {
		t.Fatal("an expired session came back")
	}
}

// A Clean Session 0 CONNECT that takes over a live Clean Session 0
// connection with the same identifier closes it and gets its session:
// session present 1 and its subscription.
func TestTakeoverTakesTheSession(t *testing.T) {
	n := startNode(t, nil)
	pub := publisher(t, n)
	first, _ := sessionClient(t, n, "pump-3", false)
	first.send(subscribePkt(1, topic))
	first.expect(0x90)
	second, present := sessionClient(t, n, "pump-3", false)
	if !present {
		t.Fatal("the takeover got session present 0")
	}
	first.expectClosed()
	pub("after")
	if _, p := second.expectPublish(); string(p) != "after" {
		t.Fatalf("got %q", p)
	}
}

// paho with CleanSession false: its subscription, the QoS 1 message it
// received but did not acknowledge, and the messages published while it
// was away survive a reconnect; the unacknowledged one comes again first,
// with DUP=1 and the same payload [MQTT-3.3.1-1], §4.4.
func TestPahoPersistentSession(t *testing.T) {
	n := startNode(t, nil)
	pub := publisher(t, n)
	got := make(chan paho.Message, 10)
	opts := func() *paho.ClientOptions {
		return paho.NewClientOptions().AddBroker("tcp://" + n.mqttAddr()).SetClientID("paho-p").
			SetUsername("device").SetPassword("dev-token-bob").SetCleanSession(false).
			SetAutoReconnect(false).SetConnectRetry(false).SetKeepAlive(30 * time.Second).
			SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { got <- m })
	}
	next := func(what string) paho.Message {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(3 * time.Second):
			t.Fatalf("paho got no %s", what)
			return nil
		}
	}
	c := paho.NewClient(opts().SetAutoAckDisabled(true)) // no PUBACK unless m.Ack()
	wait(t, "connect", c.Connect())
	wait(t, "subscribe", c.Subscribe(topic, 1, nil))
	waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions >= 1 })
	pub("unacknowledged")
	if m := next("first delivery"); string(m.Payload()) != "unacknowledged" || m.Qos() != 1 || m.Duplicate() {
		t.Fatalf("got %q QoS %d DUP %v, want the first delivery at QoS 1 without DUP", m.Payload(), m.Qos(), m.Duplicate())
	}
	c.Disconnect(100) // without the PUBACK
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	pub("while away")
	c = paho.NewClient(opts())
	tok := c.Connect()
	wait(t, "reconnect", tok)
	if !tok.(*paho.ConnectToken).SessionPresent() {
		t.Fatal("paho: session present 0")
	}
	defer c.Disconnect(100)
	if m := next("redelivery"); string(m.Payload()) != "unacknowledged" || m.Qos() != 1 || !m.Duplicate() {
		t.Fatalf("got %q QoS %d DUP %v, want the unacknowledged message again with DUP=1", m.Payload(), m.Qos(), m.Duplicate())
	}
	if m := next("message published while away"); string(m.Payload()) != "while away" || m.Duplicate() {
		t.Fatalf("got %q DUP %v, want the message published while away", m.Payload(), m.Duplicate())
	}
	select {
	case m := <-got:
		t.Fatalf("an extra delivery %q DUP %v", m.Payload(), m.Duplicate())
	case <-time.After(200 * time.Millisecond):
	}
}

// mosquitto_sub -c (Clean Session 0): a first run subscribes and exits; a
// second gets what was published in between.
func TestMosquittoPersistentSession(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	pub := publisher(t, n)
	host, port, _ := net.SplitHostPort(n.mqttAddr())
	run := func(count int, wait string) (string, error) {
		out, err := exec.Command("mosquitto_sub", "-h", host, "-p", port, "-u", "device", "-P", "dev-token-bob",
			"-i", "mosq-p", "-c", "-q", "1", "-t", topic, "-C", fmt.Sprint(count), "-W", wait).CombinedOutput()
		return string(out), err
	}
	first := make(chan string, 1)
	go func() { out, _ := run(1, "5"); first <- out }()
	waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions >= 1 })
	pub("a")
	if out := <-first; strings.TrimSpace(out) != "a" {
		t.Fatalf("first run printed %q", out)
	}
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	pub("b")
	pub("c")
	out, err := run(2, "5")
	if err != nil || strings.TrimSpace(out) != "b\nc" {
		t.Fatalf("second run: %v, %q; want the two messages published while it was away", err, out)
	}
}

// A persistent session remembers the inbound QoS 2 identifiers whose
// PUBREL had not come: the client's retransmitted PUBLISH after it
// resumes is answered with PUBREC and not published again (§4.3.3, §4.1).
func TestPersistentSessionKeepsInboundQoS2(t *testing.T) {
	n := startNode(t, nil)
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", topic)
	ws.ExpectType("subscribed")

	c, _ := sessionClient(t, n, "q2", false)
	c.send(publishPkt(topic, 2, false, 7, "exactly once"))
	c.expect(0x50)
	_ = c.c.Close() // before its PUBREL
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	ws.ExpectType("message")

	c, present := sessionClient(t, n, "q2", false)
	if !present {
		t.Fatal("session present 0")
	}
	dup := publishPkt(topic, 2, false, 7, "exactly once")
	dup[0] |= 0x08
	c.send(dup)
	c.expect(0x50)
	c.send(ack(0x62, 7))
	c.expect(0x70)
	ws.ExpectNothing(200 * time.Millisecond)
}

// A kept session's parked connection is no client's: the connection
// gauges and the open count leave it out while it is kept and when it
// expires or is resumed (no negative MQTT count, no "http" connection, no
// authenticated connection taken off the count that was never added to
// it), and its end is not logged as a connection closed.
func TestKeptSessionsAreNotCountedAsConnections(t *testing.T) {
	n := startNodeWith(t, nil, func(c *listener.Config) { c.SessionExpiry = 200 * time.Millisecond })
	live := connected(t, n.mqttAddr(), "dev-token-alice") // stays open: counted once throughout
	c, _ := sessionClient(t, n, "counted", false)
	c.send(subscribePkt(1, topic))
	c.expect(0x90)
	_ = c.c.Close()
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	if open := n.node.Stats().Open[knode.KindMQTT]; open != 1 {
		t.Fatalf("%d MQTT connections open while one is and a session is kept, want 1", open)
	}
	if got := samples(t, n.node.Metrics("static", "local")); got["kraken_connections{transport=http}"] != 0 ||
		got["kraken_connections{transport=mqtt}"] != 1 {
		t.Fatalf("kraken_connections %v while one MQTT client is connected and a session kept, want mqtt 1, http 0", got)
	}
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 0 })
	waitFor(t, func() bool { return n.node.Stats().Hub.Connections == 1 })
	if open := n.node.Stats().Open[knode.KindMQTT]; open != 1 {
		t.Fatalf("%d MQTT connections open after the session expired, want 1", open)
	}
	authed := func() float64 {
		return samples(t, n.node.Metrics("static", "local"))["kraken_connections_authenticated"]
	}
	if got := authed(); got != 1 {
		t.Fatalf("kraken_connections_authenticated %v after a kept session expired, one client connected: want 1", got)
	}
	// Kept, then resumed: the parked connection ends when its client
	// comes back, which is counted once.
	c, _ = sessionClient(t, n, "resumed", false)
	c.send(subscribePkt(1, topic))
	c.expect(0x90)
	_ = c.c.Close()
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	back, present := sessionClient(t, n, "resumed", false)
	if !present {
		t.Fatal("the kept session was not resumed")
	}
	waitFor(t, func() bool { return n.node.Stats().Hub.Connections == 2 })
	if got := authed(); got != 2 {
		t.Fatalf("kraken_connections_authenticated %v with two clients connected after a resume, want 2", got)
	}
	back.send(pkt(0xc0))
	back.expect(0xd0)
	live.send(pkt(0xc0))
	live.expect(0xd0)
}
