package client_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/store/memstore"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// resumeEvent is what a resuming subscriber sees, in the order its handler
// goroutine saw it: a delivery or a replayEnd.
type resumeEvent struct {
	d      *delivery
	replay *client.ReplayInfo
}

func (e resumeEvent) String() string {
	if e.replay != nil {
		return fmt.Sprintf("replayEnd %+v", *e.replay)
	}
	return fmt.Sprintf("message %s %+v", e.d.data, e.d.meta)
}

// resumeEnv is a broker with resumable sessions (RESUME_SESSIONS=true) and
// a message store, a proxy in front of it to cut connections, and bob
// subscribed at QoS 1 through the proxy with a ClientID, reconnecting fast.
type resumeEnv struct {
	b        *broker
	store    *memstore.Store
	proxy    *testpeer.Proxy
	bob      *client.Client
	events   chan resumeEvent
	connects atomic.Int32
	alice    *client.Client
}

func newResumeEnv(t *testing.T, expiry time.Duration) *resumeEnv {
	t.Helper()
	return newResumeEnvWith(t, expiry, nil)
}

// newResumeEnvWith is newResumeEnv with opts changing bob's Options.
func newResumeEnvWith(t *testing.T, expiry time.Duration, opts func(*client.Options)) *resumeEnv {
	t.Helper()
	e := &resumeEnv{store: memstore.New(memstore.Config{}), events: make(chan resumeEvent, 1024)}
	t.Cleanup(func() { _ = e.store.Close() })
	e.b = startBrokerWith(t, "127.0.0.1:0", func(c *session.Config) {
		c.Resume = session.ResumeConfig{Enabled: true, Expiry: expiry}
		c.Store = e.store
	})
	e.proxy = testpeer.NewProxy(t, e.b.addr)
	o := client.Options{
		URL: "ws://" + e.proxy.Addr() + "/ws", ClientID: "bobs-phone",
		ReconnectDelay: 10 * time.Millisecond, ReconnectJitter: -1, HeartbeatInterval: -1,
		AckInterval: 10 * time.Millisecond,
		OnConnect:   func(client.Info) { e.connects.Add(1) },
		OnReplay:    func(r client.ReplayInfo) { e.events <- resumeEvent{replay: &r} },
	}
	if opts != nil {
		opts(&o)
	}
	e.bob = client.New("dev-token-bob", o)
	t.Cleanup(func() { _ = e.bob.Close() })
	if err := e.bob.Connect(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	err := e.bob.Subscribe(ctxT(t), topic, func(d client.Data, m client.Meta) {
		e.events <- resumeEvent{d: &delivery{d, m}}
	}, client.WithQoS(1))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "bob's OnConnect", func() bool { return e.connects.Load() == 1 })
	e.alice = e.b.dial(t, "dev-token-alice", client.Options{})
	return e
}

// publish publishes the ints from..from+n-1 as alice, each accepted.
func (e *resumeEnv) publish(t *testing.T, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if err := e.alice.Publish(ctxT(t), topic, i); err != nil {
			t.Fatal(err)
		}
	}
}

// cut cuts bob's TCP connection and holds his reconnect at the proxy until
// the broker has parked his session.
func (e *resumeEnv) cut(t *testing.T) {
	t.Helper()
	e.proxy.Hold()
	e.proxy.Cut()
	waitFor(t, "the broker to park bob's session", func() bool { return e.b.srv.Node().Protocol().ResumeStats().Parked == 1 })
}

// next returns bob's next event.
func (e *resumeEnv) next(t *testing.T) resumeEvent {
	t.Helper()
	return recv(t, e.events)
}

// messages reads n deliveries carrying the ints from..from+n-1, in order,
// each with isReplay = replay and a msgId not seen before; it returns
// their msgIds.
func (e *resumeEnv) messages(t *testing.T, from, n int, replay bool, seen map[string]bool) []string {
	t.Helper()
	var ids []string
	for i := from; i < from+n; i++ {
		ev := e.next(t)
		if ev.d == nil {
			t.Fatalf("message %d: got %v", i, ev)
		}
		var v int
		if err := ev.d.data.Decode(&v); err != nil || v != i {
			t.Fatalf("message %d: got %v", i, ev)
		}
		m := ev.d.meta
		if m.IsReplay != replay || m.Topic != topic || m.Sender != "alice" || m.MsgID == "" || seen[m.MsgID] {
			t.Fatalf("message %d: want isReplay=%v and a new msgId, got %v", i, replay, ev)
		}
		seen[m.MsgID] = true
		ids = append(ids, m.MsgID)
	}
	return ids
}

// acked waits until the store holds bob's acks of every id: the broker has
// processed them.
func (e *resumeEnv) acked(t *testing.T, ids []string) {
	t.Helper()
	waitFor(t, "bob's acks to reach the broker", func() bool {
		for _, id := range ids {
			if _, by, ok := e.store.Get(context.Background(), id); !ok || !slices.Contains(by, "bob") {
				return false
			}
		}
		return true
	})
}

func (e *resumeEnv) replayEnd(t *testing.T, want client.ReplayInfo) {
	t.Helper()
	ev := e.next(t)
	if ev.replay == nil || *ev.replay != want {
		t.Fatalf("want replayEnd %+v, got %v", want, ev)
	}
}

// TestResumeReplaysMissedInOrderThenLive: a QoS 1 subscriber with a
// ClientID whose TCP connection is cut, while 50 messages are published,
// gets after its automatic reconnect exactly those 50, in order, with
// IsReplay and distinct msgIds, then OnReplay 50/50 complete, then live
// messages without IsReplay and without a duplicate; its re-subscription
// leaves it one subscription.
func TestResumeReplaysMissedInOrderThenLive(t *testing.T) {
	e := newResumeEnv(t, time.Minute)
	seen := map[string]bool{}
	e.publish(t, -3, 3)
	e.acked(t, e.messages(t, -3, 3, false, seen)) // acked: not replayed
	e.cut(t)
	e.publish(t, 0, 50)
	e.proxy.Release()

	e.messages(t, 0, 50, true, seen)
	e.replayEnd(t, client.ReplayInfo{Count: 50, Replayed: 50, Complete: true})
	waitFor(t, "the reconnect's OnConnect", func() bool { return e.connects.Load() == 2 })
	e.publish(t, 50, 5)
	e.messages(t, 50, 5, false, seen)
	nothing(t, e.events, 200*time.Millisecond)
	if subs := e.bob.Subscriptions(); len(subs) != 1 || !subs[0].Active || subs[0].QoS != 1 {
		t.Fatalf("subscriptions after the resume: %+v", subs)
	}
}

// TestResumeAckedReplayNotReplayedAgain: the replayed and live messages the
// client acknowledged (batchAck, automatically) are not replayed by a later
// resume: the second cut with nothing published meanwhile replays nothing,
// complete.
func TestResumeAckedReplayNotReplayedAgain(t *testing.T) {
	e := newResumeEnv(t, time.Minute)
	seen := map[string]bool{}
	e.cut(t)
	e.publish(t, 0, 10)
	e.proxy.Release()
	ids := e.messages(t, 0, 10, true, seen)
	e.replayEnd(t, client.ReplayInfo{Count: 10, Replayed: 10, Complete: true})
	waitFor(t, "the reconnect's OnConnect", func() bool { return e.connects.Load() == 2 })
	e.acked(t, ids) // from the first ack on, the broker tracks what bob has not acked
	e.publish(t, 10, 5)
	e.acked(t, e.messages(t, 10, 5, false, seen))

	e.cut(t)
	e.proxy.Release()
	e.replayEnd(t, client.ReplayInfo{Count: 0, Replayed: 0, Complete: true})
	waitFor(t, "the second reconnect's OnConnect", func() bool { return e.connects.Load() == 3 })
	e.publish(t, 15, 1)
	e.messages(t, 15, 1, false, seen)
	nothing(t, e.events, 200*time.Millisecond)
}

// TestResumeExpiredSessionReplaysNothing: when the session expired before
// the reconnect, OnReplay reports complete:false with reason
// session_expired, nothing published meanwhile is replayed, and the
// client's re-subscription makes the subscription again for live traffic.
func TestResumeExpiredSessionReplaysNothing(t *testing.T) {
	e := newResumeEnv(t, 500*time.Millisecond) // long enough for cut to see it parked
	seen := map[string]bool{}
	e.cut(t)
	e.publish(t, 0, 5) // collected, then let go of with the session
	waitFor(t, "the session to expire", func() bool { return e.b.srv.Node().Protocol().ResumeStats().Parked == 0 })
	e.proxy.Release()

	e.replayEnd(t, client.ReplayInfo{Count: 0, Replayed: 0, Complete: false, Reason: client.ReplaySessionExpired})
	waitFor(t, "the reconnect's OnConnect", func() bool { return e.connects.Load() == 2 })
	e.publish(t, 5, 1)
	e.messages(t, 5, 1, false, seen)
	nothing(t, e.events, 200*time.Millisecond)
}

// TestResumeRetainedNotDuplicated: a retained message published while the
// subscriber was cut off arrives once, replayed; the client's
// re-subscription after the resume does not bring it again.
func TestResumeRetainedNotDuplicated(t *testing.T) {
	e := newResumeEnv(t, time.Minute)
	seen := map[string]bool{}
	e.cut(t)
	if err := e.alice.Publish(ctxT(t), topic, 0, client.Retain()); err != nil {
		t.Fatal(err)
	}
	e.proxy.Release()
	e.messages(t, 0, 1, true, seen)
	e.replayEnd(t, client.ReplayInfo{Count: 1, Replayed: 1, Complete: true})
	waitFor(t, "the reconnect's OnConnect", func() bool { return e.connects.Load() == 2 })
	e.publish(t, 1, 1)
	e.messages(t, 1, 1, false, seen)
	nothing(t, e.events, 200*time.Millisecond)
}

// TestResumeUnackedHandledNotHandledTwice: a message the client handled but
// whose ack had not reached the broker when the connection was cut is
// replayed by the broker (at-least-once) and acked again, but not handed
// to the handler a second time; OnReplay counts it in Duplicates.
func TestResumeUnackedHandledNotHandledTwice(t *testing.T) {
	// Acks go in pairs: an odd one out waits (an hour) in the client.
	e := newResumeEnvWith(t, time.Minute, func(o *client.Options) { o.AckInterval, o.AckBatchSize = time.Hour, 2 })
	seen := map[string]bool{}
	// The broker tracks what a connection was sent from its first ack on,
	// and its position on a subscription from the first ack of a tracked
	// message (docs/protocol.md, "Limits of this first step").
	e.publish(t, 0, 2)
	e.acked(t, e.messages(t, 0, 2, false, seen))
	e.publish(t, 2, 2)
	e.acked(t, e.messages(t, 2, 2, false, seen))
	e.publish(t, 4, 1)
	fifth := e.messages(t, 4, 1, false, seen) // handled, its ack waiting
	e.cut(t)
	e.publish(t, 5, 2)
	e.proxy.Release()

	e.messages(t, 5, 2, true, seen) // the fifth is replayed first, and skipped
	e.replayEnd(t, client.ReplayInfo{Count: 3, Replayed: 3, Complete: true, Duplicates: 1})
	waitFor(t, "the reconnect's OnConnect", func() bool { return e.connects.Load() == 2 })
	e.acked(t, fifth)
	e.publish(t, 7, 1)
	e.messages(t, 7, 1, false, seen)
	nothing(t, e.events, 200*time.Millisecond)
}
