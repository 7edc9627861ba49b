package listener_test

import (
	"bufio"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
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

// The accept rate per address: past the burst, a new connection gets
// CONNACK 3 and is closed, counted as rate, while another address is
// still served.
func TestAcceptRateRefusesWithConnack3(t *testing.T) {
	n := startNode(t, func(c *testConfig) { c.Limits = edge.Limits{AcceptRate: 1, AcceptBurst: 1} })
	first := dialFrom(t, n.mqttAddr(), "127.0.0.11")
	first.send(connectPkt(30, "device", "dev-token-bob"))
	if body := first.expect(0x20); body[1] != 0 {
		t.Fatalf("first connection: CONNACK % x", body)
	}
	refused := dialFrom(t, n.mqttAddr(), "127.0.0.11")
	refused.send(connectPkt(30, "device", "dev-token-bob"))
	if body := refused.expect(0x20); len(body) != 2 || body[1] != 3 {
		t.Fatalf("past the burst: CONNACK % x, want return code 3", body)
	}
	refused.expectClosed()
	other := dialFrom(t, n.mqttAddr(), "127.0.0.12")
	other.send(connectPkt(30, "device", "dev-token-bob"))
	if body := other.expect(0x20); body[1] != 0 {
		t.Fatalf("another address: CONNACK % x", body)
	}
	if got := n.node.Refused(); got[edge.TooFastFromAddress] != 1 {
		t.Fatalf("refused %v", got)
	}
}

// With PROXY_PROTOCOL=mqtt, the header's address is the one the limits
// count and the logs name: two clients behind one proxy address get their
// own pending bound, a second pending connection of one gets CONNACK 3;
// bytes that are not a header close the connection without an answer.
func TestProxyProtocolOnMQTT(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	n := startNodeWith(t, func(c *testConfig) {
		c.Logger = zap.New(core)
		c.Limits = edge.Limits{MaxPendingPerAddress: 1}
	}, func(c *listener.Config) { c.ProxyProtocol = true })
	pending := dialFrom(t, n.mqttAddr(), "127.0.0.13")
	pending.send([]byte("PROXY TCP4 198.51.100.1 10.0.0.1 1000 1883\r\n")) // and no CONNECT yet
	other := dialFrom(t, n.mqttAddr(), "127.0.0.13")
	other.send(append([]byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\xc6\x33\x64\x02\x0a\x00\x00\x01\x03\xe8\x07\x5b"),
		connectPkt(30, "device", "dev-token-bob")...)) // v2, from 198.51.100.2:1000
	if body := other.expect(0x20); body[1] != 0 {
		t.Fatalf("another client behind the proxy: CONNACK % x, want 0 (its own bound)", body)
	}
	refused := dialFrom(t, n.mqttAddr(), "127.0.0.13")
	refused.send(append([]byte("PROXY TCP4 198.51.100.1 10.0.0.1 1001 1883\r\n"), connectPkt(30, "device", "dev-token-bob")...))
	if body := refused.expect(0x20); len(body) != 2 || body[1] != 3 {
		t.Fatalf("the first client's second pending connection: CONNACK % x, want 3", body)
	}
	refused.expectClosed()
	_ = other.c.Close()
	waitFor(t, func() bool {
		for _, e := range logs.FilterMessage("connection closed").All() {
			if e.ContextMap()["remote_addr"] == "198.51.100.2:1000" {
				return true
			}
		}
		return false
	})

	bare := dialFrom(t, n.mqttAddr(), "127.0.0.13")
	bare.send(connectPkt(30, "device", "dev-token-bob"))
	bare.expectClosed()
}
