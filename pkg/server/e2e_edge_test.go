package server

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// dialFrom opens a TCP connection to s from the loopback address local
// (127.0.0.2, ...: another client address), closed when the test ends.
func dialFrom(t *testing.T, s *Server, local string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// upgradeStatus sends an upgrade request on c and returns the status and
// body of the answer.
func upgradeStatus(t *testing.T, c net.Conn) (int, string) {
	t.Helper()
	if _, err := io.WriteString(c, upgradeRequest()); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, body := readResponse(t, c, bufio.NewReader(c))
	return resp.StatusCode, body
}

// The edge limits, over real sockets from three client addresses: a third
// connection not authenticated yet from one address is refused with 429
// and the reason, while another address is still served; once one of the
// first two authenticates, the address gets one more; the node's total
// bound then refuses with 503. A refused connection counts until it
// closes, and each refusal is counted by reason.
func TestEdgeLimits(t *testing.T) {
	s := start(t, func(c *testConfig) {
		c.Limits = edge.Limits{MaxPendingPerAddress: 2, MaxConnections: 5}
	})
	// ended counts the connections whose end the node has accounted for:
	// the edge limits release a connection there, after the hub let go of
	// it.
	ended := func() (n uint64) {
		st := s.node.Stats()
		for k := range st.Closed {
			for _, c := range st.Closed[k] {
				n += c
			}
		}
		return n
	}
	authed(t, s, "dev-token-bob") // 127.0.0.1, authenticated: counts, not pending
	p1 := testpeer.DialFrom(t, s.Addr().String(), "127.0.0.1")
	testpeer.DialFrom(t, s.Addr().String(), "127.0.0.1")
	status, body := upgradeStatus(t, dialFrom(t, s, "127.0.0.1"))
	if status != 429 || !strings.Contains(body, "too many connections waiting to authenticate from your address (MAX_PENDING_PER_ADDRESS)") {
		t.Fatalf("a third pending connection from one address: %d %q, want 429 with the reason", status, body)
	}
	waitFor(t, 5*time.Second, func() bool { return ended() == 1 })               // the refused one is gone
	testpeer.DialFrom(t, s.Addr().String(), "127.0.0.2").Auth("dev-token-alice") // another address: served
	p1.Auth("dev-token-bob")
	if status, body := upgradeStatus(t, dialFrom(t, s, "127.0.0.1")); status != 101 {
		t.Fatalf("after one authenticated, the address's next connection: %d %q, want 101", status, body)
	}
	status, body = upgradeStatus(t, dialFrom(t, s, "127.0.0.3"))
	if status != 503 || !strings.Contains(body, "too many connections on this node (MAX_CONNECTIONS)") {
		t.Fatalf("a sixth connection: %d %q, want 503 with the reason", status, body)
	}
	if got := s.node.Refused(); got[edge.TooManyPendingFromAddress] != 1 || got[edge.TooManyConnections] != 1 {
		t.Fatalf("refused %v", got)
	}
}
