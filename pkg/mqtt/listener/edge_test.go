package listener_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/edge"
)

// dialFrom is dial from the loopback address local (another client
// address).
func dialFrom(t *testing.T, addr, local string) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

// An MQTT connection the edge limits refuse gets CONNACK 3 (server
// unavailable) and is closed, while another address is still served.
func TestEdgeLimitsRefuseWithConnack3(t *testing.T) {
	n := startNode(t, func(c *testConfig) { c.Limits = edge.Limits{MaxPendingPerAddress: 1} })
	dialFrom(t, n.mqttAddr(), "127.0.0.1") // sends nothing: pending
	refused := dialFrom(t, n.mqttAddr(), "127.0.0.1")
	refused.send(connectPkt(30, "device", "dev-token-bob"))
	if body := refused.expect(0x20); len(body) != 2 || body[1] != 3 {
		t.Fatalf("CONNACK % x, want return code 3", body)
	}
	refused.expectClosed()
	other := dialFrom(t, n.mqttAddr(), "127.0.0.2")
	other.send(connectPkt(30, "device", "dev-token-bob"))
	if body := other.expect(0x20); body[1] != 0 {
		t.Fatalf("another address: CONNACK % x", body)
	}
	if got := n.node.Refused(); got[edge.TooManyPendingFromAddress] != 1 {
		t.Fatalf("refused %v", got)
	}
}
