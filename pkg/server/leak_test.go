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
// authenticated and subscribed, one in ten of those a presence member),
// drops them all without a close frame, and checks that goroutines, file
// descriptors and tables return to where they started (no leak on abrupt
// disconnects).
//
// Every presence member in one room is told of every other's join, so the
// members are kept to 250 (31,000 presence frames, where 2,500 members made
// 3 million and a loaded machine took over a minute to write them). The
// waits end when the counts stop moving, not at a fixed time: a slow machine
// takes longer, a leak stops the count short and fails.
func TestAbruptDropsReturnEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 5,000 sockets")
	}
	s := start(t, func(c *testConfig) {
		c.Auth = presenceTokens()
		c.Hub.HandshakeTimeout = 10 * time.Minute // the half-sent requests must outlive the ramp and the waits (waitSettled)
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
			if i%20 == 0 {
				p.Send("type", "presence", "roomId", "general", "data", i)
			}
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
	waitSettled(t, "registered connections", n, func() int64 { return s.hub.Stats().Connections })
	for _, c := range conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, not FIN
		}
		_ = c.Close()
	}
	waitSettled(t, "connections, subscriptions and presence entries", 0, func() int64 {
		st := s.hub.Stats()
		rooms, members, watches := s.proto.PresenceStats()
		return st.Connections + st.Subscriptions + int64(rooms+members+watches)
	})
	waitFor(t, 20*time.Second, func() bool {
		return runtime.NumGoroutine() <= goroutines+2 && openFDs(t) <= fds+2
	})
}

// waitSettled waits until count() returns want. It fails when count has not
// moved for 20 s (the process is stuck or a record leaked) or after 5
// minutes in all.
func waitSettled(t testing.TB, what string, want int64, count func() int64) {
	t.Helper()
	const still, most = 20 * time.Second, 5 * time.Minute
	start := time.Now()
	last, moved := count(), start
	for last != want {
		time.Sleep(10 * time.Millisecond)
		now, c := time.Now(), count()
		if c != last {
			last, moved = c, now
		}
		if now.Sub(moved) > still || now.Sub(start) > most {
			t.Fatalf("%s: %d after %v (want %d; unchanged for %v)",
				what, last, now.Sub(start).Round(time.Millisecond), want, now.Sub(moved).Round(time.Millisecond))
		}
	}
}
