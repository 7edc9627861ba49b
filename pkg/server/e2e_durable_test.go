package server

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/durable"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// startDurable runs one node with the durable history on an embedded
// JetStream server and every load-balanced group durable
// (session.Config.DurableAll), its feed taking an unacked delivery as
// taken after grace.
func startDurable(t *testing.T, grace time.Duration, workers int) (*Server, *durable.Groups) {
	return startDurableWith(t, durable.Config{Grace: grace}, workers)
}

// startDurableWith is startDurable with the feed's configuration dc (its
// History set here).
func startDurableWith(t *testing.T, dc durable.Config, workers int) (*Server, *durable.Groups) {
	t.Helper()
	nc, _ := natstest.ConnectJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := history.Open(ctx, history.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	dc.History = h
	d := durable.New(dc)
	t.Cleanup(h.Close) // after d's close, after the node's shutdown
	t.Cleanup(d.Close)
	s := start(t, func(c *testConfig) {
		c.History, c.Durable, c.DurableAll = h, d, true
		c.Hub.Workers = workers
	})
	return s, d
}

// durableMember is a member of the group "jobs" on demo/general/jobs.
func durableMember(t *testing.T, s *Server, token string) *testpeer.Peer {
	t.Helper()
	p := authed(t, s, token)
	p.Send("type", "subscribe", "topic", "demo/general/jobs", "loadBalance", true, "loadBalanceGroup", "jobs")
	p.ExpectFields("type", "subscribed", "topic", "demo/general/jobs")
	return p
}

// jobOf is the data of a message frame, as an int.
func jobOf(t *testing.T, f testpeer.Frame) int {
	t.Helper()
	if f.Type() != "message" {
		t.Fatalf("want a message, got %s", f)
	}
	n, err := strconv.Atoi(fmt.Sprint(f.Map["data"]))
	if err != nil {
		t.Fatalf("message data %v: %v", f.Map["data"], err)
	}
	return n
}

// TestDurableGroupGetsNoLiveCopy: on one node (no bus) with one worker,
// which a plain subscriber of the topic makes take every publication, a
// durable group's members get each live publish once, from the store's
// feed, never also from the hub's live fan-out (hub: durable groups are
// kept out of the indexes publications are matched against);
// round-robin between them. The plain subscriber gets each once too.
func TestDurableGroupGetsNoLiveCopy(t *testing.T) {
	s, _ := startDurable(t, 10*time.Second, 1)
	plain := authed(t, s, "dev-token-alice")
	plain.Send("type", "subscribe", "topic", "demo/general/jobs")
	plain.ExpectFields("type", "subscribed", "topic", "demo/general/jobs")
	m1, m2 := durableMember(t, s, "dev-token-bob"), durableMember(t, s, "dev-token-bob")
	pub := authed(t, s, "dev-token-alice")
	const n = 40
	for i := range n {
		pub.Send("type", "publish", "topic", "demo/general/jobs", "data", i, "msgRef", strconv.Itoa(i))
		pub.ExpectFields("type", "published", "msgRef", strconv.Itoa(i))
	}
	got := map[int]int{}
	per := map[*testpeer.Peer]int{}
	deadline := time.Now().Add(10 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		for _, m := range []*testpeer.Peer{m1, m2} {
			if f, err := m.Read(50 * time.Millisecond); err == nil {
				got[jobOf(t, f)]++
				per[m]++
				m.Send("type", "ack", "msgId", f.Map["msgId"])
			}
		}
	}
	m1.ExpectNothing(300 * time.Millisecond)
	m2.ExpectNothing(10 * time.Millisecond)
	for i := range n {
		if got[i] != 1 {
			t.Fatalf("message %d delivered %d times (all: %v)", i, got[i], got)
		}
	}
	if per[m1] == 0 || per[m2] == 0 {
		t.Fatalf("one member got everything: %d and %d", per[m1], per[m2])
	}
	for i := range n {
		if j := jobOf(t, plain.ExpectType("message")); j != i {
			t.Fatalf("plain subscriber got %d, want %d", j, i)
		}
	}
	plain.ExpectNothing(10 * time.Millisecond)
}

// TestDurableGroupRedeliversWhatADroppedMemberDidNotAck: a member that
// drops before acking gives its message back, which the next member gets
// with isReplay:true. A member that has acked before holds what it has
// not acked yet for as long as its connection is open, past the grace,
// and gives it back when it closes; a member that never acked (as the SDKs
// that never ack) has taken a message once its connection stayed open
// past the grace: nobody gets it again.
func TestDurableGroupRedeliversWhatADroppedMemberDidNotAck(t *testing.T) {
	s, d := startDurable(t, 300*time.Millisecond, 2)
	pub := authed(t, s, "dev-token-alice")
	publish := func(i int) {
		pub.Send("type", "publish", "topic", "demo/general/jobs", "data", i, "msgRef", strconv.Itoa(i))
		pub.ExpectFields("type", "published", "msgRef", strconv.Itoa(i))
	}
	// expect reads message want; with replay it must carry isReplay (a
	// fresh one may too: a feed stopped as its last member left gives
	// back what its last fetch brought, which then counts as handed out).
	expect := func(m *testpeer.Peer, want int, replay bool) testpeer.Frame {
		t.Helper()
		f := m.ExpectType("message")
		if jobOf(t, f) != want || replay && f.Map["isReplay"] != true {
			t.Fatalf("got %s, want data %d (isReplay %v)", f, want, replay)
		}
		return f
	}

	dropper := durableMember(t, s, "dev-token-bob")
	publish(1)
	expect(dropper, 1, false)
	_ = dropper.Conn.Close()
	acker := durableMember(t, s, "dev-token-bob")
	f := expect(acker, 1, true)
	acker.Send("type", "ack", "msgId", f.Map["msgId"])

	publish(2)
	expect(acker, 2, false) // not acked: held past the grace, the connection open
	time.Sleep(time.Second)
	if st := d.Stats(); st.Taken != 0 || st.Pending != 1 || st.Acked != 1 {
		t.Fatalf("stats %+v, want the acking member's message pending, none taken", st)
	}
	_ = acker.Conn.Close()
	silent := durableMember(t, s, "dev-token-bob")
	expect(silent, 2, true) // given back at the close; this member never acks
	deadline := time.Now().Add(5 * time.Second)
	for d.Stats().Taken == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if st := d.Stats(); st.Taken != 1 || st.Pending != 0 {
		t.Fatalf("stats %+v, want the silent member's message taken after the grace", st)
	}
	_ = silent.Conn.Close()
	last := durableMember(t, s, "dev-token-bob")
	last.ExpectNothing(2 * time.Second)
}

// TestDurableGroupMessageNoMemberWantsIsNotCycled: a message whose filter
// no member of the group takes is settled, as a plain group drops it,
// not given back to the store again and again.
func TestDurableGroupMessageNoMemberWantsIsNotCycled(t *testing.T) {
	s, d := startDurable(t, 10*time.Second, 2)
	m := authed(t, s, "dev-token-bob")
	m.Send("type", "subscribe", "topic", "demo/general/jobs", "loadBalance", true, "loadBalanceGroup", "jobs", "filters", []string{"a"})
	m.ExpectFields("type", "subscribed", "topic", "demo/general/jobs")
	pub := authed(t, s, "dev-token-alice")
	pub.Send("type", "publish", "topic", "demo/general/jobs", "data", 1, "filter", "b")
	pub.Send("type", "publish", "topic", "demo/general/jobs", "data", 2, "filter", "a", "msgRef", "2")
	pub.ExpectFields("type", "published", "msgRef", "2")
	if n := jobOf(t, m.ExpectType("message")); n != 2 {
		t.Fatalf("got %d, want 2 (filter a)", n)
	}
	m.ExpectNothing(1500 * time.Millisecond) // a message given back would come again within a second
	if st := d.Stats(); st.Filtered != 1 || st.Returned != 0 {
		t.Fatalf("stats %+v, want 1 filtered, none returned", st)
	}
}

// TestDurableGroupAckingMemberHoldsAtMostMaxHold: a member that acks holds
// a message it has not acked past the grace, but not past MaxHold: then
// the message is given back and handed out again (here to the same, only
// member), marked isReplay.
func TestDurableGroupAckingMemberHoldsAtMostMaxHold(t *testing.T) {
	s, d := startDurableWith(t, durable.Config{Grace: 100 * time.Millisecond, MaxHold: 1500 * time.Millisecond}, 2)
	m := durableMember(t, s, "dev-token-bob")
	pub := authed(t, s, "dev-token-alice")
	for i := 1; i <= 2; i++ {
		pub.Send("type", "publish", "topic", "demo/general/jobs", "data", i, "msgRef", strconv.Itoa(i))
		pub.ExpectFields("type", "published", "msgRef", strconv.Itoa(i))
	}
	f := m.ExpectType("message")
	if jobOf(t, f) != 1 {
		t.Fatalf("got %s, want data 1", f)
	}
	m.Send("type", "ack", "msgId", f.Map["msgId"]) // an acking member from now on
	if f = m.ExpectType("message"); jobOf(t, f) != 2 {
		t.Fatalf("got %s, want data 2", f)
	}
	start := time.Now()
	f, err := m.Read(5 * time.Second) // not acked: held past the grace, given back at MaxHold
	if err != nil || jobOf(t, f) != 2 || f.Map["isReplay"] != true {
		t.Fatalf("after MaxHold got %v, %v; want data 2 again with isReplay", f, err)
	}
	if held := time.Since(start); held < time.Second {
		t.Fatalf("given back after %v, before MaxHold", held)
	}
	if st := d.Stats(); st.Taken != 0 || st.Returned != 1 {
		t.Fatalf("stats %+v, want none taken, one returned", st)
	}
}
