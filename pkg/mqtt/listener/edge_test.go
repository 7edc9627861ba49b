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

// connectFrom connects from the loopback address local with a valid
// token, prefix first (a PROXY protocol header, or nil), and returns the
// client and the CONNACK's return code.
func connectFrom(t *testing.T, addr, local string, prefix []byte) (*client, byte) {
	t.Helper()
	c := dialFrom(t, addr, local)
	c.send(append(append([]byte(nil), prefix...), connectPkt(30, "device", "dev-token-bob")...))
	body := c.expect(0x20)
	if len(body) != 2 {
		t.Fatalf("CONNACK % x", body)
	}
	return c, body[1]
}

// refusedFrom is connectFrom for a connection the edge limits refuse: it
// fails unless the CONNACK says 3 (server unavailable) and the connection
// closes, and, with other, unless a connection from the loopback address
// other is still served.
func refusedFrom(t *testing.T, addr, local string, prefix []byte, other string) {
	t.Helper()
	refused, code := connectFrom(t, addr, local, prefix)
	if code != 3 {
		t.Fatalf("CONNACK return code %d, want 3", code)
	}
	refused.expectClosed()
	if other != "" {
		if _, code := connectFrom(t, addr, other, nil); code != 0 {
			t.Fatalf("another address: CONNACK return code %d", code)
		}
	}
}

// An MQTT connection the edge limits refuse gets CONNACK 3 (server
// unavailable) and is closed, while another address is still served.
func TestEdgeLimitsRefuseWithConnack3(t *testing.T) {
	n := startNode(t, func(c *testConfig) { c.Limits = edge.Limits{MaxPendingPerAddress: 1} })
	dialFrom(t, n.mqttAddr(), "127.0.0.1") // sends nothing: pending
	refusedFrom(t, n.mqttAddr(), "127.0.0.1", nil, "127.0.0.2")
	if got := n.node.Refused(); got[edge.TooManyPendingFromAddress] != 1 {
		t.Fatalf("refused %v", got)
	}
}

// The accept rate per address: past the burst, a new connection gets
// CONNACK 3 and is closed, counted as rate, while another address is
// still served.
func TestAcceptRateRefusesWithConnack3(t *testing.T) {
	n := startNode(t, func(c *testConfig) { c.Limits = edge.Limits{AcceptRate: 1, AcceptBurst: 1} })
	if _, code := connectFrom(t, n.mqttAddr(), "127.0.0.11", nil); code != 0 {
		t.Fatalf("first connection: CONNACK return code %d", code)
	}
	refusedFrom(t, n.mqttAddr(), "127.0.0.11", nil, "127.0.0.12")
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
	other, code := connectFrom(t, n.mqttAddr(), "127.0.0.13",
		[]byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c\xc6\x33\x64\x02\x0a\x00\x00\x01\x03\xe8\x07\x5b")) // v2, from 198.51.100.2:1000
	if code != 0 {
		t.Fatalf("another client behind the proxy: CONNACK return code %d, want 0 (its own bound)", code)
	}
	// The first client's second pending connection.
	refusedFrom(t, n.mqttAddr(), "127.0.0.13", []byte("PROXY TCP4 198.51.100.1 10.0.0.1 1001 1883\r\n"), "")
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
