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
