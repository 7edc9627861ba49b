package resume

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/sessionkv"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// durableNode is one node's hub and registry over a shared JetStream: the
// sessions bucket and the message history.
type durableNode struct {
	r    *Registry
	h    *hub.Hub
	hist *history.History
}

// jetStream starts a JetStream server for t and connects to it.
func jetStream(t *testing.T) *nats.Conn {
	t.Helper()
	nc, _ := natstest.ConnectJetStream(t)
	return nc
}

// newDurableNode makes the node named id on nc, saving every 50 ms (or
// saveEvery) with a position 1 ms behind, stopped when t ends.
func newDurableNode(t *testing.T, nc *nats.Conn, id string, saveEvery ...time.Duration) *durableNode {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hist, err := history.Open(ctx, history.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sessionkv.Open(ctx, sessionkv.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	n := &durableNode{hist: hist}
	n.h = hub.New(hub.Config{Workers: 2, OnClose: func(c *hub.Conn) { n.r.Closed(c) }})
	every := 50 * time.Millisecond
	if len(saveEvery) > 0 {
		every = saveEvery[0]
	}
	n.r = New(Config{Store: store, History: hist, Node: id, SaveEvery: every, PositionLag: time.Millisecond}, n.h)
	n.h.Start()
	if err := n.r.StartSaving(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n.h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		n.r.StopSaving(ctx)
		store.Close()
		hist.Close()
	})
	return n
}

// appendMessage appends the message frame of data on the routing key key
// to n's history, as the session does for an accepted publish.
func (n *durableNode) appendMessage(t *testing.T, key, data string) {
	t.Helper()
	b := wire.AppendMessage(nil, &wire.Message{Topic: key, Data: msgp.AppendString(nil, data), MsgID: "id-" + data,
		From: "alice", FromType: "actor", Timestamp: time.Now().UnixMilli()})
	if !n.hist.Append(key, "id-"+data, b) {
		t.Fatalf("append %s dropped", data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.hist.Sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// subscriber is a resumable connection of session id on n, subscribed to
// the routing key key (QoS 1) under the pattern "k".
func (n *durableNode) subscriber(t *testing.T, id, key string) *hub.Conn {
	t.Helper()
	c := n.h.Register(nullTransport{})
	c.SetPhase(hub.PhaseAuthed)
	if _, ok := n.r.Attach(c, id, false, time.Minute); !ok {
		t.Fatalf("Attach(%s) refused", id)
	}
	n.r.Subscribed(c, &hub.SubSpec{Pattern: "k", Key: key, QoS: 1})
	return c
}

// A session live on node A is resumed on node B from the Store: B gets its
// subscriptions and replays from the history what was published after
// the position A saved, and only that; A's connection is closed
// (session_taken_over) and counted, and nothing of the session stays on A.
func TestStoredSessionResumesOnAnotherNode(t *testing.T) {
	nc := jetStream(t)
	a, b := newDurableNode(t, nc, "node-a"), newDurableNode(t, nc, "node-b")

	a.appendMessage(t, "app/k", "before")
	time.Sleep(20 * time.Millisecond) // stored before the position the next save takes
	c := a.h.Register(nullTransport{})
	c.SetPhase(hub.PhaseAuthed)
	if _, ok := a.r.Attach(c, "s", false, time.Minute); !ok {
		t.Fatal("Attach refused")
	}
	a.r.Subscribed(c, &hub.SubSpec{Pattern: "k", Key: "app/k", QoS: 1})
	a.r.Subscribed(c, &hub.SubSpec{Pattern: "w/+", Key: "app/w/+", Wildcard: true, QoS: 1})
	a.r.Subscribed(c, &hub.SubSpec{Pattern: "q0", Key: "app/q0"}) // QoS 0: nothing kept for it
	waitUntil(t, func() bool { return a.r.Stats().Saved >= 1 })
	time.Sleep(20 * time.Millisecond)
	for i := range 3 {
		a.appendMessage(t, "app/k", fmt.Sprint("after-", i))
	}
	a.appendMessage(t, "app/w/x", "wild")
	a.appendMessage(t, "app/q0", "qos0")
	a.appendMessage(t, "app/other", "other")

	st := b.r.Fetch(context.Background(), "s")
	if st == nil || st.Reason != "" || len(st.Specs) != 3 {
		t.Fatalf("Fetch = %+v", st)
	}
	waitUntil(t, func() bool { return a.r.Stats().TakenOver == 1 && !a.r.Resumable(c) })

	c2 := b.h.Register(nullTransport{})
	c2.SetPhase(hub.PhaseAuthed)
	if _, ok := b.r.Attach(c2, "s", true, time.Minute); !ok {
		t.Fatal("Attach on B refused")
	}
	got := make(chan []Missed, 1)
	var gap Gap
	b.r.ReplayStored(context.Background(), c2, st, func(_ *hub.Conn, m []Missed, g Gap) { gap = g; got <- m })
	missed := <-got
	if gap != (Gap{}) {
		t.Fatalf("gap = %+v, want a complete replay", gap)
	}
	var seen []string
	for _, m := range missed {
		msg, err := wire.ParseMessage(m.Payload)
		if err != nil {
			t.Fatal(err)
		}
		data, _, _ := msgp.ReadStringBytes(msg.Data)
		if !msg.IsReplay || msg.MsgID != "id-"+data || m.MsgID != msg.MsgID || msg.Topic != m.Topic {
			t.Errorf("replayed %+v as %+v", m, msg)
		}
		seen = append(seen, m.Topic+"="+data+"<"+msg.SourceTopic)
	}
	want := "[k=after-0< k=after-1< k=after-2< w/+=wild<app/w/x]"
	if fmt.Sprint(seen) != want {
		t.Fatalf("replayed %v, want %s", seen, want)
	}
	subs := make(chan []bool, 1)
	b.h.Run(c2, func(c *hub.Conn) { subs <- []bool{c.Subscribed("k"), c.Subscribed("w/+"), c.Subscribed("q0")} })
	if s := <-subs; fmt.Sprint(s) != "[true true true]" {
		t.Fatalf("restored on the new connection (k, w/+, q0): %v", s)
	}
}

// A record past its expiry is not resumed: Fetch finds nothing.
func TestStoredSessionPastItsExpiryIsNotResumed(t *testing.T) {
	nc := jetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store, err := sessionkv.Open(ctx, sessionkv.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	old := sessionkv.Record{ID: "old", Node: "gone", Specs: []sessionkv.Spec{{Pattern: "k", Key: "app/k", QoS: 1}},
		Saved: time.Now().Add(-time.Hour), Expiry: time.Minute, Position: time.Now().Add(-time.Hour)}
	if err := store.Save(ctx, []sessionkv.Record{old}); err != nil {
		t.Fatal(err)
	}
	n := newDurableNode(t, nc, "node-a")
	if st := n.r.Fetch(ctx, "old"); st != nil {
		t.Fatalf("Fetch of an expired session = %+v", st)
	}
	if st := n.r.Fetch(ctx, "never"); st != nil {
		t.Fatalf("Fetch of an unknown session = %+v", st)
	}
}

// The replay from the history stops at MaxBytes and says backlog_limit
// with the count of messages it left out.
func TestStoredReplayBoundedByBytes(t *testing.T) {
	nc := jetStream(t)
	n := newDurableNode(t, nc, "node-a")
	n.r.cfg.MaxBytes = 1000
	pos := time.Now().Add(-time.Second)
	for i := range 20 {
		n.appendMessage(t, "app/k", fmt.Sprintf("%0100d", i)) // about 200 bytes a frame
	}
	c := n.h.Register(nullTransport{})
	c.SetPhase(hub.PhaseAuthed)
	n.r.Attach(c, "s", true, time.Minute)
	st := &Stored{ID: "s", Specs: []Spec{{Pattern: "k", Key: "app/k", QoS: 1}}, Position: pos}
	got := make(chan []Missed, 1)
	var gap Gap
	n.r.ReplayStored(context.Background(), c, st, func(_ *hub.Conn, m []Missed, g Gap) { gap = g; got <- m })
	missed := <-got
	if len(missed) == 0 || len(missed) >= 20 || gap.Reason != ReasonOverflow || gap.Lost != 20-len(missed) {
		t.Fatalf("%d replayed, gap %+v; want fewer than 20, backlog_limit and the rest counted", len(missed), gap)
	}
}

// The replay from the history stops at MaxMessages and says backlog_limit
// with the count of messages it left out (history.Count past the Read's
// limit); with filters on a subscription, entries are not its messages one
// for one, and no count is given.
func TestStoredReplayBoundedByMessages(t *testing.T) {
	nc := jetStream(t)
	n := newDurableNode(t, nc, "node-a")
	n.r.cfg.MaxMessages = 7
	pos := time.Now().Add(-time.Second)
	for i := range 30 {
		n.appendMessage(t, "app/k", fmt.Sprint(i))
		n.appendMessage(t, "app/other", "x")
	}
	for _, tt := range []struct {
		filters  []string
		wantLost int
	}{{nil, 23}, {[]string{"f"}, 0}} {
		c := n.h.Register(nullTransport{})
		c.SetPhase(hub.PhaseAuthed)
		n.r.Attach(c, "s", true, time.Minute)
		st := &Stored{ID: "s", Specs: []Spec{{Pattern: "k", Key: "app/k", QoS: 1, Filters: tt.filters}}, Position: pos}
		got := make(chan []Missed, 1)
		var gap Gap
		n.r.ReplayStored(context.Background(), c, st, func(_ *hub.Conn, m []Missed, g Gap) { gap = g; got <- m })
		missed := <-got
		if tt.filters == nil && len(missed) != 7 || gap.Reason != ReasonOverflow || gap.Lost != tt.wantLost {
			t.Fatalf("filters %q: %d replayed, gap %+v; want 7 (without filters), backlog_limit, lost %d", tt.filters, len(missed), gap, tt.wantLost)
		}
		n.h.Closed(c)
	}
}

// A fresh connect on another node (no reconnect:true) does not take a
// session whose connection is live on node A (the first live connection
// keeps it), and drops one that A keeps for a dropped connection.
func TestClaimOfAFreshConnectOnAnotherNode(t *testing.T) {
	nc := jetStream(t)
	a, b := newDurableNode(t, nc, "node-a"), newDurableNode(t, nc, "node-b")
	c := a.subscriber(t, "s", "app/k")
	waitUntil(t, func() bool { return a.r.Stats().Saved >= 1 })
	if b.r.Claim(context.Background(), "s") {
		t.Fatal("Claim took a session live on another node")
	}
	a.h.Closed(c)
	waitUntil(t, func() bool { return a.r.Len() == 1 && a.r.Stats().Saved >= 2 }) // parked, and saved so
	if !b.r.Claim(context.Background(), "s") {
		t.Fatal("Claim refused a session kept for a dropped connection")
	}
	waitUntil(t, func() bool { return a.r.Len() == 0 && a.r.Stats().TakenOver == 1 })
	if !b.r.Claim(context.Background(), "unknown") {
		t.Fatal("Claim refused a session nobody holds")
	}
}

// A connection whose session could not be read from the Store writes no
// record: closing without subscriptions, it does not replace the record
// another node saved with an ended one.
func TestUnclaimedSessionWritesNoRecord(t *testing.T) {
	nc := jetStream(t)
	a, b := newDurableNode(t, nc, "node-a"), newDurableNode(t, nc, "node-b")
	c := a.subscriber(t, "s", "app/k")
	a.h.Closed(c)
	waitUntil(t, func() bool { return a.r.Len() == 1 && a.r.Stats().Saved >= 1 })

	c2 := b.h.Register(nullTransport{})
	c2.SetPhase(hub.PhaseAuthed)
	b.r.Attach(c2, "s", true, time.Minute)
	b.r.Unclaimed(c2)
	b.h.Closed(c2)
	waitUntil(t, func() bool { return !b.r.Resumable(c2) })
	time.Sleep(200 * time.Millisecond) // four batches of saves
	if n := b.r.Stats().Saved; n != 0 {
		t.Fatalf("node B saved %d records for a session it could not read", n)
	}
	if st := b.r.Fetch(context.Background(), "s"); st == nil || len(st.Specs) != 1 {
		t.Fatalf("Fetch after B's close = %+v, want A's session", st)
	}
}

// The saves run beside everything else a session does, with the race
// detector on: many goroutines attach, subscribe, get deliveries (kept by
// their tap), ack, close and park, are taken over by the other node, while
// both nodes save every millisecond (reading each connection's Progress
// under the registry's mutex). A lock-order inversion hangs it, a data
// race fails it; at the end every session that is still live has a record.
func TestSavesUnderConcurrentSessions(t *testing.T) {
	nc := jetStream(t)
	a, b := newDurableNode(t, nc, "node-a", time.Millisecond), newDurableNode(t, nc, "node-b", time.Millisecond)
	const goroutines, rounds = 16, 40
	done := make(chan struct{})
	go func() { // publishers: deliveries to the tapped connections
		for {
			select {
			case <-done:
				return
			default:
			}
			for g := range goroutines {
				publish(a.h, fmt.Sprint("app/k", g), fmt.Sprint("m", time.Now().UnixNano()))
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprint("app/k", g)
			for i := range rounds {
				id := fmt.Sprint("s", g, "-", i%4)
				c := a.h.Register(nullTransport{})
				c.SetPhase(hub.PhaseAuthed)
				if _, ok := a.r.Attach(c, id, i%2 == 1, time.Minute); !ok {
					a.h.Closed(c)
					continue
				}
				spec := &hub.SubSpec{Pattern: "k", Key: key, QoS: 1}
				a.h.Subscribe(c, spec)
				a.r.Subscribed(c, spec)
				a.h.Run(c, (*hub.Conn).StartTap)
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				c.TapAck(fmt.Sprint("m", i))
				switch i % 5 {
				case 0:
					b.r.Fetch(context.Background(), id) // takes it over from A
				case 1:
					b.r.Claim(context.Background(), id)
				}
				a.h.Closed(c)
			}
		}()
	}
	wg.Wait()
	close(done)
	// One live session saved after all that.
	a.subscriber(t, "last", "app/last")
	waitUntil(t, func() bool {
		st := b.r.Fetch(context.Background(), "last")
		return st != nil && len(st.Specs) == 1
	})
	if a.r.Stats().SaveErrors != 0 || b.r.Stats().SaveErrors != 0 {
		t.Fatalf("save errors: A %d, B %d", a.r.Stats().SaveErrors, b.r.Stats().SaveErrors)
	}
}

// BenchmarkSavePass is the saver's once-a-second pass over 10,000 live
// resumable sessions that did not change since their last save (idle
// clients): a lock, a read of Progress and a comparison each, no write.
// ns/op is one pass; ns/session its cost per session.
func BenchmarkSavePass(b *testing.B) {
	nc, _ := natstest.ConnectJetStream(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store, err := sessionkv.Open(ctx, sessionkv.Config{Conn: nc})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	h := hub.New(hub.Config{Workers: 2})
	r := New(Config{Store: store, Node: "bench", SaveEvery: time.Hour, Expiry: time.Hour}, h)
	h.Start()
	defer func() { _ = h.Shutdown(context.Background()) }()
	const sessions = 10000
	for i := range sessions {
		c := h.Register(nullTransport{})
		c.SetPhase(hub.PhaseAuthed)
		r.Attach(c, fmt.Sprint("s", i), false, time.Hour)
		r.Subscribed(c, &hub.SubSpec{Pattern: "k", Key: "app/k", QoS: 1})
	}
	r.saveOnce(ctx) // every session written once
	if n := r.Stats().Saved; n != sessions {
		b.Fatalf("first pass saved %d, want %d", n, sessions)
	}
	b.ResetTimer()
	for range b.N {
		r.saveOnce(ctx)
	}
	b.StopTimer()
	if n := r.Stats().Saved; n != sessions {
		b.Fatalf("idle passes saved %d more records", n-sessions)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/sessions, "ns/session")
}

// An idle live session is saved again within a third of its own expiry (a
// token's shorter one included), so its record outlives a sudden end of
// its node by that expiry.
func TestIdleSessionIsSavedAgainWithinAThirdOfItsExpiry(t *testing.T) {
	nc := jetStream(t)
	a := newDurableNode(t, nc, "node-a", 10*time.Millisecond)
	c := a.h.Register(nullTransport{})
	c.SetPhase(hub.PhaseAuthed)
	a.r.Attach(c, "short", false, 300*time.Millisecond) // the registry's Expiry is the default 120 s
	a.r.Subscribed(c, &hub.SubSpec{Pattern: "k", Key: "app/k", QoS: 1})
	waitUntil(t, func() bool { return a.r.Stats().Saved >= 1 })
	first := a.r.Stats().Saved
	waitUntil(t, func() bool { return a.r.Stats().Saved >= first+2 }) // two refreshes, nothing written to it
}
