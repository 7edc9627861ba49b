package natsbroker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

// TestCloseWhileNATSGoesAway: a node closing while its NATS server shuts
// down (docker compose down stops both at once) exits within its state
// budget (StateTimeout, 2 s) plus the flush, not after the JetStream
// requests in flight time out one after another (they took 5–7 s: the
// watch's consumer delete, then the goodbye deletes).
func TestCloseWhileNATSGoesAway(t *testing.T) {
	for _, gap := range []time.Duration{0, 50 * time.Millisecond, 200 * time.Millisecond} {
		s := natstest.RunJetStream(t)
		b, _ := startNode(t, s.ClientURL(), "n1")
		b.SetPresence(&broker.Presence{Node: "n1", ID: "c1", RoomID: "r", Data: []byte{0xc0}})
		b.SetConnections("org", 1)
		waitFor(t, "state written", func() bool { return b.Stats().StateWrites >= 2 })
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); s.Shutdown() }()
		time.Sleep(gap)
		start := time.Now()
		_ = b.Close()
		d := time.Since(start)
		wg.Wait()
		t.Logf("NATS shut down %v before Close: Close took %v", gap, d)
		if d > 4*time.Second {
			t.Errorf("NATS shut down %v before Close: Close took %v, want within the 2 s state budget and the 1 s flush", gap, d)
		}
	}
}
