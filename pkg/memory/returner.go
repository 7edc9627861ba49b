// Package memory gives back to the operating system the heap that a burst
// of connections left free, once the broker is quiet again.
//
// Setting a connection up allocates about twice what it keeps (its
// replies, request buffers, the auth call), and at the default GOGC=100
// the Go runtime lets the heap grow to twice the live heap before it
// collects, then keeps the freed pages: its scavenger gives back only what
// lies above about 110 % of the next heap goal. So after a burst of
// connects the process holds up to twice what its idle connections use,
// for as long as it stays up (bench/RESULTS.md, "An idle connection in
// 1 KB"). The Returner watches for the end of such a burst (no connection
// accepted during one Interval) and then, when what could be given back is
// worth it, collects twice (runtime.GC, then runtime/debug.FreeOSMemory)
// and releases every free page. A Returner is one goroutine and one ticker per
// process, whatever the number of connections.
//
// The cost of a return is a collection of the live heap, so a return is
// made only when the memory it can give back is at least Config.Fraction
// of the live heap (and Config.MinBytes): a return is two collections (the
// first empties the sync.Pools into their victim caches, the second frees
// them), so at most about twenty bytes are marked per byte given back, and
// only after a burst: Config.MinAccepts connections or more accepted
// within Config.Window (1,000 in 5 s), then a quiet Interval. A trickle of
// connects, however long, and a broker that never goes quiet are left to
// the runtime's own scavenger.
package memory

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	kmetrics "github.com/NoLagApp/kraken/pkg/metrics"
)

// Defaults of Config.
const (
	// DefaultInterval is how often the Returner looks, and how long no
	// connection must be accepted for the broker to count as quiet.
	DefaultInterval = 500 * time.Millisecond
	// DefaultMinAccepts is the least number of connections a burst must
	// have accepted within Window for its end to be looked at.
	DefaultMinAccepts = 1000
	// DefaultWindow is how far back from its end a burst is counted.
	DefaultWindow = 5 * time.Second
	// DefaultMinBytes is the least memory worth a return, in bytes.
	DefaultMinBytes = 1 << 20
	// DefaultFraction is the least memory worth a return as a fraction of
	// the live heap.
	DefaultFraction = 0.1
)

// Config configures a Returner. Zero values take the defaults.
type Config struct {
	// Accepted returns the number of connections accepted since the start
	// (hub.Hub.Accepted); the broker is quiet when it did not change over
	// one Interval. Required.
	Accepted func() uint64
	// Interval is the time between two looks (DefaultInterval).
	Interval time.Duration
	// MinAccepts is the least number of connections accepted within
	// Window before a quiet Interval for that Interval to be looked at
	// (DefaultMinAccepts): a trickle of connects (fewer than MinAccepts
	// per Window) never makes a collection, however long it lasts.
	MinAccepts uint64
	// Window is how far back from a quiet Interval the accepts are counted
	// (DefaultWindow), rounded to whole Intervals.
	Window time.Duration
	// MinBytes is the least reclaimable memory, in bytes, that makes a
	// return (DefaultMinBytes).
	MinBytes uint64
	// Fraction is the least reclaimable memory, as a fraction of the live
	// heap, that makes a return (DefaultFraction): it bounds the
	// collection's work per byte given back.
	Fraction float64
	// Logger gets one debug line per return; nil logs nothing.
	Logger *zap.Logger
}

// Returner gives freed heap back to the operating system after bursts of
// connections (the package comment). Its Run is its only goroutine; its
// counters may be read from any goroutine.
type Returner struct {
	cfg      Config
	returns  atomic.Uint64
	returned atomic.Uint64
	samples  []metrics.Sample
	// counts holds the accepted count at each of the last Window/Interval
	// looks, oldest at next; Run's alone.
	counts []uint64
	next   int
}

// The runtime/metrics read at each look.
const (
	metricFree     = "/memory/classes/heap/free:bytes"     // free pages not yet released
	metricObjects  = "/memory/classes/heap/objects:bytes"  // live objects and dead ones not yet swept
	metricLive     = "/gc/heap/live:bytes"                 // live heap as of the last collection
	metricReleased = "/memory/classes/heap/released:bytes" // free pages given back
)

// New returns a Returner for cfg; Run starts it.
func New(cfg Config) *Returner {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.MinAccepts == 0 {
		cfg.MinAccepts = DefaultMinAccepts
	}
	if cfg.Window < cfg.Interval {
		cfg.Window = max(DefaultWindow, cfg.Interval)
	}
	if cfg.MinBytes == 0 {
		cfg.MinBytes = DefaultMinBytes
	}
	if cfg.Fraction <= 0 {
		cfg.Fraction = DefaultFraction
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	r := &Returner{cfg: cfg, counts: make([]uint64, int(cfg.Window/cfg.Interval))}
	for _, name := range []string{metricFree, metricObjects, metricLive, metricReleased} {
		r.samples = append(r.samples, metrics.Sample{Name: name})
	}
	return r
}

// Run looks every Interval until ctx ends, and returns then: at an
// Interval with no accept that ends a Window in which MinAccepts
// connections or more were accepted, it calls Look.
func (r *Returner) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	r.reset(r.cfg.Accepted())
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if r.quiet(r.cfg.Accepted()) {
			r.Look()
		}
	}
}

// reset forgets the accepts counted so far: now is the count at every
// look of the Window.
func (r *Returner) reset(now uint64) {
	for i := range r.counts {
		r.counts[i] = now
	}
}

// quiet takes the accepted count at one look and reports whether the
// Interval since the last look had no accept and ended a burst: at least
// MinAccepts accepted since the oldest look of the Window. A burst is
// reported once: its counts are forgotten then.
func (r *Returner) quiet(now uint64) bool {
	last := r.counts[(r.next+len(r.counts)-1)%len(r.counts)]
	oldest := r.counts[r.next]
	r.counts[r.next] = now
	r.next = (r.next + 1) % len(r.counts)
	if now != last || now-oldest < r.cfg.MinAccepts {
		return false
	}
	r.reset(now)
	return true
}

// Reclaimable returns what a return could give back now, in bytes: the
// free pages the runtime keeps plus the dead objects not yet collected,
// and the live heap as of the last collection.
func (r *Returner) Reclaimable() (reclaimable, live uint64) {
	metrics.Read(r.samples)
	free, objects := r.samples[0].Value.Uint64(), r.samples[1].Value.Uint64()
	live = r.samples[2].Value.Uint64()
	reclaimable = free
	if objects > live {
		reclaimable += objects - live
	}
	return reclaimable, live
}

// Look returns the reclaimable memory to the operating system if it is at
// least MinBytes and Fraction of the live heap, and reports whether it
// did. Run calls it once the broker is quiet after a burst.
func (r *Returner) Look() bool {
	reclaimable, live := r.Reclaimable()
	if reclaimable < r.cfg.MinBytes || float64(reclaimable) < r.cfg.Fraction*float64(live) {
		return false
	}
	before := r.samples[3].Value.Uint64()
	start := time.Now()
	// Two collections: the first moves what the sync.Pools hold (the
	// queues, buffers and tasks a burst took and gave back) to their
	// victim caches, the second's frees them, and FreeOSMemory then gives
	// every free page back.
	runtime.GC()
	debug.FreeOSMemory()
	metrics.Read(r.samples)
	after := r.samples[3].Value.Uint64()
	var gave uint64
	if after > before {
		gave = after - before
	}
	r.returns.Add(1)
	r.returned.Add(gave)
	r.cfg.Logger.Debug("memory returned to the operating system after a burst of connections",
		zap.Uint64("bytes", gave), zap.Uint64("live_heap_bytes", r.samples[2].Value.Uint64()),
		zap.Duration("took", time.Since(start)))
	return true
}

// Returns returns the number of returns made and the bytes they gave back.
func (r *Returner) Returns() (n, bytes uint64) { return r.returns.Load(), r.returned.Load() }

// Collect implements metrics.Component: kraken_memory_returns_total and
// kraken_memory_returned_bytes_total.
func (r *Returner) Collect(_ context.Context, d *kmetrics.Descs, ch chan<- prometheus.Metric) {
	n, b := r.Returns()
	kmetrics.Counter(ch, d.MemoryReturns, n)
	kmetrics.Counter(ch, d.MemoryReturned, b)
}
