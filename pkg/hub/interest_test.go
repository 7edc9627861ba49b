package hub

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/wire"
)

// publicationsQueued returns, per worker, the publications ever queued to it.
func publicationsQueued(h *Hub) []uint64 {
	out := make([]uint64, len(h.workers))
	for i, w := range h.workers {
		out[i], _ = w.in.counts()
	}
	return out
}

// TestPublishGoesOnlyToInterestedWorkers: with 8 workers, a publication
// to a key with one subscriber is queued on that subscriber's worker
// alone; one matching a wildcard or load-balanced subscription also on
// theirs; a retained one on every worker (each keeps the retained
// messages); and once the subscriber is gone, on none.
func TestPublishGoesOnlyToInterestedWorkers(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 8})
	tr := newTestTransport(enc)
	c := authedConn(h, tr)
	subscribeAndWait(t, h, c, tr, SubSpec{Pattern: "t", Key: "app/t"})
	only := func(what string, want map[int]uint64, publish func()) {
		t.Helper()
		before := publicationsQueued(h)
		publish()
		after := publicationsQueued(h)
		for i := range after {
			if d := after[i] - before[i]; d != want[i] {
				t.Fatalf("%s: worker %d was handed %d publications, want %d (before %v, after %v)", what, i, d, want[i], before, after)
			}
		}
	}
	own := c.w.id
	only("exact key", map[int]uint64{own: 10}, func() {
		for i := 0; i < 10; i++ {
			h.Publish(publication("t"))
		}
	})
	// All ten written, not only delivered (the worker flushes at the end
	// of its batch): nothing of them is left to be read with a reply.
	got := ""
	eventually(t, "written", func() bool { got += tr.written(); return strings.Count(got, "<1 msg t ") == 10 })
	only("no subscriber", map[int]uint64{}, func() { h.Publish(publication("other")) })
	all := map[int]uint64{}
	for i := range h.workers {
		all[i] = 1
	}
	only("retained", all, func() {
		p := publication("x/y")
		p.Retain = true
		h.Publish(p)
	})

	// A wildcard subscription on another connection's worker, and a
	// load-balanced member whose group lives on a third.
	var d *Conn
	var dt *testTransport
	for d == nil || d.w == c.w {
		dt = newTestTransport(enc)
		d = authedConn(h, dt)
	}
	subscribeAndWait(t, h, d, dt, SubSpec{Pattern: "+", Key: "app/+", Wildcard: true})
	group := ""
	for i := 0; group == "" || h.groupWorker(group) == c.w || h.groupWorker(group) == d.w; i++ {
		group = fmt.Sprint("g", i)
	}
	subscribeAndWait(t, h, c, tr, SubSpec{Pattern: "lb", Key: "app/lb", LoadBalance: true, Group: group})
	only("wildcard", map[int]uint64{own: 1, d.w.id: 1}, func() { h.Publish(publication("t")) })
	only("group", map[int]uint64{d.w.id: 1, h.groupWorker(group).id: 1}, func() { h.Publish(publication("lb")) })

	h.Unsubscribe(d, "+", nil)
	h.Unsubscribe(c, "t", nil)
	h.Unsubscribe(c, "lb", nil)
	eventually(t, "unsubscribed", func() bool { return h.Stats().Subscriptions == 0 && h.Stats().Groups == 0 })
	eventually(t, "no interest left", func() bool { return h.in.workers("app/t")|h.in.workers("app/lb") == 0 })
	only("after the unsubscribes", map[int]uint64{}, func() {
		h.Publish(publication("t"))
		h.Publish(publication("lb"))
	})
	n := 0
	h.in.keys.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Fatalf("%d keys left in the interest index", n)
	}
}

// TestRaceOnPipelinedSubscribeThenPublish: a publication handed over right
// after a broadcast subscription (exact or wildcard), before the
// subscription's worker has handled it, still reaches it (the connection's
// own echo, wire-reference.md §6.2), over and over with many goroutines. (A
// load-balanced member is added by its group's worker after its own
// worker has handled the subscribe, so a publication pipelined behind it
// may reach the group first, as it always could.)
func TestRaceOnPipelinedSubscribeThenPublish(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 8})
	const conns, rounds = 8, 200
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		c := authedConn(h, newTestTransport(enc))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				key := fmt.Sprintf("app/c%d/r%d", i, r)
				spec := &SubSpec{Pattern: key, Key: key}
				if r%2 == 1 {
					spec.Wildcard, spec.Key, spec.Pattern = true, fmt.Sprintf("app/c%d/+", i), fmt.Sprintf("c%d/+", i)
				}
				h.Subscribe(c, spec)
				h.Publish(&Publication{Key: key, Topic: key, Echo: true, Origin: c, Msg: wire.Message{Topic: key, From: "me"}})
				h.Unsubscribe(c, spec.Pattern, nil)
			}
		}()
	}
	wg.Wait()
	eventually(t, "every echo", func() bool { return h.Stats().Deliveries == conns*rounds })
	eventually(t, "no interest left", func() bool {
		n := 0
		h.in.keys.Range(func(any, any) bool { n++; return true })
		return n == 0 && h.in.wild.Load() == 0
	})
}

// BenchmarkPublishToOneSubscriber publishes to a key with one subscriber
// on a hub of 8 workers and reports, per publish, the workers the
// publication was queued on and the wake-ups the workers got: 1 and at
// most 1 (several publications queued before a worker wakes share one).
func BenchmarkPublishToOneSubscriber(b *testing.B) {
	h, c := benchHub(b, 8)
	h.Subscribe(c, &SubSpec{Pattern: "demo/general/bench", Key: "app/demo/general/bench", Reply: []byte("x")})
	for c.PendingReplies() > 0 {
		time.Sleep(time.Millisecond)
	}
	msg := wire.Message{Topic: "demo/general/bench", Data: make([]byte, 100), From: "alice"}
	p := &Publication{Key: "app/demo/general/bench", Topic: msg.Topic, Msg: msg, Echo: true}
	sum := func() (queued, wakes uint64) {
		for _, w := range h.workers {
			q, wk := w.in.counts()
			queued, wakes = queued+q, wakes+wk
		}
		return
	}
	q0, w0 := sum()
	d0 := h.Stats().Deliveries
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Publish(p)
	}
	for h.Stats().Deliveries-d0 < uint64(b.N) {
		time.Sleep(100 * time.Microsecond)
	}
	b.StopTimer()
	q1, w1 := sum()
	b.ReportMetric(float64(q1-q0)/float64(b.N), "workers/op")
	b.ReportMetric(float64(w1-w0)/float64(b.N), "wakeups/op")
}

// BenchmarkSubscribeReply measures one subscribe with a reply, from
// Hub.Subscribe on the reader to the reply in the outbound queue: its place
// in the reply queue, the interest mark, the worker's op and the written
// `subscribed`. Each op re-subscribes the same pattern, which replaces the
// subscription (one new entry). allocs/op is the figure to watch: the
// reply queue and the confirmation add none (the queue is pooled, the
// confirmation is a method, not a closure).
func BenchmarkSubscribeReply(b *testing.B) {
	h, c := benchHub(b, 2)
	spec := &SubSpec{Pattern: "demo/general/bench", Key: "app/demo/general/bench", Reply: []byte("x"), NoRetained: true}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.Subscribe(c, spec)
		for c.PendingReplies() > 0 {
			runtime.Gosched()
		}
	}
}

// benchHub starts a hub of the given number of workers with one connection
// that writes to /dev/null.
func benchHub(b *testing.B, workers int) (*Hub, *Conn) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	h := New(Config{Workers: workers})
	h.Start()
	b.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	return h, h.Register(devNull{int(f.Fd())})
}
