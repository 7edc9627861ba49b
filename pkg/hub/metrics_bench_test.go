package hub

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/wire"
)

// benchPublication returns a 100-byte publication to demo/general/bench, as
// benchWorker's, with its message.
func benchPublication() (wire.Message, *Publication) {
	msg := wire.Message{Topic: "demo/general/bench", Data: make([]byte, 100), From: "alice", FromType: "actor", Timestamp: 1, MsgID: "3f2a0000-0000-4000-8000-000000000000"}
	p := &Publication{Key: "app/demo/general/bench", Topic: msg.Topic, Msg: msg, Echo: true}
	return msg, withForms(p)
}

// BenchmarkFanoutMetrics is BenchmarkFanout with and without what /metrics
// costs the delivery path, in the same run (with the other delivery
// features present, as BenchmarkFanout's features=true):
//
//   - metrics=off fans out exactly as BenchmarkFanout does, the code path
//     before the metrics existed;
//   - metrics=count goes through the worker's op handler; the delivered
//     bytes are counted per delivery on every path (a plain add to a
//     worker-owned field), so off and count differ by the op dispatch only;
//   - metrics=scrape is count plus what scrapes cost: a goroutine reading
//     the atomics a scrape reads (Hub.Stats and each inbox's depth) once a
//     millisecond, 15,000 times Prometheus' default rate, and the
//     worker-side part of WorkerStats (a pass over its connections) run on
//     the worker every 100 ms of benchmark time, 150 times that rate.
//
// The ratio of the ns/delivery medians of scrape (or count) to off is the
// cost of the metrics (bench/RESULTS.md, "Metrics and the fan-out path").
func BenchmarkFanoutMetrics(b *testing.B) {
	for _, n := range []int{1, 1000, 10000} {
		for _, mode := range []string{"off", "count", "scrape"} {
			b.Run(fmt.Sprintf("subs=%d/metrics=%s", n, mode), func(b *testing.B) {
				w, p := benchWorker(b, n, true)
				o := op{kind: opPublish, pub: p}
				stop := make(chan struct{})
				var scraper sync.WaitGroup
				if mode == "scrape" {
					scraper.Add(1)
					go func() {
						defer scraper.Done()
						t := time.NewTicker(time.Millisecond)
						defer t.Stop()
						for {
							select {
							case <-stop:
								return
							case <-t.C:
								_ = w.h.Stats()
								for _, x := range w.h.workers {
									_ = x.inboxStats()
								}
							}
						}
					}()
				}
				b.ReportAllocs()
				b.ResetTimer()
				lastScrape := time.Now()
				for i := 0; i < b.N; i++ {
					if mode == "off" {
						w.fanOut(p)
					} else {
						w.handle(&o)
					}
					w.flushTouched()
					if mode == "scrape" && i%64 == 0 && time.Since(lastScrape) >= 100*time.Millisecond {
						_ = w.ownStats()
						lastScrape = time.Now()
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/delivery")
				close(stop)
				scraper.Wait()
			})
		}
	}
}
