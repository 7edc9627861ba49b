// Command worker-pool shares jobs between load-balanced workers: every
// worker subscribes to demo/general/jobs in the same load-balance group, so
// kraken hands each job to one worker, in turn.
//
//	go run ./examples/go/worker-pool --workers 3 --jobs 9
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

const topic = "demo/general/jobs"

type job struct {
	Run     int64  `json:"run"` // which run of this program published it
	ID      int    `json:"id"`
	Payload string `json:"payload"`
}

func main() {
	url := flag.String("url", envOr("KRAKEN_URL", client.DefaultURL), "broker WebSocket URL (env KRAKEN_URL)")
	workers := flag.Int("workers", 3, "number of workers")
	jobs := flag.Int("jobs", 9, "number of jobs to publish")
	group := flag.String("group", "workers", "load-balance group")
	flag.Parse()
	if err := run(*url, *workers, *jobs, *group); err != nil {
		fmt.Fprintln(os.Stderr, "worker-pool:", err)
		os.Exit(1)
	}
}

func run(url string, workers, jobs int, group string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(jobs)
	var mu sync.Mutex
	done := make([]int, workers)
	// A durable group (STORE_BACKEND=jetstream DURABLE_GROUPS=true) may
	// hand out jobs kept from an earlier run, and a job again when the
	// worker that had it dropped before acking it: only this run's jobs
	// count, each once.
	run := time.Now().UnixNano()
	seen := map[int]bool{}

	for w := range workers {
		c := client.New("dev-token-bob", client.Options{URL: url})
		defer c.Close()
		if err := c.Connect(ctx); err != nil {
			return fmt.Errorf("worker %d: %w", w+1, err)
		}
		err := c.Subscribe(ctx, topic, func(data client.Data, meta client.Meta) {
			var j job
			if err := data.Decode(&j); err != nil {
				fmt.Printf("worker %d: bad job %s: %v\n", w+1, data, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case j.Run != run:
				fmt.Printf("worker %d: job %d of an earlier run (%s)\n", w+1, j.ID, j.Payload)
			case seen[j.ID]:
				fmt.Printf("worker %d: job %d again (%s)\n", w+1, j.ID, j.Payload)
			default:
				fmt.Printf("worker %d: job %d (%s)\n", w+1, j.ID, j.Payload)
				seen[j.ID] = true
				done[w]++
				wg.Done()
			}
		}, client.WithLoadBalance(group))
		if err != nil {
			return fmt.Errorf("worker %d: %w", w+1, err)
		}
	}

	producer := client.New("dev-token-alice", client.Options{URL: url})
	defer producer.Close()
	if err := producer.Connect(ctx); err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	// Stay under the demo tokens' rate limit of 50 publishes per second.
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for i := 1; i <= jobs; i++ {
		if err := producer.Publish(ctx, topic, job{Run: run, ID: i, Payload: fmt.Sprintf("resize image %d", i)}); err != nil {
			return fmt.Errorf("publish job %d: %w", i, err)
		}
		<-tick.C
	}

	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		return fmt.Errorf("not every job was done: %w", ctx.Err())
	}
	mu.Lock()
	defer mu.Unlock()
	for w, n := range done {
		fmt.Printf("worker %d did %d jobs\n", w+1, n)
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
