package listener_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker/membus"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Across two nodes of one broker bus: an MQTT publish on one reaches MQTT
// and WebSocket subscribers on the other, and a WebSocket publish reaches
// an MQTT subscriber on the other.
func TestAcrossNodes(t *testing.T) {
	b := &membus.Bus{}
	a := startNode(t, func(c *testConfig) { c.Broker = b.Node("a"); c.NodeID = "a" })
	z := startNode(t, func(c *testConfig) { c.Broker = b.Node("z"); c.NodeID = "z" })

	mOnZ := connected(t, z.mqttAddr(), "dev-token-bob")
	mOnZ.send(subscribePkt(1, "demo/general/#"))
	mOnZ.expect(0x90)
	wsOnZ := testpeer.Dial(t, z.wsAddr())
	wsOnZ.Auth("dev-token-bob")
	wsOnZ.Send("type", "subscribe", "topic", topic)
	wsOnZ.ExpectType("subscribed")

	mOnA := connected(t, a.mqttAddr(), "dev-token-alice")
	mOnA.send(publishPkt(topic, 1, false, 1, "from node a"))
	mOnA.expect(0x40)
	if tp, p := mOnZ.expectPublish(); tp != topic || string(p) != "from node a" {
		t.Fatalf("MQTT on z got %q %q", tp, p)
	}
	if f := wsOnZ.ExpectType("message"); string(f.Map["data"].([]byte)) != "from node a" {
		t.Fatalf("WebSocket on z got %s", f)
	}

	wsOnA := testpeer.Dial(t, a.wsAddr())
	wsOnA.Auth("dev-token-alice")
	wsOnA.Send("type", "publish", "topic", topic, "data", "from the SDK on a", "msgRef", "r1")
	wsOnA.ExpectType("published")
	if _, p := mOnZ.expectPublish(); string(p) != "from the SDK on a" {
		t.Fatalf("MQTT on z got %q", p)
	}
}

// The same across two nodes on one embedded NATS server
// (BROKER_BACKEND=nats): an MQTT publish on one node reaches an MQTT
// subscriber on the other once the interest crossed.
func TestAcrossNATSNodes(t *testing.T) {
	ns := natstest.RunJetStream(t)
	node := func(id string) *node {
		b, err := natsbroker.New(natsbroker.Config{URLs: []string{ns.ClientURL()}, Node: id,
			Heartbeat: 100 * time.Millisecond, LivenessTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return startNode(t, func(c *testConfig) { c.Broker, c.NodeID = b, id })
	}
	a, z := node("a"), node("z")
	sub := connected(t, z.mqttAddr(), "dev-token-bob")
	sub.send(subscribePkt(1, "demo/general/#"))
	sub.expect(0x90)
	pub := connected(t, a.mqttAddr(), "dev-token-alice")
	deadline := time.Now().Add(5 * time.Second)
	for id := uint16(1); ; id++ { // until the subscription's interest reached node a
		pub.send(publishPkt(topic, 1, false, id, "over nats"))
		pub.expect(0x40)
		if f, body, err := sub.read(200 * time.Millisecond); err == nil {
			if f>>4 != 3 || !bytes.HasSuffix(body, []byte("over nats")) {
				t.Fatalf("got 0x%02x % x", f, body)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery across NATS within 5 s")
		}
	}
}

// A publish from another node keeps its QoS: each subscriber gets it at
// the minimum of the publish's QoS and its own [MQTT 3.1.1 §3.8.4], on the
// in-memory bus and over NATS. A QoS 0 publish on node a reaches QoS 1 and
// QoS 2 subscribers on node z at QoS 0, a QoS 2 publish a QoS 2 subscriber
// at QoS 2 and a QoS 1 subscriber at QoS 1, and a QoS 1 publish a QoS 2
// subscriber at QoS 1.
func TestQoSAcrossNodes(t *testing.T) {
	t.Run("membus", func(t *testing.T) {
		b := &membus.Bus{}
		a := startNode(t, func(c *testConfig) { c.Broker = b.Node("a"); c.NodeID = "a" })
		z := startNode(t, func(c *testConfig) { c.Broker = b.Node("z"); c.NodeID = "z" })
		qosAcrossNodes(t, a, z)
	})
	t.Run("nats", func(t *testing.T) {
		node := natsNodes(t)
		qosAcrossNodes(t, node("a"), node("z"))
	})
}

// natsNodes runs an embedded NATS server and returns a function starting a
// node with id on it (BROKER_BACKEND=nats).
func natsNodes(t *testing.T) func(id string) *node {
	ns := natstest.RunJetStream(t)
	return func(id string) *node {
		b, err := natsbroker.New(natsbroker.Config{URLs: []string{ns.ClientURL()}, Node: id,
			Heartbeat: 100 * time.Millisecond, LivenessTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return startNode(t, func(c *testConfig) { c.Broker, c.NodeID = b, id })
	}
}

func qosAcrossNodes(t *testing.T, a, z *node) {
	one := connected(t, z.mqttAddr(), "dev-token-bob")
	one.send(subscribeQoS(1, 1, topic))
	one.expect(0x90)
	two := connected(t, z.mqttAddr(), "dev-token-bob")
	two.send(subscribeQoS(1, 2, topic))
	if body := two.expect(0x90); !bytes.Equal(body, []byte{0, 1, 2}) {
		t.Fatalf("SUBACK % x, want QoS 2 granted", body)
	}
	pub := connected(t, a.mqttAddr(), "dev-token-alice")
	// Until both subscriptions' interest reached node a (over NATS it
	// takes a moment): QoS 1 probes, acknowledged.
	untilInterest(t, a, one)
	drainProbes(t, two)

	expectQoS := func(c *client, who string, want byte, payload string) {
		t.Helper()
		_, p, qos, id := c.expectPublishNoAck()
		if string(p) != payload || qos != want {
			t.Fatalf("%s got %q at QoS %d, want %q at QoS %d", who, p, qos, payload, want)
		}
		switch qos {
		case 1:
			c.send(ack(0x40, id))
		case 2:
			c.send(ack(0x50, id))
			c.expect(0x62)
			c.send(ack(0x70, id))
		}
	}

	pub.send(publishPkt(topic, 0, false, 0, "qos 0"))
	expectQoS(one, "QoS 1 subscriber", 0, "qos 0")
	expectQoS(two, "QoS 2 subscriber", 0, "qos 0")

	pub.send(publishPkt(topic, 2, false, 7, "qos 2"))
	pub.expect(0x50)
	pub.send(ack(0x62, 7))
	pub.expect(0x70)
	expectQoS(one, "QoS 1 subscriber", 1, "qos 2")
	expectQoS(two, "QoS 2 subscriber", 2, "qos 2")

	pub.send(publishPkt(topic, 1, false, 8, "qos 1"))
	pub.expect(0x40)
	expectQoS(one, "QoS 1 subscriber", 1, "qos 1")
	expectQoS(two, "QoS 2 subscriber", 1, "qos 1")
}

// drainProbes reads c's deliveries of "probe" until none comes for 300 ms,
// acknowledging each as its QoS asks.
func drainProbes(t *testing.T, c *client) {
	t.Helper()
	for {
		f, body, err := c.read(300 * time.Millisecond)
		if err != nil {
			return
		}
		if f>>4 != 3 || !bytes.HasSuffix(body, []byte("probe")) {
			t.Fatalf("got 0x%02x % x, want a probe", f, body)
		}
		switch (f >> 1) & 3 {
		case 1:
			c.send(ack(0x40, publishID(body)))
		case 2:
			id := publishID(body)
			c.send(ack(0x50, id))
			c.expect(0x62)
			c.send(ack(0x70, id))
		}
	}
}
