package hub

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/wire"
)

// The rules of docs/ARCHITECTURE.md "Who owns what", each with a test that
// fails when it is broken. Run them many times under the race detector
// (go test -race -count=50 -run 'TestRaceOn|TestReplies|TestStalled' ./pkg/hub).

// groupOnOtherWorker returns a group name whose worker is not c's.
func groupOnOtherWorker(t *testing.T, h *Hub, c *Conn) string {
	t.Helper()
	for i := 0; i < 1000; i++ {
		name := fmt.Sprintf("g%d", i)
		if h.groupWorker(name) != c.w {
			return name
		}
	}
	t.Fatal("no group name hashes to another worker")
	return ""
}

// TestRaceOnHeldLoadBalancedMember: a load-balanced member's deliveries are
// picked on its group's worker, another than the member's own, while the
// member's worker holds and releases its deliveries (a resumed session's
// replay, pkg/resume). Held deliveries belong to the member's worker alone:
// the group's worker hands each delivery over. Every message reaches the
// only member exactly once, in publish order.
func TestRaceOnHeldLoadBalancedMember(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 4})
	tr := newTestTransport(enc)
	c := authedConn(h, tr)
	group := groupOnOtherWorker(t, h, c)
	subscribeAndWait(t, h, c, tr, SubSpec{Pattern: "t", Key: "t", LoadBalance: true, Group: group})

	const n = 2000
	stop := make(chan struct{})
	var holders sync.WaitGroup
	holders.Add(1)
	go func() { // hold and release, as replays do, on the member's worker
		defer holders.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			h.Run(c, func(c *Conn) { c.HoldDeliveries() })
			h.Run(c, func(c *Conn) { c.ReleaseDeliveries(nil) })
			time.Sleep(10 * time.Microsecond)
		}
	}()
	var publishers sync.WaitGroup
	for p := 0; p < 4; p++ {
		publishers.Add(1)
		go func() {
			defer publishers.Done()
			for i := p; i < n; i += 4 {
				h.Publish(&Publication{Key: "t", Topic: "t", Echo: true,
					Msg: wire.Message{Topic: "t", From: fmt.Sprint(i)}})
			}
		}()
	}
	publishers.Wait()
	close(stop)
	holders.Wait()
	done := make(chan struct{})
	h.Run(c, func(c *Conn) { c.ReleaseDeliveries(nil); close(done) })
	<-done
	var got strings.Builder
	eventually(t, "every delivery", func() bool {
		got.WriteString(tr.written())
		return strings.Count(got.String(), "<1 msg") >= n
	})
	seen := map[string]bool{}
	for _, f := range strings.Split(got.String(), "<1 msg t from ")[1:] {
		from := strings.TrimSuffix(f, " src >")
		if seen[from] {
			t.Fatalf("message %s delivered twice", from)
		}
		seen[from] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct messages delivered, want %d", len(seen), n)
	}
}

// TestRaceOnSubscribeUnsubscribePublish: many goroutines subscribe,
// unsubscribe and publish on connections spread over the workers, with
// wildcard, exact and load-balanced subscriptions; the tables are each
// worker's own, so the race detector sees nothing, and at the end every
// table is empty again.
func TestRaceOnSubscribeUnsubscribePublish(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 4})
	const conns, rounds = 16, 200
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		tr := newTestTransport(enc)
		c := authedConn(h, tr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				pattern, key, wild := fmt.Sprintf("t/%d", r%5), fmt.Sprintf("t/%d", r%5), false
				if r%3 == 0 {
					pattern, key, wild = "t/+", "t/+", true
				}
				spec := &SubSpec{Pattern: pattern, Key: key, Wildcard: wild, LoadBalance: r%4 == 0, Group: "g",
					Reply: []byte("<subscribed>")}
				h.Subscribe(c, spec)
				h.Publish(&Publication{Key: key, Topic: key, Echo: true, Msg: wire.Message{Topic: key}})
				h.Unsubscribe(c, pattern, []byte("<unsubscribed>"))
			}
		}()
	}
	wg.Wait()
	// The goroutines have queued everything, not the workers handled it:
	// a connection's worker hands a group member to the group's worker
	// when it handles the subscribe. Two rounds of a no-op on every worker
	// see both done (the counters could read 0 before either).
	for range 2 {
		var round sync.WaitGroup
		for _, w := range h.workers {
			round.Add(1)
			w.post(op{kind: opRun, fn: func(*Conn) { round.Done() }})
		}
		round.Wait()
	}
	if st := h.Stats(); st.Subscriptions != 0 || st.Groups != 0 {
		t.Fatalf("%d subscriptions and %d groups counted at the end", st.Subscriptions, st.Groups)
	}
	done := make(chan struct{})
	var left atomic.Int64
	var pending sync.WaitGroup
	for _, w := range h.workers {
		pending.Add(1)
		w.post(op{kind: opRun, fn: func(*Conn) {
			left.Add(int64(w.tab.size() + w.grp.size()))
			pending.Done()
		}})
	}
	go func() { pending.Wait(); close(done) }()
	<-done
	if left.Load() != 0 {
		t.Fatalf("%d table entries left", left.Load())
	}
}

// TestRepliesInRequestOrderAcrossWorkers: replies owed by the connection's
// worker, by a group's worker and by the shared worker, and the reader's
// own replies between them, leave in the order they were requested,
// while the workers are held busy (no reply is waited for).
func TestRepliesInRequestOrderAcrossWorkers(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 4})
	tr := newTestTransport(enc)
	c := authedConn(h, tr)
	group := groupOnOtherWorker(t, h, c)
	release := make(chan struct{})
	for _, w := range h.workers { // a backlog on every worker
		w.post(op{kind: opRun, fn: func(*Conn) { <-release }})
	}
	var want strings.Builder
	const n = 3000
	for i := 0; i < n; i++ {
		r := fmt.Sprintf("<%d>", i)
		want.WriteString(r)
		switch i % 5 {
		case 0: // a subscription on the connection's worker
			h.Subscribe(c, &SubSpec{Pattern: fmt.Sprint("s", i), Key: fmt.Sprint("s", i), Reply: []byte(r)})
		case 1: // a load-balanced one, answered by its group's worker
			h.Subscribe(c, &SubSpec{Pattern: fmt.Sprint("l", i), Key: fmt.Sprint("l", i), LoadBalance: true,
				Group: group, Reply: []byte(r)})
		case 2: // the shared worker's (a presence list)
			tk := c.ExpectReply()
			h.RunShared(func(w Writer) { w.Answer(c, tk, []byte(r)) })
		case 3: // the reader's own (an error, `published`)
			c.Write([]byte(r))
		case 4:
			h.Unsubscribe(c, fmt.Sprint("s", i-4), []byte(r))
		}
	}
	if got := tr.written(); got != "" {
		t.Fatalf("written while the first reply is owed: %q", got)
	}
	close(release)
	var got strings.Builder
	eventually(t, "every reply", func() bool {
		got.WriteString(tr.written())
		return got.Len() >= want.Len()
	})
	if got.String() != want.String() {
		g, w := got.String(), want.String()
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("replies out of order from byte %d: got %.40q, want %.40q", i, g[i:], w[i:])
	}
	if c.PendingReplies() != 0 {
		t.Fatalf("%d replies still owed", c.PendingReplies())
	}
}

// TestStalledConnectionIsRetriedNotSpun: a connection whose socket takes
// nothing is retried by its worker's timer at growing intervals, not in a
// loop, and is closed as a slow consumer once it has taken nothing for
// WriteTimeout.
func TestStalledConnectionIsRetriedNotSpun(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 1, WriteTimeout: 2 * time.Second})
	tr := &countingTransport{testTransport: newTestTransport(enc)}
	c := authedConn(h, tr)
	subscribeAndWait(t, h, c, tr.testTransport, SubSpec{Pattern: "t", Key: "app/t"})
	tr.setRoom(0) // the peer stopped reading
	tr.calls.Store(0)
	h.Publish(publication("t"))
	eventually(t, "stalled", func() bool { return tr.calls.Load() > 0 })
	time.Sleep(time.Second)
	// A spinning worker makes millions of calls a second; the timer's
	// back-off about a dozen (5, 10, 20 ... 640 ms).
	if calls := tr.calls.Load(); calls > 20 {
		t.Fatalf("%d write attempts in a second on a full socket", calls)
	}
	eventually(t, "closed at the write deadline", func() bool { return h.Stats().Slow[SlowWriteTimeout] == 1 })
	if !c.Closed() {
		t.Fatal("not closed")
	}
	// Room again: what goes out is the head of the queue, then the 1008.
	tr.setRoom(-1)
	var out strings.Builder
	eventually(t, "the close frame", func() bool {
		out.WriteString(tr.written())
		return strings.HasSuffix(out.String(), "<1 close 1008 slow_consumer>")
	})
}

// countingTransport counts the write attempts.
type countingTransport struct {
	*testTransport
	calls atomic.Int64
}

func (t *countingTransport) Writev(bufs [][]byte) (int, error) {
	t.calls.Add(1)
	return t.testTransport.Writev(bufs)
}

// TestWorkerOnlyMethodsCheckTheirGoroutine: in race-detector builds a
// worker-only method called off the connection's worker panics (the
// single-writer rule enforced, not only documented); on the worker it
// runs.
func TestWorkerOnlyMethodsCheckTheirGoroutine(t *testing.T) {
	if !raceEnabled {
		t.Skip("the check is compiled into race-detector builds only")
	}
	h := startHub(t, Config{Workers: 1})
	c := authedConn(h, newTestTransport(&textEncoding{id: 1}))
	done := make(chan struct{})
	h.Run(c, func(c *Conn) { c.HoldDeliveries(); c.ReleaseDeliveries(nil); close(done) })
	<-done
	for name, call := range map[string]func(){
		"HoldDeliveries": c.HoldDeliveries, "Subscriptions": func() { c.Subscriptions() },
		"WriteFrame": func() { c.WriteFrame([]byte("x")) }, "StartTap": c.StartTap,
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s off the worker did not panic", name)
				}
			}()
			call()
		}()
	}
}
