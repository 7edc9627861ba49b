package natsbroker_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/NoLagApp/kraken/pkg/broker/brokertest"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

// An admin request reaches every other live node and comes back with each
// node's answer; a request that arrives after its deadline (its asker has
// stopped waiting and told its operator the node did not answer) is
// dropped unrun and unanswered.
func TestAdminRequestsAndTheirDeadline(t *testing.T) {
	s := natstest.RunJetStream(t)
	a, _ := startNode(t, s.ClientURL(), "a")
	b, _ := startNode(t, s.ClientURL(), "b")
	c, _ := startNode(t, s.ClientURL(), "c")
	var ran atomic.Int64
	for _, n := range []*natsbroker.Broker{b, c} {
		n.Answer(func(_ context.Context, req []byte) []byte { ran.Add(1); return append([]byte("seen "), req...) })
	}
	waitFor(t, "a knows b and c", func() bool { return len(a.Peers()) == 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	answers, err := a.Ask(ctx, []byte("x"))
	if err != nil || len(answers) != 2 || ran.Load() != 2 {
		t.Fatalf("answers %v (%v), %d run; want b's and c's", answers, err, ran.Load())
	}
	for _, ans := range answers {
		if string(ans.Data) != "seen x" || (ans.Node != "b" && ans.Node != "c") {
			t.Fatalf("answer %+v", ans)
		}
	}

	// A late request, as a frozen node would read it once thawed.
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	inbox := nats.NewInbox()
	replies, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	late := &nats.Msg{Subject: "kraken.admin", Reply: inbox, Data: []byte("late"), Header: nats.Header{}}
	late.Header.Set("Kraken-Deadline-Ms", strconv.FormatInt(time.Now().Add(-time.Second).UnixMilli(), 10))
	if err := nc.PublishMsg(late); err != nil {
		t.Fatal(err)
	}
	if m, err := replies.NextMsg(500 * time.Millisecond); err == nil {
		t.Fatalf("a late request was answered: %q", m.Data)
	}
	if ran.Load() != 2 {
		t.Fatalf("a late request was run (%d runs)", ran.Load())
	}
}

// A node judged down is named by Down until it is seen again, and is not
// among the Peers.
func TestDownNodesAreNamed(t *testing.T) {
	s := natstest.RunJetStream(t)
	a, _ := startNode(t, s.ClientURL(), "a")
	b := newNode(t, s.ClientURL(), "b")
	if err := b.Start(t.Context(), brokertest.NewRecorder()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a knows b", func() bool { return len(a.Peers()) == 1 })
	natsbroker.Kill(b) // no goodbye: judged down at the liveness timeout
	waitFor(t, "b judged down", func() bool { _, down := a.Down()["b"]; return down && len(a.Peers()) == 0 })
	startNode(t, s.ClientURL(), "b")
	waitFor(t, "b back", func() bool { _, down := a.Down()["b"]; return !down && len(a.Peers()) == 1 })
}
