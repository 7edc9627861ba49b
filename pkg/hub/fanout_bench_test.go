package hub

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// devNull is a transport whose writes always succeed at once, so the
// benchmarks measure the broker's own work per delivery.
type devNull struct{ fd int }

func (d devNull) Writev(bufs [][]byte) (int, error) {
	if len(bufs) == 1 {
		return unix.Write(d.fd, bufs[0])
	}
	return unix.Writev(d.fd, bufs)
}
func (d devNull) CloseWrite() error  { return nil }
func (d devNull) Encoding() Encoding { return wsframe.Encoding{} }
func (d devNull) Close() error       { return nil }

// benchWorker builds a worker with n connections subscribed to key, without
// starting any goroutine.
func benchWorker(tb testing.TB, n int, withFeatures bool) (*worker, *Publication) {
	f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		tb.Skip(err)
	}
	tb.Cleanup(func() { _ = f.Close() })
	h := New(Config{Workers: 1})
	w := h.workers[0]
	newConn := func(id uint64) *Conn {
		c := &Conn{ID: id, t: devNull{int(f.Fd())}, w: w, idx: -1}
		w.handle(&op{kind: opRegister, c: c})
		return c
	}
	for i := 0; i < n; i++ {
		w.subscribe(newConn(uint64(i)), &SubSpec{Pattern: "demo/general/bench", Key: "app/demo/general/bench"})
	}
	if withFeatures {
		// The other delivery features present on the same worker: a retained
		// message, filtered and wildcard subscriptions on other topics, and a
		// load-balanced group.
		other := newConn(uint64(n + 1))
		w.subscribe(other, &SubSpec{Pattern: "demo/general/other", Key: "app/demo/general/other", Filters: []string{"x"}})
		w.subscribe(other, &SubSpec{Pattern: "demo/+/other", Key: "app/demo/+/other", Wildcard: true})
		w.grp.add(&member{c: other, key: "app/demo/general/jobs", group: "g"})
		w.retained.update(&Publication{Key: "app/demo/general/state"}, 1, 1<<62)
	}
	msg := wire.Message{Topic: "demo/general/bench", Data: make([]byte, 100), From: "alice", FromType: "actor", Timestamp: 1, MsgID: "3f2a0000-0000-4000-8000-000000000000"}
	p := &Publication{Key: "app/demo/general/bench", Topic: msg.Topic, Msg: msg, Echo: true}
	return w, withForms(p)
}

// withForms builds p's frames as Hub.Publish does for subscribers that are
// all on devNull (encoding 0, plain), for benchmarks that call fanOut
// directly.
func withForms(p *Publication) *Publication {
	p.forms = &built{}
	p.forms.frames[0] = wsframe.Encoding{}.Message(&p.Msg)
	return p
}

// BenchmarkFanout measures one publication delivered to every subscriber of
// a worker: the shared frame queued to each connection and flushed.
func BenchmarkFanout(b *testing.B) {
	for _, features := range []bool{false, true} {
		for _, n := range []int{1, 1000, 10000} {
			b.Run(fmt.Sprintf("subs=%d/features=%v", n, features), func(b *testing.B) {
				w, p := benchWorker(b, n, features)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					w.fanOut(p)
					w.flushTouched()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delivery")
			})
		}
	}
}

// TestFanoutAllocatesNothingPerDelivery checks the encode-once promise: a
// publication to 1,000 subscribers allocates nothing, with or without the
// other delivery features present.
func TestFanoutAllocatesNothingPerDelivery(t *testing.T) {
	for _, features := range []bool{false, true} {
		w, p := benchWorker(t, 1000, features)
		// AllocsPerRun counts the whole process's allocations, so a
		// goroutine of an earlier test still winding down (its hub's
		// ticker, a cleanup) can add some; an allocation of the fan-out
		// itself shows in every attempt, so the fewest of three counts.
		allocs := -1.0
		for range 3 {
			n := testing.AllocsPerRun(20, func() {
				w.fanOut(p)
				w.flushTouched()
			})
			if allocs < 0 || n < allocs {
				allocs = n
			}
		}
		if allocs != 0 {
			t.Fatalf("features=%v: %.1f allocations per publication to 1,000 subscribers, want 0", features, allocs)
		}
	}
}
