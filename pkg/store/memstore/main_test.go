package memstore

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// t0 is the start of every fake clock.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeClock is a manual clock, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: t0} }

// Now returns the current fake time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// harness is a Store whose sweeper is driven by the test: tick runs one
// sweep, and swept receives once that sweep has finished.
type harness struct {
	*Store
	clock *fakeClock
	tick  chan time.Time
	swept chan struct{}
}

// newHarness returns a Store on a fake clock with a manual sweeper; it is
// closed when the test ends.
func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), tick: make(chan time.Time), swept: make(chan struct{})}
	cfg.Now = h.clock.Now
	h.Store = newStore(cfg.withDefaults(), h.tick, func() {}, func() { h.swept <- struct{}{} })
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// runSweeper makes the sweeper goroutine run one sweep and waits for it.
func (h *harness) runSweeper() {
	h.tick <- h.clock.Now()
	<-h.swept
}
