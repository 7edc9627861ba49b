package durable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/durable"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// TestMain fails the package if a test leaves a goroutine behind: the
// feeds and the sweep belong to Groups, which Close waits for.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFeedMakesTheConsumerThenConfirmsAndStops: a group's first member
// here (Interest +1) starts a feed that makes the group's durable
// consumer in the history before it calls ready; the last member's leave
// (-1) stops it; a second +1 for a group with a feed confirms at once;
// Close waits for every goroutine (goleak, TestMain).
func TestFeedMakesTheConsumerThenConfirmsAndStops(t *testing.T) {
	nc, _ := natstest.ConnectJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := history.Open(ctx, history.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	g := durable.New(durable.Config{History: h})
	hb := hub.New(hub.Config{Workers: 1})
	g.Attach(hb)

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	name := history.GroupConsumerName("p_app_jobs", "app/room/jobs")
	if _, err := js.Consumer(ctx, history.Stream(""), name); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("consumer before any member: %v", err)
	}
	ready := make(chan struct{})
	g.Interest("p_app_jobs", "app/room/jobs", 1, func() {
		if _, err := js.Consumer(context.Background(), history.Stream(""), name); err != nil {
			t.Errorf("ready before the consumer exists: %v", err)
		}
		close(ready)
	})
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("ready never called")
	}
	if st := g.Stats(); st.Feeds != 1 {
		t.Fatalf("feeds %d, want 1", st.Feeds)
	}
	again := make(chan struct{})
	g.Interest("p_app_jobs", "app/room/jobs", 1, func() { close(again) })
	select {
	case <-again:
	case <-time.After(time.Second):
		t.Fatal("a group with a feed was not confirmed at once")
	}
	g.Interest("p_app_jobs", "app/room/jobs", -1, nil)
	if st := g.Stats(); st.Feeds != 0 {
		t.Fatalf("feeds %d after the last member left, want 0", st.Feeds)
	}
	g.Close()
}
