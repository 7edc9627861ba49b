package main

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// drainClients opens n authenticated connections to b.
func drainClients(t *testing.T, b *broker, n int) []*testpeer.Peer {
	t.Helper()
	peers := make([]*testpeer.Peer, n)
	for i := range peers {
		peers[i] = testpeer.Dial(t, b.addr)
		peers[i].Auth("dev-token-bob")
	}
	return peers
}

// expectDrainCloses fails unless every peer reads close 1012 "server
// shutting down" (never 1001: case 001).
func expectDrainCloses(t *testing.T, peers []*testpeer.Peer) {
	t.Helper()
	for i, p := range peers {
		if code, reason := p.ExpectClose(); code != 1012 || reason != "server shutting down" {
			t.Fatalf("client %d: close %d %q, want 1012 \"server shutting down\"", i, code, reason)
		}
	}
}

// expectExit0 fails unless the broker exits with status 0 within wait.
func expectExit0(t *testing.T, b *broker, wait time.Duration, what string) {
	t.Helper()
	select {
	case err := <-b.done:
		b.done <- err
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, b.stderr)
		}
	case <-time.After(wait):
		t.Fatalf("no exit within %v of %s\n%s", wait, what, b.stderr)
	}
}

// TestServeSIGUSR2Drains: SIGUSR2 makes /ready answer 503 "draining" at
// once, on the admin listener and on the WebSocket port, closes the clients with 1012 over DRAIN_SECONDS
// (2) and exits 0 after the usual shutdown.
func TestServeSIGUSR2Drains(t *testing.T) {
	admin := "127.0.0.1:" + freePort(t)
	b := startBroker(t, "", "DRAIN_SECONDS=2", "ADMIN_ADDR="+admin)
	b.waitLogs(t, "admin listener", 1)
	if _, body := get(t, "http://"+admin+"/metrics"); !strings.Contains(body, "\nkraken_draining 0\n") {
		t.Errorf("/metrics before the drain has no kraken_draining 0")
	}
	peers := drainClients(t, b, 4)
	began := time.Now()
	if err := b.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		code, body := get(t, "http://"+admin+"/ready")
		if code == 503 && strings.Contains(body, `"draining"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin /ready 1 s after SIGUSR2: %d %s", code, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := get(t, "http://"+b.addr+"/ready"); code != 503 || !strings.Contains(body, `"draining"`) {
		t.Errorf("WebSocket port's /ready while draining: %d %s", code, body)
	}
	if _, body := get(t, "http://"+admin+"/metrics"); !strings.Contains(body, "\nkraken_draining 1\n") {
		t.Errorf("/metrics while draining has no kraken_draining 1")
	}
	expectDrainCloses(t, peers)
	expectExit0(t, b, 2*time.Second+5*time.Second-time.Since(began), "SIGUSR2 with DRAIN_SECONDS=2")
	if took := time.Since(began); took < time.Second {
		t.Errorf("exited %v after SIGUSR2: the closes were not spread over DRAIN_SECONDS", took)
	}
	b.waitLogs(t, "SIGUSR2: draining", 1)
}

// TestServeSIGTERMFinishesADrain: a SIGTERM during a long drain closes the
// rest at once and exits 0.
func TestServeSIGTERMFinishesADrain(t *testing.T) {
	b := startBroker(t, "", "DRAIN_SECONDS=600")
	peers := drainClients(t, b, 3)
	if err := b.cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	b.waitLogs(t, "SIGUSR2: draining", 1)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	expectDrainCloses(t, peers)
	expectExit0(t, b, 10*time.Second, "SIGTERM during a drain")
}
