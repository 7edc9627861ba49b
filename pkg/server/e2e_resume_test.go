package server

import (
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// resumeOn starts a server with resumable sessions (RESUME_SESSIONS=true).
func resumeOn(t *testing.T, expiry time.Duration) *Server {
	return start(t, func(c *testConfig) {
		c.Resume = session.ResumeConfig{Enabled: true, Expiry: expiry}
		c.RateLimit = 100000
		c.Hub.TapAckWait = tapAckWait
	})
}

// tapAckWait is how long a client of these tests reads on without acking
// before it counts as one that does not ack (hub.Config.TapAckWait).
const tapAckWait = 300 * time.Millisecond

// jsSubscriber is a JS-SDK-shaped subscriber (wire-reference.md §12.1): auth
// with projectId, no protocolVersion, subscribe with qos 1.
func jsSubscriber(t *testing.T, s *Server, topic string, reconnect bool) (*testpeer.Peer, testpeer.Frame) {
	t.Helper()
	p := testpeer.Dial(t, s.Addr().String())
	extra := []any{"projectId", "demo"}
	if reconnect {
		extra = append(extra, "reconnect", true)
	}
	f := p.Auth("dev-token-bob", extra...)
	return p, f
}

// drop closes p's TCP connection without a close frame and waits until the
// server has parked its session.
func drop(t *testing.T, s *Server, p *testpeer.Peer) {
	t.Helper()
	_ = p.Conn.Close()
	waitFor(t, 5*time.Second, func() bool { return s.node.Stats().Resume.Parked == 1 })
}

func publishN(t *testing.T, s *Server, topic string, from, n int) {
	t.Helper()
	alice := authed(t, s, "dev-token-alice")
	for i := from; i < from+n; i++ {
		alice.Send("type", "publish", "topic", topic, "data", i, "msgRef", "r"+itoa(i))
		alice.ExpectFields("type", "published")
	}
}

// expectReplay reads replayStart, count replayed messages with data
// from..from+count-1 and isReplay:true, and replayEnd; it returns their ids.
func expectReplay(t *testing.T, p *testpeer.Peer, from, count int, complete bool) map[string]bool {
	t.Helper()
	st := p.ExpectType("replayStart")
	if asInt(t, st.Map["count"]) != int64(count) {
		t.Fatalf("replayStart = %s, want count %d", st, count)
	}
	ids := map[string]bool{}
	for i := 0; i < count; i++ {
		m := p.ExpectFields("type", "message", "isReplay", true)
		if asInt(t, m.Map["data"]) != int64(from+i) {
			t.Fatalf("replayed message %d = %s, want data %d", i, m, from+i)
		}
		id, _ := m.Map["msgId"].(string)
		if id == "" || ids[id] {
			t.Fatalf("replayed message %s: missing or duplicate msgId", m)
		}
		ids[id] = true
	}
	end := p.ExpectType("replayEnd")
	if asInt(t, end.Map["replayed"]) != int64(count) || asInt(t, end.Map["count"]) != int64(count) ||
		end.Map["complete"] != complete {
		t.Fatalf("replayEnd = %s, want replayed=count=%d complete=%v", end, count, complete)
	}
	return ids
}

// TestResumeReplaysMissed: a JS-shaped client subscribes at QoS 1, drops
// its TCP connection, 50 messages are published, it reconnects with
// reconnect:true and gets its subscription back in restoredSubscriptions,
// exactly those 50 in order with isReplay:true, then live traffic without
// isReplay; subscribing again gets `subscribed` and no second replay.
func TestResumeReplaysMissed(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/resume"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic, "qos", 1)
	drop(t, s, bob)
	publishN(t, s, topic, 0, 50)

	bob2, f := jsSubscriber(t, s, topic, true)
	rs, _ := f.Map["restoredSubscriptions"].([]any)
	if len(rs) != 1 {
		t.Fatalf("restoredSubscriptions = %v, want the one subscription", f.Map["restoredSubscriptions"])
	}
	ids := expectReplay(t, bob2, 0, 50, true)

	publishN(t, s, topic, 50, 1)
	live := bob2.ExpectFields("type", "message")
	if _, ok := live.Map["isReplay"]; ok || asInt(t, live.Map["data"]) != 50 || ids[live.Map["msgId"].(string)] {
		t.Fatalf("live message = %s", live)
	}
	// The Go SDK subscribes again after a reconnect (§12.2).
	subscribe(t, bob2, topic, "qos", 1)
	publishN(t, s, topic, 51, 1)
	m := bob2.ExpectFields("type", "message")
	if asInt(t, m.Map["data"]) != 51 {
		t.Fatalf("after re-subscribe: %s", m)
	}
	bob2.ExpectNothing(200 * time.Millisecond) // one subscription, no second replay
}

// TestResumeLiveDuringReplay: messages published while the replay is being
// sent come after replayEnd, once each.
func TestResumeLiveDuringReplay(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/during"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	drop(t, s, bob)
	publishN(t, s, topic, 0, 20)

	alice := authed(t, s, "dev-token-alice")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 20; i < 220; i++ {
			alice.Send("type", "publish", "topic", topic, "data", i)
		}
	}()
	bob2, _ := jsSubscriber(t, s, topic, true)
	st := bob2.ExpectType("replayStart")
	n := int(asInt(t, st.Map["count"]))
	seen := map[string]bool{}
	next := 0
	for i := 0; i < n; i++ {
		m := bob2.ExpectFields("type", "message", "isReplay", true)
		if int(asInt(t, m.Map["data"])) != next {
			t.Fatalf("replayed %s, want data %d", m, next)
		}
		next++
		seen[m.Map["msgId"].(string)] = true
	}
	bob2.ExpectFields("type", "replayEnd", "complete", true)
	<-done
	for next < 220 {
		m := bob2.ExpectFields("type", "message")
		if _, ok := m.Map["isReplay"]; ok {
			t.Fatalf("live message marked isReplay: %s", m)
		}
		id := m.Map["msgId"].(string)
		if seen[id] || int(asInt(t, m.Map["data"])) != next {
			t.Fatalf("live %s after %d: duplicate or out of order", m, next)
		}
		seen[id] = true
		next++
	}
	bob2.ExpectNothing(200 * time.Millisecond)
}

// TestResumeExpired: past the expiry the client is told, nothing replayed.
func TestResumeExpired(t *testing.T) {
	s := resumeOn(t, 200*time.Millisecond)
	const topic = "demo/general/expired"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	drop(t, s, bob)
	publishN(t, s, topic, 0, 5)
	time.Sleep(300 * time.Millisecond)

	bob2, f := jsSubscriber(t, s, topic, true)
	if rs, _ := f.Map["restoredSubscriptions"].([]any); len(rs) != 0 {
		t.Fatalf("restoredSubscriptions = %v after expiry", rs)
	}
	bob2.ExpectFields("type", "replayStart", "count", int64(0))
	end := bob2.ExpectFields("type", "replayEnd", "complete", false, "reason", "session_expired")
	if asInt(t, end.Map["replayed"]) != 0 {
		t.Fatalf("replayEnd = %s", end)
	}
	bob2.ExpectNothing(200 * time.Millisecond)
}

// TestResumeAcked: messages the client acked before its connection dropped
// are not replayed; only those published while it was away are.
func TestResumeAcked(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/acked"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	publishN(t, s, topic, 0, 10)
	for i := 0; i < 10; i++ {
		m := bob.ExpectFields("type", "message")
		bob.Send("type", "ack", "msgId", m.Map["msgId"]) // the JS SDK auto-acks (§6.4)
	}
	expectPong(t, bob)
	drop(t, s, bob)
	publishN(t, s, topic, 10, 5)
	bob2, _ := jsSubscriber(t, s, topic, true)
	expectReplay(t, bob2, 10, 5, true)
	bob2.ExpectNothing(200 * time.Millisecond)
}

// TestResumeFreshConnect: without reconnect:true the kept session is
// dropped and nothing is replayed (the default behaviour of a new connect).
func TestResumeFreshConnect(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/fresh"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	drop(t, s, bob)
	publishN(t, s, topic, 0, 3)
	bob2, f := jsSubscriber(t, s, topic, false)
	if rs, _ := f.Map["restoredSubscriptions"].([]any); len(rs) != 0 {
		t.Fatalf("restoredSubscriptions = %v on a fresh connect", rs)
	}
	bob2.ExpectNothing(200 * time.Millisecond)
	waitFor(t, 5*time.Second, func() bool { return s.node.Stats().Resume.Parked == 0 })
}

// TestResumeOffByDefault: without RESUME_SESSIONS nothing is kept.
func TestResumeOffByDefault(t *testing.T) {
	s := start(t, nil)
	const topic = "demo/general/off"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	_ = bob.Conn.Close()
	publishN(t, s, topic, 0, 3)
	bob2, f := jsSubscriber(t, s, topic, true)
	if rs, _ := f.Map["restoredSubscriptions"].([]any); len(rs) != 0 {
		t.Fatalf("restoredSubscriptions = %v", rs)
	}
	bob2.ExpectNothing(200 * time.Millisecond)
}

// TestResumeTakeOver: a reconnect while the old connection still looks
// live takes the session over: subscriptions restored, told that what the
// old one missed is unknown; the old one is not parked when it closes.
func TestResumeTakeOver(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/takeover"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	bob2, f := jsSubscriber(t, s, topic, true)
	if rs, _ := f.Map["restoredSubscriptions"].([]any); len(rs) != 1 {
		t.Fatalf("restoredSubscriptions = %v", f.Map["restoredSubscriptions"])
	}
	bob2.ExpectFields("type", "replayStart", "count", int64(0))
	bob2.ExpectFields("type", "replayEnd", "complete", false, "reason", "session_taken_over")
	_ = bob.Conn.Close()
	time.Sleep(100 * time.Millisecond)
	if n := s.node.Stats().Resume.Parked; n != 0 {
		t.Fatalf("%d sessions parked after the old connection closed", n)
	}
	publishN(t, s, topic, 0, 1)
	bob2.ExpectFields("type", "message")
	bob2.ExpectNothing(200 * time.Millisecond)
}

// TestResumeByClientID: with distinct clientIds one actor keeps one
// session per device, each resumed with its own subscriptions and backlog.
func TestResumeByClientID(t *testing.T) {
	s := resumeOn(t, time.Minute)
	dial := func(client string, reconnect bool) (*testpeer.Peer, testpeer.Frame) {
		p := testpeer.Dial(t, s.Addr().String())
		return p, p.Auth("dev-token-bob", "clientId", client, "reconnect", reconnect)
	}
	phone, _ := dial("phone", false)
	laptop, _ := dial("laptop", false)
	subscribe(t, phone, "demo/general/p")
	subscribe(t, laptop, "demo/general/l")
	_ = phone.Conn.Close()
	_ = laptop.Conn.Close()
	waitFor(t, 5*time.Second, func() bool { return s.node.Stats().Resume.Parked == 2 })
	publishN(t, s, "demo/general/p", 0, 2)
	publishN(t, s, "demo/general/l", 10, 3)
	phone2, f := dial("phone", true)
	if rs, _ := f.Map["restoredSubscriptions"].([]any); len(rs) != 1 {
		t.Fatalf("phone restoredSubscriptions = %v", rs)
	}
	expectReplay(t, phone2, 0, 2, true)
	laptop2, _ := dial("laptop", true)
	expectReplay(t, laptop2, 10, 3, true)
	phone2.ExpectNothing(100 * time.Millisecond)
	laptop2.ExpectNothing(100 * time.Millisecond)
}

// TestResumeRetainedNotReplayed: the retained message a subscriber got
// when it subscribed is not counted as missed.
func TestResumeRetainedNotReplayed(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/retained"
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", topic, "data", 1, "retain", true, "msgRef", "r")
	alice.ExpectFields("type", "published")
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	bob.ExpectFields("type", "message")
	drop(t, s, bob)
	time.Sleep(50 * time.Millisecond)
	publishN(t, s, topic, 7, 1)
	bob2, _ := jsSubscriber(t, s, topic, true)
	expectReplay(t, bob2, 7, 1, true)
}

// TestResumeUnackedInFlight: for a client that acks, the messages after
// the newest it acked are replayed, those lost in flight included, then
// what was published while it was away; the acked ones are not.
func TestResumeUnackedInFlight(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/inflight"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	publishN(t, s, topic, 100, 1)
	m := bob.ExpectFields("type", "message")
	bob.Send("type", "ack", "msgId", m.Map["msgId"]) // an acking client (the JS SDK)
	expectPong(t, bob)
	publishN(t, s, topic, 0, 10)
	for i := 0; i < 10; i++ {
		m := bob.ExpectFields("type", "message")
		if i < 5 {
			bob.Send("type", "ack", "msgId", m.Map["msgId"])
		} // 5..9 "lost in flight": read by nobody, never acked
	}
	expectPong(t, bob)
	drop(t, s, bob)
	publishN(t, s, topic, 10, 3)
	bob2, _ := jsSubscriber(t, s, topic, true)
	expectReplay(t, bob2, 5, 8, true)
	bob2.ExpectNothing(200 * time.Millisecond)
}

// TestResumeNonAckingClient: a client that never acks (the Python SDK)
// and reads on (here a ping) past hub.Config.TapAckWait counts as having
// read what was written to it: only what was published while it was away
// is replayed.
func TestResumeNonAckingClient(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/noack"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	publishN(t, s, topic, 0, 4)
	for i := 0; i < 4; i++ {
		bob.ExpectFields("type", "message")
	}
	time.Sleep(tapAckWait + 100*time.Millisecond)
	expectPong(t, bob) // it reads on, and acks nothing
	drop(t, s, bob)
	publishN(t, s, topic, 4, 2)
	bob2, _ := jsSubscriber(t, s, topic, true)
	expectReplay(t, bob2, 4, 2, true)
}

// lbWorker is a resumable, JS-shaped member of the load-balanced group
// "workers" on topic, with session identity clientID.
func lbWorker(t *testing.T, s *Server, topic, clientID string, reconnect bool) (*testpeer.Peer, testpeer.Frame) {
	t.Helper()
	p := testpeer.Dial(t, s.Addr().String())
	f := p.Auth("dev-token-bob", "projectId", "demo", "clientId", clientID, "reconnect", reconnect)
	if !reconnect {
		subscribe(t, p, topic, "qos", 1, "loadBalance", true, "loadBalanceGroup", "workers")
	}
	return p, f
}

// lbSplit sets up members a (acking: it acked one message, so its
// position is known) and b of one group, publishes 6 messages that the
// group splits between them, and returns a's share (data values, in
// order, unacked) and their msgIds; b's share is read and acked.
func lbSplit(t *testing.T, s *Server, topic string) (a, b *testpeer.Peer, aData []int64, aIDs []string) {
	t.Helper()
	a, _ = lbWorker(t, s, topic, "a", false)
	publishN(t, s, topic, 100, 1)
	m := a.ExpectFields("type", "message", "data", int64(100))
	a.Send("type", "ack", "msgId", m.Map["msgId"])
	expectPong(t, a)
	b, _ = lbWorker(t, s, topic, "b", false)
	publishN(t, s, topic, 0, 6)
	for range 3 { // round-robin: a, b, a, b, a, b
		m := a.ExpectFields("type", "message")
		aData = append(aData, asInt(t, m.Map["data"]))
		aIDs = append(aIDs, m.Map["msgId"].(string))
		m = b.ExpectFields("type", "message")
		b.Send("type", "ack", "msgId", m.Map["msgId"])
	}
	expectPong(t, a)
	expectPong(t, b)
	return a, b, aData, aIDs
}

// TestResumeLoadBalancedUnackedGoBackToTheGroup: the messages a
// load-balanced member was sent and did not ack go, when its session
// expires unresumed, to another member of the group, oldest first, with
// their msgIds and isReplay:true (wire-reference.md §6.6); they are counted as
// given back.
func TestResumeLoadBalancedUnackedGoBackToTheGroup(t *testing.T) {
	s := resumeOn(t, 300*time.Millisecond)
	const topic = "demo/general/jobs"
	a, b, aData, aIDs := lbSplit(t, s, topic)
	drop(t, s, a)
	for i := range aData {
		m := b.ExpectFields("type", "message", "isReplay", true)
		if asInt(t, m.Map["data"]) != aData[i] || m.Map["msgId"] != aIDs[i] {
			t.Fatalf("given back %d = %s, want data %d msgId %s", i, m, aData[i], aIDs[i])
		}
	}
	b.ExpectNothing(200 * time.Millisecond)
	waitFor(t, 5*time.Second, func() bool { return s.node.Stats().Resume.GivenBack == 3 })
	if st := s.node.Stats().Resume; st.Lost != 0 || st.Parked != 0 {
		t.Fatalf("resume stats after expiry = %+v, want nothing lost or parked", st)
	}
}

// TestResumeLoadBalancedUnackedReplayedOnResume: a member that resumes in
// time gets its unacked messages in its replay, and the group has them
// not given to anyone else; it is a member again afterwards.
func TestResumeLoadBalancedUnackedReplayedOnResume(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/jobs2"
	a, b, aData, aIDs := lbSplit(t, s, topic)
	drop(t, s, a)
	publishN(t, s, topic, 10, 2) // a is away: both go to b
	for i := int64(10); i < 12; i++ {
		m := b.ExpectFields("type", "message", "data", i)
		b.Send("type", "ack", "msgId", m.Map["msgId"])
	}
	a2, f := lbWorker(t, s, topic, "a", true)
	if rs, _ := f.Map["restoredSubscriptions"].([]any); len(rs) != 1 {
		t.Fatalf("restoredSubscriptions = %v", f.Map["restoredSubscriptions"])
	}
	a2.ExpectFields("type", "replayStart", "count", int64(3))
	for i := range aData {
		m := a2.ExpectFields("type", "message", "isReplay", true)
		if asInt(t, m.Map["data"]) != aData[i] || m.Map["msgId"] != aIDs[i] {
			t.Fatalf("replayed %d = %s, want data %d msgId %s", i, m, aData[i], aIDs[i])
		}
	}
	a2.ExpectFields("type", "replayEnd", "replayed", int64(3), "complete", true)
	b.ExpectNothing(200 * time.Millisecond)

	publishN(t, s, topic, 20, 2) // one each again
	got := 0
	for _, p := range []*testpeer.Peer{a2, b} {
		if m := p.ExpectFields("type", "message"); m.Map["isReplay"] == nil {
			got++
		}
	}
	if got != 2 {
		t.Fatal("live messages after the resume not split between the members")
	}
	if st := s.node.Stats().Resume; st.GivenBack != 0 || st.Replays[0] != 1 {
		t.Fatalf("resume stats = %+v, want one complete replay and nothing given back", st)
	}
}

// TestResumeLoadBalancedLostWithoutMember: with no other member on the
// node, the unacked messages of an expired member are counted as lost.
func TestResumeLoadBalancedLostWithoutMember(t *testing.T) {
	s := resumeOn(t, 300*time.Millisecond)
	const topic = "demo/general/jobs3"
	a, _ := lbWorker(t, s, topic, "a", false)
	publishN(t, s, topic, 0, 1)
	m := a.ExpectFields("type", "message", "data", int64(0))
	a.Send("type", "ack", "msgId", m.Map["msgId"])
	expectPong(t, a)
	publishN(t, s, topic, 1, 2)
	a.ExpectFields("type", "message", "data", int64(1))
	a.ExpectFields("type", "message", "data", int64(2))
	drop(t, s, a)
	waitFor(t, 5*time.Second, func() bool { return s.node.Stats().Resume.Lost == 2 })
	if st := s.node.Stats().Resume; st.GivenBack != 0 {
		t.Fatalf("resume stats = %+v", st)
	}
}

// TestResumeResubscribeGetsNoRetained: a client that subscribes again to
// its restored topics after resuming (the Go SDK does) gets `subscribed`
// and nothing else: not the retained message it got when it first
// subscribed, nor a second copy of the newer one that is in the replay.
// The same holds for a load-balanced subscription, restored without a
// replay.
func TestResumeResubscribeGetsNoRetained(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic, lbTopic = "demo/general/resub", "demo/general/resub-lb"
	alice := authed(t, s, "dev-token-alice")
	for _, tp := range []string{topic, lbTopic} {
		alice.Send("type", "publish", "topic", tp, "data", 1, "retain", true, "msgRef", "r1"+tp)
		alice.ExpectFields("type", "published")
	}
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic, "qos", 1)
	bob.ExpectFields("type", "message", "topic", topic, "data", 1)
	subscribe(t, bob, lbTopic, "qos", 1, "loadBalance", true)
	bob.ExpectFields("type", "message", "topic", lbTopic, "data", 1)
	drop(t, s, bob)
	alice.Send("type", "publish", "topic", topic, "data", 2, "retain", true, "msgRef", "r2")
	alice.ExpectFields("type", "published")

	bob2, _ := jsSubscriber(t, s, topic, true)
	expectReplay(t, bob2, 2, 1, true)
	bob2.ExpectNothing(100 * time.Millisecond) // the restored load-balanced subscription gets no retained either
	subscribe(t, bob2, topic, "qos", 1)
	subscribe(t, bob2, lbTopic, "qos", 1, "loadBalance", true)
	bob2.ExpectNothing(200 * time.Millisecond)

	// Subscribing once more is a plain subscribe again: the retained message comes.
	subscribe(t, bob2, topic, "qos", 1)
	bob2.ExpectFields("type", "message", "topic", topic, "data", 2)
}

// TestResumeInFlightBeforeAnyAck: a client whose network goes before it
// has acked anything (a quiet topic: the first messages it is sent are
// lost in flight) gets them replayed, with what was published while it
// was away, and a complete replay: nothing written to a dead socket counts
// as read.
func TestResumeInFlightBeforeAnyAck(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/firstack"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	publishN(t, s, topic, 0, 3) // written to bob's socket, never read: its network went
	drop(t, s, bob)
	publishN(t, s, topic, 3, 2)
	bob2, _ := jsSubscriber(t, s, topic, true)
	expectReplay(t, bob2, 0, 5, true)
	bob2.ExpectNothing(200 * time.Millisecond)
}

// TestResumeAcksOutOfOrder: every unacked message is replayed, whatever
// the order the client acked the others in.
func TestResumeAcksOutOfOrder(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/ooo"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	publishN(t, s, topic, 0, 5)
	ids := make([]any, 5)
	for i := range ids {
		ids[i] = bob.ExpectFields("type", "message").Map["msgId"]
	}
	bob.Send("type", "ack", "msgId", ids[3])
	bob.Send("type", "ack", "msgId", ids[0])
	expectPong(t, bob)
	drop(t, s, bob)
	bob2, _ := jsSubscriber(t, s, topic, true)
	bob2.ExpectFields("type", "replayStart", "count", int64(3))
	for _, want := range []int64{1, 2, 4} {
		bob2.ExpectFields("type", "message", "isReplay", true, "data", want)
	}
	bob2.ExpectFields("type", "replayEnd", "replayed", int64(3), "complete", true)
}

// TestResumeUnsubscribedBeforeTheReplay: a resumed client that unsubscribes
// from a restored topic right after its auth gets no message of that topic
// once it has `unsubscribed`, from the replay or live (the replay used to
// be put together from what was kept, whatever the client unsubscribed
// from meanwhile); the other topic's missed messages come.
func TestResumeUnsubscribedBeforeTheReplay(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const a, b = "demo/general/unsub-a", "demo/general/unsub-b"
	bob, _ := jsSubscriber(t, s, a, false)
	subscribe(t, bob, a)
	subscribe(t, bob, b)
	drop(t, s, bob)
	publishN(t, s, a, 0, 200)
	publishN(t, s, b, 1000, 2)
	p := testpeer.Dial(t, s.Addr().String())
	p.Send("type", "auth", "token", "dev-token-bob", "projectId", "demo", "reconnect", true)
	p.Send("type", "unsubscribe", "topic", a)
	var fromB []int64
	unsubscribed, ended := false, false
	for !unsubscribed || !ended {
		f := p.Expect()
		switch f.Map["type"] {
		case "unsubscribed":
			unsubscribed = true
		case "replayEnd":
			ended = true
		case "message":
			if f.Map["topic"] == a && unsubscribed {
				t.Fatalf("a message of %s after unsubscribed: %s", a, f)
			}
			if f.Map["topic"] == b {
				fromB = append(fromB, asInt(t, f.Map["data"]))
			}
		}
	}
	if len(fromB) != 2 || fromB[0] != 1000 || fromB[1] != 1001 {
		t.Fatalf("replayed %v of %s, want 1000 and 1001", fromB, b)
	}
	publishN(t, s, a, 300, 1)
	publishN(t, s, b, 2000, 1)
	p.ExpectFields("type", "message", "topic", b, "data", int64(2000))
	p.ExpectNothing(200 * time.Millisecond)
}

// TestResumeDropDuringTheReplay: a client whose network goes while its
// replay is being read gets, on its next resume, every replayed message it
// did not ack (they are kept until acked, as deliveries are), then what
// was published meanwhile; nothing is lost behind a complete:true.
func TestResumeDropDuringTheReplay(t *testing.T) {
	s := resumeOn(t, time.Minute)
	const topic = "demo/general/dropreplay"
	bob, _ := jsSubscriber(t, s, topic, false)
	subscribe(t, bob, topic)
	drop(t, s, bob)
	publishN(t, s, topic, 0, 50)

	bob2, _ := jsSubscriber(t, s, topic, true)
	bob2.ExpectFields("type", "replayStart", "count", int64(50))
	for i := int64(0); i < 10; i++ {
		m := bob2.ExpectFields("type", "message", "isReplay", true, "data", i)
		if i < 5 {
			bob2.Send("type", "ack", "msgId", m.Map["msgId"])
		}
	}
	drop(t, s, bob2) // 10..49 unread, 5..9 read but not acked; the acks come before the FIN
	publishN(t, s, topic, 50, 2)

	bob3, _ := jsSubscriber(t, s, topic, true)
	expectReplay(t, bob3, 5, 47, true)
	bob3.ExpectNothing(200 * time.Millisecond)
}
