package server

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Idle timeout, slow consumers and shutdown (wire-reference.md §1.2, §1.5;
// decisions.md D-5, OQ-44).

func TestIdleConnectionIsClosedWithIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := start(t, func(c *testConfig) { c.Hub.IdleTimeout = idle })
	p := authed(t, s, "dev-token-alice")
	began := time.Now()
	expectCloseCode(t, p, disconnect.IdleTimeout.Code(), "idle_timeout")
	if elapsed := time.Since(began); elapsed < idle-50*time.Millisecond {
		t.Fatalf("closed after %v, before the %v idle timeout", elapsed, idle)
	}
	p.ExpectEOF(5 * time.Second)
	waitFor(t, 2*time.Second, func() bool { return s.hub.Stats().IdleClosed >= 1 })
}

func TestIdleTimeoutAppliesBeforeAuth(t *testing.T) {
	s := start(t, func(c *testConfig) { c.Hub.IdleTimeout = 300 * time.Millisecond })
	p := testpeer.Dial(t, s.Addr().String())
	expectCloseCode(t, p, disconnect.IdleTimeout.Code(), "idle_timeout")
}

func TestHeartbeatsKeepTheConnectionAlive(t *testing.T) {
	const idle = 300 * time.Millisecond
	s := start(t, func(c *testConfig) { c.Hub.IdleTimeout = idle })
	p := authed(t, s, "dev-token-alice")
	for until := time.Now().Add(3 * idle); time.Now().Before(until); {
		p.SendBinary(nil)
		if f := p.Expect(); f.OpCode != ws.OpBinary || len(f.Payload) != 0 {
			t.Fatalf("heartbeat reply = %s, want an empty binary frame", f)
		}
		time.Sleep(idle / 4) // the client's heartbeat period
	}
	expectCloseCode(t, p, disconnect.IdleTimeout.Code(), "idle_timeout") // once they stop
}

func TestSlowConsumerIsClosedWhileOthersKeepReceiving(t *testing.T) {
	s := startWith(t, fastTokens(1_000_000), func(c *testConfig) { c.Hub.OutboundMaxBytes = 64 << 10 })
	slow := testpeer.Dial(t, s.Addr().String())
	slow.Auth("dev-token-bob")
	subscribe(t, slow, "demo/general/flood")
	normal := authed(t, s, "dev-token-bob")
	subscribe(t, normal, "demo/general/flood")
	pub := authed(t, s, "dev-token-alice")

	payload := bytes.Repeat([]byte{'p'}, 8<<10)
	sent := 0
	// Lockstep with the normal subscriber: it never has more than one
	// message queued, while the slow one (which reads nothing) piles up.
	for s.hub.Stats().SlowConsumers == 0 {
		if sent == 5000 {
			t.Fatalf("no slow consumer after %d messages of 8 KiB", sent)
		}
		pub.Send("type", "publish", "topic", "demo/general/flood", "data", payload)
		m := normal.ExpectType("message")
		if d, _ := m.Map["data"].([]byte); len(d) != len(payload) {
			t.Fatalf("message %d: data of %d bytes, want %d", sent, len(d), len(payload))
		}
		sent++
	}
	// The server has closed the socket: what the kernel buffered drains, then
	// EOF (a close frame cannot be promised, the socket being full).
	expectClosedBy(t, slow.Conn, slow.Conn, 10*time.Second)
	if got := s.hub.Stats().SlowConsumers; got != 1 {
		t.Fatalf("SlowConsumers = %d, want 1 (the normal subscriber kept up)", got)
	}
	pub.Send("type", "publish", "topic", "demo/general/flood", "data", "after")
	normal.ExpectFields("type", "message", "topic", "demo/general/flood", "data", "after")
}

// Shutdown closes with 1012, never 1001: the Python SDK treats 1000 and
// 1001 as final and would never reconnect (case 001, D-5 amended).
func TestShutdownClosesConnectionsWith1012(t *testing.T) {
	s := start(t, nil)
	open := testpeer.Dial(t, s.Addr().String())
	expectPong(t, open) // registered before the shutdown starts
	authenticated := authed(t, s, "dev-token-alice")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.node.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	expectCloseCode(t, authenticated, 1012, "server shutting down")
	expectCloseCode(t, open, 1012, "server shutting down")
	authenticated.ExpectEOF(5 * time.Second)
}
