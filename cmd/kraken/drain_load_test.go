package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// The helpers below return errors instead of failing the test, so that the
// goroutines of a load test (one per client) can use them; the test's own
// goroutine reports what they return.

// loadWait bounds each network step of a load test's clients: generous, as
// the machine may be shared and the race detector slows both sides.
const loadWait = 30 * time.Second

// sendMap sends one masked binary frame holding the msgpack map of kv.
func sendMap(p *testpeer.Peer, kv ...any) error {
	_ = p.Conn.SetWriteDeadline(time.Now().Add(loadWait))
	return ws.WriteFrame(p.Conn, ws.MaskFrameInPlace(ws.NewBinaryFrame(testpeer.Map(kv...))))
}

// dialAuthed upgrades a connection to ws://addr/ws and authenticates it
// with token; the connection is closed when the test ends.
func dialAuthed(t *testing.T, addr, token string) (*testpeer.Peer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), loadWait)
	defer cancel()
	conn, br, _, err := ws.Dialer{}.Dial(ctx, "ws://"+addr+"/ws")
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	p := testpeer.New(t, conn, br)
	if err := sendMap(p, "type", "auth", "token", token); err != nil {
		return nil, fmt.Errorf("auth on %s: %w", addr, err)
	}
	f, err := p.Read(loadWait)
	if err != nil {
		return nil, fmt.Errorf("auth reply on %s: %w", addr, err)
	}
	if f.Type() != "auth" || f.Map["success"] != true {
		return nil, fmt.Errorf("auth on %s: %s", addr, f)
	}
	return p, nil
}

// subscribeTo subscribes p to topic and reads frames until the
// `subscribed` reply.
func subscribeTo(p *testpeer.Peer, topic string) error {
	if err := sendMap(p, "type", "subscribe", "topic", topic); err != nil {
		return err
	}
	for {
		f, err := p.Read(loadWait)
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", topic, err)
		}
		if f.Type() == "subscribed" && f.Map["topic"] == topic {
			return nil
		}
		if f.OpCode == ws.OpClose || f.Type() == "error" {
			return fmt.Errorf("subscribe %s: %s", topic, f)
		}
	}
}

// readClose reads frames until a close frame and returns its code and
// reason, and when it was read.
func readClose(p *testpeer.Peer, wait time.Duration) (ws.StatusCode, string, time.Time, error) {
	deadline := time.Now().Add(wait)
	for {
		f, err := p.Read(time.Until(deadline))
		if err != nil {
			return 0, "", time.Time{}, fmt.Errorf("no close frame: %w", err)
		}
		if f.OpCode == ws.OpClose {
			at := time.Now()
			code, reason := ws.ParseCloseFrameData(f.Payload)
			_ = p.Conn.Close()
			return code, reason, at, nil
		}
	}
}

// authedLoad opens n authenticated connections to addr, from a few
// goroutines at a time.
func authedLoad(t *testing.T, addr string, n int) []*testpeer.Peer {
	t.Helper()
	peers := make([]*testpeer.Peer, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				peers[i], errs[i] = dialAuthed(t, addr, "dev-token-bob")
			}
		}()
	}
	for i := range peers {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("opening %d connections: %v", n, err)
	}
	return peers
}

// waitDraining polls admin's /ready until it answers 503 "draining", and
// fails unless it does within wait of began.
func waitDraining(t *testing.T, admin string, began time.Time, wait time.Duration) {
	t.Helper()
	for {
		code, body := get(t, "http://"+admin+"/ready")
		if code == 503 && strings.Contains(body, `"draining"`) {
			return
		}
		if time.Since(began) > wait {
			t.Fatalf("admin /ready %v after SIGUSR2: %d %s, want 503 \"draining\" within %v", time.Since(began), code, body, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// expectUpgradeRefused fails unless a WebSocket upgrade to addr is answered
// with HTTP 503.
func expectUpgradeRefused(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), loadWait)
	defer cancel()
	conn, _, _, err := ws.Dialer{}.Dial(ctx, "ws://"+addr+"/ws")
	if err == nil {
		_ = conn.Close()
		t.Fatal("a new WebSocket connection was accepted during the drain")
	}
	var status ws.StatusError
	if !errors.As(err, &status) || int(status) != 503 {
		t.Fatalf("a new WebSocket connection during the drain: %v, want HTTP 503", err)
	}
}

// TestDrainThousandConnections asserts, on a broker process holding 1,000
// authenticated WebSocket connections with DRAIN_SECONDS=5, that after
// SIGUSR2:
//   - the admin /ready answers 503 "draining" within 500 ms of the signal;
//   - a new WebSocket upgrade during the drain is answered HTTP 503;
//   - every one of the 1,000 clients reads close 1012 "server shutting down";
//   - the closes are spread over the drain: counted in 1-second windows from
//     the signal, no window holds more than 40 % of them;
//   - the process exits with status 0 after the drain.
func TestDrainThousandConnections(t *testing.T) {
	const clients, drain = 1000, 5 * time.Second
	admin := "127.0.0.1:" + freePort(t)
	b := startBroker(t, "", "DRAIN_SECONDS=5", "ADMIN_ADDR="+admin, "LOG_LEVEL=warn")
	waitReady(t, admin)
	opened := time.Now()
	peers := authedLoad(t, b.addr, clients)
	t.Logf("%d connections opened and authenticated in %v", clients, time.Since(opened))

	type closed struct {
		code   ws.StatusCode
		reason string
		at     time.Time
		err    error
	}
	got := make([]closed, clients)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &got[i]
			c.code, c.reason, c.at, c.err = readClose(p, drain+60*time.Second)
		}()
	}

	began := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	waitDraining(t, admin, began, 500*time.Millisecond)
	expectUpgradeRefused(t, b.addr)
	wg.Wait()

	windows := map[int]int{}
	var last time.Duration
	for i, c := range got {
		if c.err != nil {
			t.Fatalf("client %d: %v", i, c.err)
		}
		if c.code != 1012 || c.reason != "server shutting down" {
			t.Fatalf("client %d: close %d %q, want 1012 \"server shutting down\"", i, c.code, c.reason)
		}
		after := c.at.Sub(began)
		windows[int(after/time.Second)]++
		last = max(last, after)
	}
	t.Logf("closes per 1-second window from SIGUSR2: %v; the last %v after it", windows, last)
	for w, n := range windows {
		if n*100 > clients*40 {
			t.Errorf("%d of the %d closes (over 40 %%) came in second %d of the drain: %v", n, clients, w, windows)
		}
	}
	expectExit0(t, b, drain+60*time.Second-time.Since(began), "SIGUSR2 with DRAIN_SECONDS=5")
	t.Logf("exited 0 by %v after SIGUSR2", time.Since(began))
}

// waitReady waits until admin's /ready answers 200.
func waitReady(t *testing.T, admin string) {
	t.Helper()
	deadline := time.Now().Add(loadWait)
	for {
		code, body := get(t, "http://"+admin+"/ready")
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin /ready: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestDrainClusterClientsMoveToOtherNodes asserts, on three broker
// processes joined by one embedded NATS server (BROKER_BACKEND=nats), that
// when node A, holding 60 clients subscribed to a topic, is drained
// (SIGUSR2, DRAIN_SECONDS=2):
//   - node A's admin /ready answers 503 "draining" within 2 s of the signal;
//   - every client reads close 1012 "server shutting down" from A;
//   - each then reconnects to node B or C (alternately, as a client with a
//     list of nodes would), authenticates and subscribes again, all
//     successfully;
//   - one message published on node B after that reaches all 60 clients on
//     their new nodes: no client was left without a node;
//   - node A exits with status 0.
func TestDrainClusterClientsMoveToOtherNodes(t *testing.T) {
	const clients, topic = 60, "demo/general/moved"
	nats := natstest.RunJetStream(t).ClientURL()
	var nodes []*broker
	var admins []string
	for _, id := range []string{"node-a", "node-b", "node-c"} {
		admin := "127.0.0.1:" + freePort(t)
		nodes = append(nodes, startBroker(t, "", "BROKER_BACKEND=nats", "NATS_URL="+nats, "NODE_ID="+id,
			"ADMIN_ADDR="+admin, "DRAIN_SECONDS=2", "LOG_LEVEL=warn"))
		admins = append(admins, admin)
	}
	for _, admin := range admins {
		waitReady(t, admin)
	}
	a := nodes[0]
	peers := authedLoad(t, a.addr, clients)
	for i, p := range peers {
		if err := subscribeTo(p, topic); err != nil {
			t.Fatalf("client %d on node A: %v", i, err)
		}
	}

	moved := make([]*testpeer.Peer, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, reason, _, err := readClose(p, loadWait)
			if err != nil {
				errs[i] = fmt.Errorf("client %d on node A: %w", i, err)
				return
			}
			if code != 1012 || reason != "server shutting down" {
				errs[i] = fmt.Errorf("client %d on node A: close %d %q, want 1012 \"server shutting down\"", i, code, reason)
				return
			}
			target := nodes[1+i%2]
			q, err := dialAuthed(t, target.addr, "dev-token-bob")
			if err == nil {
				err = subscribeTo(q, topic)
			}
			if err != nil {
				errs[i] = fmt.Errorf("client %d reconnecting: %w", i, err)
				return
			}
			moved[i] = q
		}()
	}
	began := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	waitDraining(t, admins[0], began, 2*time.Second)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("all %d clients moved to nodes B and C %v after SIGUSR2", clients, time.Since(began))

	publisher := testpeer.Dial(t, nodes[1].addr)
	publisher.Auth("dev-token-alice")
	publisher.Send("type", "publish", "topic", topic, "data", "after the drain")
	for i, q := range moved {
		for {
			f, err := q.Read(loadWait)
			if err != nil {
				t.Fatalf("client %d, moved to node %s: no message: %v", i, []string{"B", "C"}[i%2], err)
			}
			if f.Type() == "message" && f.Map["topic"] == topic && f.Map["data"] == "after the drain" {
				break
			}
		}
	}
	expectExit0(t, a, loadWait, "SIGUSR2 with DRAIN_SECONDS=2")
	t.Logf("node A exited 0 by %v after SIGUSR2", time.Since(began))
}
