package listener_test

import (
	"bytes"
	"testing"

	"github.com/gobwas/ws"
)

// wsConnected is a raw MQTT-over-WebSocket client that sent a CONNECT with
// identifier id and the Clean Session flag clean, and read its CONNACK;
// it returns the CONNACK's session present.
func wsConnected(t *testing.T, n *node, id string, clean bool) (*wsClient, bool) {
	t.Helper()
	w := dialWS(t, n.wsAddr(), "mqtt")
	w.send(connectID(id, "dev-token-bob", clean))
	body := w.expect(0x20)
	if len(body) != 2 || body[1] != 0 {
		t.Fatalf("CONNACK % x", body)
	}
	return w, body[0]&1 == 1
}

// Over WebSocket, the flags of a QoS 2 delivery and of a resent one are
// set in the MQTT packet, not in the frame header around it: a QoS 2
// PUBLISH is 0x34 in its frame, PUBREC gets a framed PUBREL, and a
// persistent session resumed on /mqtt resends the unacknowledged PUBLISH
// with DUP (0x3a) before what it kept.
func TestMQTTOverWebSocketQoS2AndSession(t *testing.T) {
	n := startNode(t, nil)
	pub := publisher(t, n)
	w, _ := wsConnected(t, n, "ws-dev", false)
	w.send(subscribeQoS(1, 2, topic))
	if body := w.expect(0x90); !bytes.Equal(body, []byte{0, 1, 2}) {
		t.Fatalf("SUBACK % x", body)
	}
	m := connected(t, n.mqttAddr(), "dev-token-alice")
	m.send(publishPkt(topic, 2, false, 3, "exactly"))
	m.expect(0x50)
	m.send(ack(0x62, 3))
	m.expect(0x70)
	body := w.expect(0x34) // QoS 2 PUBLISH, one whole packet in one binary frame
	id := publishID(body)
	w.send(ack(0x50, id))
	if got := w.expect(0x62); !bytes.Equal(got, []byte{byte(id >> 8), byte(id)}) {
		t.Fatalf("PUBREL % x", got)
	}
	w.send(ack(0x70, id))

	pub("unacked") // an SDK publish, QoS 1: delivered at min(1, 2) = 1
	body = w.expect(0x32)
	id = publishID(body)
	w.frame(true, ws.OpClose, ws.NewCloseFrameBody(ws.StatusGoingAway, "")) // dropped, no DISCONNECT
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	pub("while away")

	w, present := wsConnected(t, n, "ws-dev", false)
	if !present {
		t.Fatal("session present 0 over WebSocket")
	}
	body = w.expect(0x3a) // QoS 1, DUP
	if got := publishID(body); got != id || !bytes.HasSuffix(body, []byte("unacked")) {
		t.Fatalf("resent % x, want id %d and the unacknowledged message", body, id)
	}
	w.send(ack(0x40, id))
	if body = w.expect(0x32); !bytes.HasSuffix(body, []byte("while away")) {
		t.Fatalf("kept % x", body)
	}

	// A plain-MQTT CONNECT of the same identity after a WebSocket drop
	// starts anew: the session's frames are WebSocket ones.
	w.frame(true, ws.OpClose, ws.NewCloseFrameBody(ws.StatusGoingAway, ""))
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	if _, present := sessionClient(t, n, "ws-dev", false); present {
		t.Fatal("a plain-MQTT connection resumed a WebSocket-framed session")
	}
}

// A live Clean Session 0 connection taken over from the other transport
// (plain MQTT by MQTT over WebSocket, and the reverse) is closed and its
// session discarded: the new one gets a CONNACK of its own framing with
// session present 0, and nothing framed for the other transport.
func TestTakeoverAcrossTransportsStartsANewSession(t *testing.T) {
	n := startNode(t, nil)
	pub := publisher(t, n)
	plain, _ := sessionClient(t, n, "x-1", false)
	plain.send(subscribePkt(1, topic))
	plain.expect(0x90)
	pub("for plain")
	plain.expectPublishNoAck() // unacknowledged: it would be resent in its session
	w, present := wsConnected(t, n, "x-1", false)
	if present {
		t.Fatal("a WebSocket CONNECT resumed a plain-MQTT session")
	}
	plain.expectClosed()
	w.send(pkt(0xc0)) // PINGREQ: the next frame is the PINGRESP, in a frame of its own
	w.expect(0xd0)

	w.send(subscribePkt(2, topic))
	w.expect(0x90)
	pub("for ws")
	w.expect(0x32) // not acknowledged
	plain, present = sessionClient(t, n, "x-1", false)
	if present {
		t.Fatal("a plain-MQTT CONNECT resumed a WebSocket session")
	}
	plain.send(pkt(0xc0))
	plain.expect(0xd0) // not a WebSocket frame
	w.expectClose()
}

// A live Clean Session 0 connection over WebSocket taken over by another
// over WebSocket hands its session over: the waiting CONNECT's CONNACK
// (session present 1) comes in a frame, then the unacknowledged PUBLISH
// with DUP.
func TestTakeoverOverWebSocketTakesTheSession(t *testing.T) {
	n := startNode(t, nil)
	pub := publisher(t, n)
	first, _ := wsConnected(t, n, "w-1", false)
	first.send(subscribePkt(1, topic))
	first.expect(0x90)
	pub("pending")
	first.expect(0x32) // not acknowledged
	second, present := wsConnected(t, n, "w-1", false)
	if !present {
		t.Fatal("the takeover got session present 0")
	}
	if body := second.expect(0x3a); !bytes.HasSuffix(body, []byte("pending")) {
		t.Fatalf("resent % x", body)
	}
	first.expectClose()
}
