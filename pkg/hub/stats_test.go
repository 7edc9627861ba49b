package hub

import (
	"context"
	"os"
	"testing"
	"time"
)

// startDevNullHub starts a hub of 2 workers whose sweep never runs during
// a test, shut down at the test's end, and returns it with /dev/null open
// for writing (the devNull transports' descriptor).
func startDevNullHub(t *testing.T) (*Hub, *os.File) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	h := New(Config{Workers: 2, Tick: time.Hour})
	h.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
		_ = f.Close()
	})
	return h, f
}

// TestWorkerStatsAndDeliveredBytes: the scrape-time figures of a running
// hub: connections, topics, retained messages and queued bytes per worker,
// and the delivered bytes (each delivery's frame).
func TestWorkerStatsAndDeliveredBytes(t *testing.T) {
	h, f := startDevNullHub(t)
	conns := []*Conn{h.Register(devNull{int(f.Fd())}), h.Register(devNull{int(f.Fd())}), h.Register(devNull{int(f.Fd())})}
	for _, c := range conns {
		h.Subscribe(c, &SubSpec{Pattern: "demo/general/bench", Key: "app/demo/general/bench"})
	}
	h.Subscribe(conns[0], &SubSpec{Pattern: "demo/+/b", Key: "app/demo/+/b", Wildcard: true})
	_, p := benchPublication()
	p.Retain = true
	h.Publish(p)

	deadline := time.Now().Add(5 * time.Second)
	for h.Stats().Deliveries < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	// Posted after the deliveries were counted, the op runs in a later
	// batch than the fan-out, so after its flush.
	ws := h.WorkerStats(context.Background())
	if h.Accepted() != 3 {
		t.Errorf("Accepted = %d, want 3", h.Accepted())
	}
	var connsN, topics int
	var delivered uint64
	for i, w := range ws {
		delivered += w.DeliveredBytes
		if w.Worker != i || w.Stale {
			t.Errorf("worker %d: %+v", i, w)
		}
		if w.Retained != 1 {
			t.Errorf("worker %d: %d retained, want 1 (every worker keeps a copy)", i, w.Retained)
		}
		if w.OutboundBytes != 0 || w.Busy {
			t.Errorf("worker %d: %+v, want nothing queued (writes to /dev/null always succeed)", i, w)
		}
		connsN += w.Connections
		topics += w.Topics
	}
	// Connections 1 and 3 sit on worker 1, connection 2 on worker 0: the
	// exact key counts on both workers, the pattern on worker 1 only.
	if connsN != 3 || topics != 3 {
		t.Errorf("connections %d, topics %d; want 3 and 3", connsN, topics)
	}
	if frame := p.forms.frames[0]; delivered != 3*uint64(len(frame)) {
		t.Errorf("DeliveredBytes = %d, want 3 × %d", delivered, len(frame))
	}
	if ra := conns[0].RemoteAddr(); ra != nil {
		t.Errorf("RemoteAddr of a transport without one = %v, want nil", ra)
	}
	if age := time.Since(conns[0].OpenedAt()); age < 0 || age > time.Minute {
		t.Errorf("OpenedAt is %v ago", age)
	}
}

// TestWorkerStatsOfStoppedHub: after Shutdown the workers no longer answer;
// WorkerStats returns at once with the inbox figures, marked Stale.
func TestWorkerStatsOfStoppedHub(t *testing.T) {
	h := New(Config{Workers: 2})
	h.Start()
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	ws := h.WorkerStats(ctx)
	if len(ws) != 2 || !ws[0].Stale || !ws[1].Stale || time.Since(start) > time.Second {
		t.Fatalf("WorkerStats after Shutdown = %+v after %v", ws, time.Since(start))
	}
}

// TestAcceptedCountsRegisteredConnectionsOnly: a connection adopted to
// keep a session's subscriptions (Adopt) takes an ID but was not accepted,
// so Accepted (kraken_connections_accepted_total, and what pkg/memory
// watches for bursts of connects) does not count it.
func TestAcceptedCountsRegisteredConnectionsOnly(t *testing.T) {
	h, f := startDevNullHub(t)
	c := h.Register(devNull{int(f.Fd())})
	adopted := make(chan *Conn, 1)
	h.Run(c, func(c *Conn) { adopted <- c.Adopt(devNull{int(f.Fd())}, nil) })
	select {
	case n := <-adopted:
		if n.ID <= c.ID {
			t.Fatalf("adopted connection's ID %d, want one after %d", n.ID, c.ID)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not run")
	}
	if got := h.Accepted(); got != 1 {
		t.Fatalf("Accepted = %d after one Register and one Adopt, want 1", got)
	}
}
