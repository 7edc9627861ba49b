package server

import (
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(entries)
}

// TestAbruptDropsReturnEverything opens 5,000 connections (half of them
// authenticated and subscribed), drops them all without a close frame, and
// checks that goroutines, file descriptors and tables return to where they
// started (no leak on abrupt disconnects).
func TestAbruptDropsReturnEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 5,000 sockets")
	}
	s := start(t, func(c *testConfig) {
		c.Auth = presenceTokens()
		c.Hub.HandshakeTimeout = time.Minute // the half-sent requests must outlive the ramp
	})
	addr := s.Addr().String()
	// Warm up netpoll's pollers and the pools before counting.
	warm := testpeer.Dial(t, addr)
	warm.Auth("dev-token-bob")
	_ = warm.Conn.Close()
	waitFor(t, 5*time.Second, func() bool { return s.hub.Stats().Connections == 0 })
	goroutines, fds := runtime.NumGoroutine(), openFDs(t)

	const n = 5000
	conns := make([]net.Conn, 0, n)
	upgrade := []byte(upgradeRequest())
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			p := testpeer.Dial(t, addr)
			p.Auth("dev-token-bob")
			p.Send("type", "subscribe", "topic", "demo/general/drop")
			p.Send("type", "presence", "roomId", "general", "data", i)
			conns = append(conns, p.Conn)
			continue
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Write(upgrade[:len(upgrade)/2]) // half a request, then gone
		conns = append(conns, c)
	}
	// Generous: on a loaded 2-core machine under -race the accepts of 5,000
	// queued connections have taken more than 20 s.
	waitFor(t, 60*time.Second, func() bool { return s.hub.Stats().Connections == n })
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, not FIN
		}
		_ = c.Close()
	}
	waitFor(t, 20*time.Second, func() bool {
		st := s.hub.Stats()
		rooms, members, watches := s.proto.PresenceStats()
		return st.Connections == 0 && st.Subscriptions == 0 && rooms+members+watches == 0
	})
	waitFor(t, 20*time.Second, func() bool {
		return runtime.NumGoroutine() <= goroutines+2 && openFDs(t) <= fds+2
	})
}
