package hub

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// TestRaceOnGatherWhileSubscribing: Gather reads what the workers own (a
// connection's subscriptions, Hub.Topics' walk of them) on each
// connection's worker, so it races with nothing while 16 connections
// subscribe, publish and unsubscribe on four workers (the race detector
// reports it otherwise, and SubscriptionCount panics off its worker in
// race builds). Once they stop, Gather and Topics see exactly what is
// left.
func TestRaceOnGatherWhileSubscribing(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 4})
	const conns, rounds = 16, 200
	var wg sync.WaitGroup
	all := make([]*Conn, conns)
	for i := range all {
		c := authedConn(h, newTestTransport(enc))
		all[i] = c
		wg.Go(func() {
			for r := 0; r < rounds; r++ {
				key := fmt.Sprintf("t/%d", r%5)
				h.Subscribe(c, &SubSpec{Pattern: key, Key: key, LoadBalance: r%4 == 0, Group: "g", Reply: []byte("<subscribed>")})
				h.Unsubscribe(c, key, []byte("<unsubscribed>"))
			}
			// Each keeps one subscription: t/keep-<i mod 4>.
			key := fmt.Sprintf("t/keep-%d", i%4)
			h.Subscribe(c, &SubSpec{Pattern: key, Key: key, Reply: []byte("<subscribed>")})
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				if _, err := Gather(ctx, h, func(c *Conn) (int, bool) { return c.SubscriptionCount(), true }); err != nil {
					t.Error(err)
				}
				if _, _, err := h.Topics(ctx, "t/", 3); err != nil {
					t.Error(err)
				}
				cancel()
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	eventually(t, "one subscription each", func() bool { return h.Stats().Subscriptions == conns })
	counts, err := Gather(context.Background(), h, func(c *Conn) (int, bool) { return c.SubscriptionCount(), true })
	if err != nil || len(counts) != conns {
		t.Fatalf("gathered %d connections (%v), want %d", len(counts), err, conns)
	}
	for _, n := range counts {
		if n != 1 {
			t.Fatalf("subscription counts %v, want 1 each", counts)
		}
	}
	topics, matched, err := h.Topics(context.Background(), "t/keep-", 0)
	if err != nil || matched != 4 || len(topics) != 4 {
		t.Fatalf("topics %+v (%d matched, %v), want 4", topics, matched, err)
	}
	for _, tc := range topics {
		if tc.Subscribers != conns/4 {
			t.Fatalf("topics %+v, want %d subscribers each", topics, conns/4)
		}
	}
}

// TestGatherSkipsClosingConnections: a connection whose close is decided
// is not gathered.
func TestGatherSkipsClosingConnections(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 2})
	a := authedConn(h, newTestTransport(enc))
	b := authedConn(h, newTestTransport(enc))
	a.CloseNow(disconnect.New(disconnect.Operator))
	got, err := Gather(context.Background(), h, func(c *Conn) (uint64, bool) { return c.ID, true })
	if err != nil || len(got) != 1 || got[0] != b.ID {
		t.Fatalf("gathered %v (%v), want only %d", got, err, b.ID)
	}
}
