package memory

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestQuietOnlyAfterABurst: a quiet Interval is looked at once after a
// burst of at least MinAccepts connections within the Window; a smaller
// burst, a trickle of any length (fewer than MinAccepts per Window, with
// or without quiet Intervals between its connects), and an Interval still
// accepting are not.
func TestQuietOnlyAfterABurst(t *testing.T) {
	var accepted uint64
	r := New(Config{Accepted: func() uint64 { return accepted }, MinAccepts: 1000,
		Interval: 500 * time.Millisecond, Window: 5 * time.Second}) // a Window of 10 looks
	r.reset(0)
	tick := func(add uint64) bool {
		accepted += add
		return r.quiet(accepted)
	}
	if tick(0) {
		t.Fatal("a quiet Interval with no burst before it is looked at")
	}
	if tick(600) || tick(300) {
		t.Fatal("an Interval still accepting is looked at")
	}
	if tick(0) {
		t.Fatal("the end of a burst of 900 connections is looked at, want only 1,000 or more")
	}
	for i := 0; i < 400; i++ { // 6 a second for 200 s, no quiet Interval: 1,200 in all
		if tick(3) {
			t.Fatalf("an Interval still accepting is looked at (%d)", i)
		}
	}
	if tick(0) {
		t.Fatal("the end of a trickle of 1,200 connects over 200 s is looked at")
	}
	for i := 0; i < 3000; i++ { // a trickle with quiet Intervals between its connects
		if tick(1) || tick(0) {
			t.Fatalf("a trickle of connects is looked at (after %d)", i+1)
		}
	}
	if tick(700) || tick(400) {
		t.Fatal("an Interval still accepting is looked at")
	}
	if !tick(0) {
		t.Fatal("the end of a burst of 1,100 connections in two Intervals is not looked at")
	}
	if tick(0) || tick(0) {
		t.Fatal("the end of one burst is looked at twice")
	}
	for i := 0; i < 20; i++ { // 1,000 over 10 s: 500 a Window
		if tick(50) {
			t.Fatalf("an Interval still accepting is looked at (%d)", i)
		}
	}
	if tick(0) {
		t.Fatal("1,000 connects spread over 10 s (500 in the Window) are looked at")
	}
}

var sink [][]byte

// garbage allocates about n bytes and drops them, so that a collection
// leaves them as free pages.
func garbage(n int) {
	for i := 0; i < n/(64<<10); i++ {
		sink = append(sink, make([]byte, 64<<10))
	}
	sink = nil
}

// TestLookGivesFreedHeapBack: with far more freed heap than the live heap,
// Look collects and the runtime's released bytes grow by at least what
// was freed; right after, with nothing left to give back, it does nothing.
func TestLookGivesFreedHeapBack(t *testing.T) {
	r := New(Config{Accepted: func() uint64 { return 0 }})
	garbage(64 << 20)
	runtime.GC() // swept: free pages the runtime keeps
	if rec, live := r.Reclaimable(); rec < 32<<20 {
		t.Fatalf("reclaimable %d B with a live heap of %d B after 64 MiB were freed, want at least 32 MiB", rec, live)
	}
	if !r.Look() {
		t.Fatal("Look did not return 64 MiB of freed heap")
	}
	n, b := r.Returns()
	if n != 1 || b < 32<<20 {
		t.Fatalf("returns %d, %d B given back; want 1 and at least 32 MiB", n, b)
	}
	if rec, _ := r.Reclaimable(); rec >= r.cfg.MinBytes {
		t.Fatalf("reclaimable %d B right after a return, want under %d", rec, r.cfg.MinBytes)
	}
	if r.Look() {
		t.Fatal("Look returned memory again with nothing freed since")
	}
}

// TestRunReturnsAfterABurstAndStops: Run makes one return after a burst
// ends, none while accepts go on, and returns when its context ends.
func TestRunReturnsAfterABurstAndStops(t *testing.T) {
	var accepted atomic.Uint64
	r := New(Config{Accepted: accepted.Load, Interval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	stop := time.Now().Add(300 * time.Millisecond)
	for time.Now().Before(stop) { // accepting all along: a burst that has not ended
		accepted.Add(100)
		garbage(1 << 20)
		time.Sleep(5 * time.Millisecond)
	}
	if n, _ := r.Returns(); n != 0 {
		t.Fatalf("%d returns while connections were still being accepted", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for n, _ := r.Returns(); n == 0; n, _ = r.Returns() {
		if time.Now().After(deadline) {
			t.Fatal("no return within 5 s of the end of a burst")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return when its context ended")
	}
	if n, _ := r.Returns(); n != 1 {
		t.Fatalf("%d returns after one burst, want 1", n)
	}
}
