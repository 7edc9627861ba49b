package listener_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// publishID is the Packet Identifier of body, the body of a QoS 1 or 2
// PUBLISH on topic.
func publishID(body []byte) uint16 { return uint16(body[2+len(topic)])<<8 | uint16(body[3+len(topic)]) }

// ack is an acknowledgement packet (PUBACK 0x40, PUBREC 0x50, PUBREL 0x62,
// PUBCOMP 0x70) for id.
func ack(first byte, id uint16) []byte { return []byte{first, 2, byte(id >> 8), byte(id)} }

// Inbound QoS 2 is exactly once: PUBREC answers the PUBLISH, a
// retransmitted PUBLISH with the same Packet Identifier (DUP set) before
// the PUBREL is answered again and not published again, PUBREL gets
// PUBCOMP, and afterwards the identifier carries a new message (MQTT 3.1.1
// §4.3.3).
func TestInboundQoS2ExactlyOnce(t *testing.T) {
	n := startNode(t, nil)
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", topic)
	ws.ExpectType("subscribed")

	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(publishPkt(topic, 2, false, 5, "once"))
	if body := m.expect(0x50); !bytes.Equal(body, []byte{0, 5}) {
		t.Fatalf("PUBREC % x", body)
	}
	dup := publishPkt(topic, 2, false, 5, "once")
	dup[0] |= 0x08 // DUP
	m.send(dup)
	if body := m.expect(0x50); !bytes.Equal(body, []byte{0, 5}) {
		t.Fatalf("PUBREC of the retransmission % x", body)
	}
	m.send(ack(0x62, 5))
	if body := m.expect(0x70); !bytes.Equal(body, []byte{0, 5}) {
		t.Fatalf("PUBCOMP % x", body)
	}
	if f := ws.ExpectType("message"); string(f.Map["data"].([]byte)) != "once" {
		t.Fatalf("data %v", f.Map["data"])
	}
	m.send(publishPkt(topic, 2, false, 5, "again")) // identifier free again: a new message
	m.expect(0x50)
	m.send(ack(0x62, 5))
	m.expect(0x70)
	if f := ws.ExpectType("message"); string(f.Map["data"].([]byte)) != "again" {
		t.Fatalf("data %v, want the second message", f.Map["data"])
	}
	ws.ExpectNothing(100 * time.Millisecond)
}

// Outbound QoS 2: a QoS 2 subscription is granted 2; a QoS 2 publish
// reaches it as a QoS 2 PUBLISH, PUBREC is answered with PUBREL, and the
// slot is free after PUBCOMP; a QoS 1 publish reaches it at QoS 1
// (min(publish, subscription), §3.8.4), and a QoS 1 subscriber gets the
// QoS 2 publish at 1.
func TestOutboundQoS2(t *testing.T) {
	n := startNodeWith(t, nil, func(c *listener.Config) { c.MaxInflight = 1 })
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribeQoS(1, 2, topic))
	if body := m.expect(0x90); !bytes.Equal(body, []byte{0, 1, 2}) {
		t.Fatalf("SUBACK % x, want QoS 2 granted", body)
	}
	one := connected(t, n.mqttAddr(), "dev-token-bob")
	one.send(subscribeQoS(1, 1, topic))
	one.expect(0x90)

	pub := connected(t, n.mqttAddr(), "dev-token-alice")
	pub.send(publishPkt(topic, 2, false, 9, "two"))
	pub.expect(0x50)
	pub.send(ack(0x62, 9))
	pub.expect(0x70)
	_, p, q, id := m.expectPublishNoAck()
	if q != 2 || string(p) != "two" {
		t.Fatalf("QoS 2 subscriber got qos %d %q", q, p)
	}
	if _, p, q, _ := one.expectPublishNoAck(); q != 1 || string(p) != "two" {
		t.Fatalf("QoS 1 subscriber got qos %d %q", q, p)
	}
	pub.send(publishPkt(topic, 1, false, 10, "one"))
	pub.expect(0x40)
	m.expectNothing(100 * time.Millisecond) // the window of 1 holds the QoS 2 message until PUBCOMP
	m.send(ack(0x50, id))
	if body := m.expect(0x62); !bytes.Equal(body, []byte{byte(id >> 8), byte(id)}) {
		t.Fatalf("PUBREL % x for id %d", body, id)
	}
	m.expectNothing(100 * time.Millisecond) // PUBREL sent, PUBCOMP not yet: still in flight
	m.send(ack(0x70, id))
	if _, p, q, _ := m.expectPublishNoAck(); q != 1 || string(p) != "one" {
		t.Fatalf("after PUBCOMP got qos %d %q, want the QoS 1 message", q, p)
	}
}

// A subscriber that acknowledges nothing while messages wait behind its
// full window is closed as a slow consumer once the hub's write deadline
// passes, even below the queue bound.
func TestInflightWriteDeadline(t *testing.T) {
	n := startNodeWith(t, func(c *testConfig) { c.Hub.WriteTimeout = 200 * time.Millisecond },
		func(c *listener.Config) { c.MaxInflight = 1 })
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribePkt(1, topic))
	m.expect(0x90)
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "publish", "topic", topic, "data", "1", "echo", false)
	ws.Send("type", "publish", "topic", topic, "data", "2", "echo", false) // waits
	m.expectPublishNoAck()
	m.expectNothing(300 * time.Millisecond) // past the deadline, nothing acknowledged
	ws.Send("type", "publish", "topic", topic, "data", "3", "echo", false)
	m.expectClosed()
	waitFor(t, func() bool { return n.node.Stats().Hub.SlowConsumers == 1 })
}

// TestInflightOrderUnderConcurrentAcks: a subscriber with a window of 4
// acknowledges each PUBLISH as soon as it reads it, so acknowledgements
// free slots on the reader while the worker delivers and drains; under the
// race detector, every message arrives once and in publish order.
func TestInflightOrderUnderConcurrentAcks(t *testing.T) {
	const total = 3000
	n := startNodeWith(t, func(c *testConfig) { c.RateLimit = 100000 }, func(c *listener.Config) { c.MaxInflight = 4 })
	m := connected(t, n.mqttAddr(), "dev-token-bob")
	m.send(subscribeQoS(1, 1, topic))
	m.expect(0x90)
	pubs := make([]*testpeer.Peer, 2)
	for i := range pubs {
		pubs[i] = testpeer.Dial(t, n.wsAddr())
		pubs[i].Auth("dev-token-alice")
	}
	go func() {
		for i := range total {
			// two publishers, one sequence each: order holds per publisher
			pubs[i%2].Send("type", "publish", "topic", topic, "data", fmt.Sprintf("%d:%d", i%2, i/2), "echo", false)
		}
	}()
	next := [2]int{}
	for range total {
		_, p, q, id := m.expectPublishNoAck()
		if q != 1 {
			t.Fatalf("qos %d", q)
		}
		m.send(ack(0x40, id))
		var who, seq int
		if _, err := fmt.Sscanf(string(p), "%d:%d", &who, &seq); err != nil {
			t.Fatalf("payload %q", p)
		}
		if seq != next[who] {
			t.Fatalf("publisher %d: got message %d, want %d (order lost)", who, seq, next[who])
		}
		next[who]++
	}
	m.expectNothing(100 * time.Millisecond)
}
