package server

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// closeTimes reads every peer until its close frame, from one goroutine
// per peer (the test's), and returns when each read it, its code and
// reason; a peer whose connection ends without one reports code 0.
func closeTimes(peers []*testpeer.Peer, wait time.Duration) ([]time.Time, []ws.StatusCode, []string) {
	at := make([]time.Time, len(peers))
	codes := make([]ws.StatusCode, len(peers))
	reasons := make([]string, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(wait)
			for {
				f, err := p.Read(time.Until(deadline))
				if err != nil {
					return
				}
				if f.OpCode == ws.OpClose {
					at[i] = time.Now()
					codes[i], reasons[i] = ws.ParseCloseFrameData(f.Payload)
					_ = p.Conn.Close()
					return
				}
			}
		}()
	}
	wg.Wait()
	return at, codes, reasons
}

// authedPeers opens n authenticated connections to s.
func authedPeers(t *testing.T, s *Server, n int) []*testpeer.Peer {
	t.Helper()
	peers := make([]*testpeer.Peer, n)
	for i := range peers {
		peers[i] = authed(t, s, "dev-token-alice")
	}
	waitFor(t, 5*time.Second, func() bool { return s.node.Hub().Stats().Connections == int64(n) })
	return peers
}

// expectAllShutdownCloses fails unless every peer read close 1012 "server
// shutting down" (never 1001: case 001).
func expectAllShutdownCloses(t *testing.T, codes []ws.StatusCode, reasons []string) {
	t.Helper()
	for i := range codes {
		if codes[i] != disconnect.StatusServiceRestart || reasons[i] != "server shutting down" {
			t.Fatalf("peer %d: close %d %q, want %d %q", i, codes[i], reasons[i],
				disconnect.StatusServiceRestart, "server shutting down")
		}
	}
}

// TestDrainSpreadsTheCloses: Drain over 2 s makes /ready answer 503
// "draining" at once (to a probe connected before, and to a new one),
// refuses new WebSocket connections with 503, and closes the 300 live
// ones with 1012 "server shutting down", spread: no 500 ms window holds
// more than 40 % of the closes.
func TestDrainSpreadsTheCloses(t *testing.T) {
	const n = 300
	s := start(t, nil)
	peers := authedPeers(t, s, n)
	probe := dialTCP(t, s) // a load balancer's connection, open before the drain

	drained := make(chan error, 1)
	began := time.Now()
	go func() { drained <- s.node.Drain(context.Background(), 2*time.Second) }()
	waitFor(t, time.Second, func() bool { return s.node.Draining() })
	if _, err := io.WriteString(probe, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, body := readResponse(t, probe, bufio.NewReader(probe))
	if resp.StatusCode != 503 || !strings.Contains(body, `"draining"`) {
		t.Fatalf("/ready while draining: %d %s", resp.StatusCode, body)
	}
	if waited := time.Since(began); waited > 500*time.Millisecond {
		t.Errorf("/ready answered draining after %v", waited)
	}
	if resp, body := httpExchange(t, s, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n"); resp.StatusCode != 503 ||
		body != `{"status":"not_ready","failing":["draining"]}` {
		t.Fatalf("a new /ready while draining: %d %s", resp.StatusCode, body)
	}
	late := dialTCP(t, s)
	if _, err := io.WriteString(late, upgradeRequest()); err != nil {
		t.Fatal(err)
	}
	lateBR := bufio.NewReader(late)
	if resp, body := readResponse(t, late, lateBR); resp.StatusCode != 503 || !strings.Contains(body, "draining") {
		t.Fatalf("an upgrade while draining: %d %s", resp.StatusCode, body)
	}
	expectClosedBy(t, late, lateBR, 5*time.Second)

	at, codes, reasons := closeTimes(peers, 10*time.Second)
	expectAllShutdownCloses(t, codes, reasons)
	if err := <-drained; err != nil {
		t.Fatalf("Drain: %v", err)
	}
	slices.SortFunc(at, func(a, b time.Time) int { return a.Compare(b) })
	most := 0
	for i := range at {
		j := i
		for j < len(at) && at[j].Sub(at[i]) < 500*time.Millisecond {
			j++
		}
		most = max(most, j-i)
	}
	t.Logf("at most %d of %d closes in a 500 ms window; closes from %v to %v after the start",
		most, n, at[0].Sub(began), at[n-1].Sub(began))
	if most > n*40/100 {
		t.Errorf("%d of %d closes in one 500 ms window (first %v, last %v after the start)",
			most, n, at[0].Sub(began), at[n-1].Sub(began))
	}
	if spread := at[n-1].Sub(at[0]); spread < time.Second || spread > 4*time.Second {
		t.Errorf("closes spread over %v, want about 1.9 s", spread)
	}
}

// TestDrainAtOnce: Drain over 0 closes every connection at once with 1012,
// and a second Drain is refused.
func TestDrainAtOnce(t *testing.T) {
	const n = 50
	s := start(t, nil)
	peers := authedPeers(t, s, n)
	began := time.Now()
	if err := s.node.Drain(context.Background(), 0); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	at, codes, reasons := closeTimes(peers, 5*time.Second)
	expectAllShutdownCloses(t, codes, reasons)
	for i := range at {
		if d := at[i].Sub(began); d > time.Second {
			t.Fatalf("peer %d closed %v after the start", i, d)
		}
	}
	if err := s.node.Drain(context.Background(), 0); err == nil {
		t.Error("a second Drain was accepted")
	}
}

// TestDrainCutShort: a drain whose context ends (SIGTERM during a drain)
// returns at once, and Shutdown closes the rest with 1012.
func TestDrainCutShort(t *testing.T) {
	const n = 40
	s := start(t, nil)
	peers := authedPeers(t, s, n)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := s.node.Drain(ctx, time.Minute); err != context.DeadlineExceeded {
		t.Fatalf("Drain = %v, want the context's end", err)
	}
	if left := s.node.Hub().Stats().Connections; left < n/2 {
		t.Errorf("%d of %d connections left after 300 ms of a minute's drain", left, n)
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	go func() { _ = s.node.Shutdown(sctx) }()
	_, codes, reasons := closeTimes(peers, 5*time.Second)
	expectAllShutdownCloses(t, codes, reasons)
}
