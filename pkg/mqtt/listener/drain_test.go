package listener_test

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A drain (node.Node.Drain) closes the MQTT connections too, with no
// packet before the close (MQTT 3.1.1 has none for it), and closes new
// ones as they are accepted.
func TestDrainClosesMQTTConnections(t *testing.T) {
	n := startNode(t, nil)
	clients := make([]*client, 4)
	for i := range clients {
		clients[i] = dial(t, n.mqttAddr())
		clients[i].send(connectPkt(30, "device", "dev-token-bob"))
		if body := clients[i].expect(0x20); !bytes.Equal(body, []byte{0, 0}) {
			t.Fatalf("CONNACK % x", body)
		}
	}
	done := make(chan error, 1)
	go func() { done <- n.node.Drain(context.Background(), 300*time.Millisecond) }()
	for _, c := range clients {
		c.expectClosed()
	}
	if err := <-done; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	dial(t, n.mqttAddr()).expectClosed() // closed as accepted: nothing to send it

}
