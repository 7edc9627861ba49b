package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/store/storetest"
)

var ctx = context.Background()

// id returns a distinct UUIDv4-shaped message id for n.
func id(n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", n, n) }

// rec returns a record with message id id(n).
func rec(n int) *store.Record {
	return &store.Record{MsgID: id(n), ProjectID: "p", AppID: "a", Topic: "p/a/chat", Pattern: "chat", Sender: "s", PayloadSize: n, Timestamp: t0}
}

// appendN appends records from..to-1 and fails the test on an error.
func appendN(t *testing.T, s *Store, from, to int) {
	t.Helper()
	for n := from; n < to; n++ {
		if err := s.Append(ctx, rec(n)); err != nil {
			t.Fatalf("Append(%d) = %v", n, err)
		}
	}
}

// held reports whether Get finds record n.
func held(s *Store, n int) bool {
	_, _, ok := s.Get(ctx, id(n))
	return ok
}

// checkConsistent checks that the count, every shard's map and every
// shard's ring agree. The store must be quiescent.
func checkConsistent(t *testing.T, s *Store) {
	t.Helper()
	total := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		if len(sh.m) != sh.fifo.n {
			t.Errorf("shard %d: map holds %d, ring %d", i, len(sh.m), sh.fifo.n)
		}
		for k := 0; k < sh.fifo.n; k++ {
			e := sh.fifo.buf[(sh.fifo.head+k)&(len(sh.fifo.buf)-1)]
			if sh.m[e.rec.MsgID] != e {
				t.Errorf("shard %d: ring entry %q is not in the map", i, e.rec.MsgID)
			}
		}
		total += len(sh.m)
		sh.mu.Unlock()
	}
	if got := s.Len(); got != total {
		t.Errorf("Len() = %d, shards hold %d", got, total)
	}
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s := New(Config{})
		t.Cleanup(func() { _ = s.Close() })
		return s
	}, storetest.Options{Records: true})
}

func TestConfigDefaults(t *testing.T) {
	now := func() time.Time { return t0 }
	tests := []struct {
		name string
		give Config
		want Config
	}{
		{
			name: "zero value",
			give: Config{},
			want: Config{MaxMessages: 10000, TTL: time.Hour, MaxAcksPerMessage: 1000, SweepInterval: time.Minute},
		},
		{
			name: "negative values",
			give: Config{MaxMessages: -1, TTL: -time.Second, MaxAcksPerMessage: -5, SweepInterval: -time.Second},
			want: Config{MaxMessages: 10000, TTL: time.Hour, MaxAcksPerMessage: 1000, SweepInterval: time.Minute},
		},
		{
			name: "short TTL shortens the sweep",
			give: Config{TTL: 10 * time.Second},
			want: Config{MaxMessages: 10000, TTL: 10 * time.Second, MaxAcksPerMessage: 1000, SweepInterval: 10 * time.Second},
		},
		{
			name: "set values are kept",
			give: Config{MaxMessages: 5, TTL: time.Minute, MaxAcksPerMessage: 2, SweepInterval: time.Hour, Now: now},
			want: Config{MaxMessages: 5, TTL: time.Minute, MaxAcksPerMessage: 2, SweepInterval: time.Hour},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.give.withDefaults()
			if got.Now == nil {
				t.Fatal("Now is nil")
			}
			type bounds struct {
				maxMessages, maxAcks int
				ttl, sweep           time.Duration
			}
			g := bounds{got.MaxMessages, got.MaxAcksPerMessage, got.TTL, got.SweepInterval}
			w := bounds{tt.want.MaxMessages, tt.want.MaxAcksPerMessage, tt.want.TTL, tt.want.SweepInterval}
			if g != w {
				t.Fatalf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestCountBound checks the prune rule of wire-reference.md §6.5: once the count
// goes over the limit, max(count − limit, count/10) of the oldest records go.
func TestCountBound(t *testing.T) {
	tests := []struct {
		name    string
		max     int
		give    int // records appended
		want    int // Len afterwards
		wantNew int // how many of the newest records must all be held
	}{
		{name: "at the limit", max: 100, give: 100, want: 100, wantNew: 100},
		{name: "one over drops 10 %", max: 100, give: 101, want: 91, wantNew: 50},
		{name: "refills to the limit", max: 100, give: 110, want: 100, wantNew: 50},
		{name: "second prune", max: 100, give: 111, want: 91, wantNew: 50},
		{name: "count/10 rounds down: drop the excess", max: 10, give: 11, want: 10, wantNew: 9},
		{name: "limit 20: drop 21/10 = 2", max: 20, give: 21, want: 19, wantNew: 10},
		{name: "limit 5: 6/10 = 0, drop the excess", max: 5, give: 6, want: 5, wantNew: 4},
		{name: "limit 1", max: 1, give: 5, want: 1, wantNew: 1},
		{name: "many prunes", max: 1000, give: 10_000, want: 1000, wantNew: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHarness(t, Config{MaxMessages: tt.max})
			for n := range tt.give {
				appendN(t, s.Store, n, n+1)
				if s.Len() > tt.max {
					t.Fatalf("after %d appends Len() = %d, over the limit %d", n+1, s.Len(), tt.max)
				}
			}
			if got := s.Len(); got != tt.want {
				t.Fatalf("Len() = %d, want %d", got, tt.want)
			}
			checkConsistent(t, s.Store)
			heldCount := 0
			for n := range tt.give {
				if held(s.Store, n) {
					heldCount++
				}
			}
			if heldCount != tt.want {
				t.Fatalf("Get finds %d records, want %d", heldCount, tt.want)
			}
			for n := tt.give - tt.wantNew; n < tt.give; n++ {
				if !held(s.Store, n) {
					t.Fatalf("record %d of the newest %d was dropped", n, tt.wantNew)
				}
			}
			// Within each shard, every dropped record is older than every
			// held one.
			newestDropped := map[*shard]int{}
			for n := range tt.give {
				if !held(s.Store, n) {
					newestDropped[s.shard(id(n))] = n
				}
			}
			for n := range tt.give {
				sh := s.shard(id(n))
				if d, ok := newestDropped[sh]; ok && held(s.Store, n) && n < d {
					t.Fatalf("record %d held while the newer %d of its shard was dropped", n, d)
				}
			}
		})
	}
}

// TestDropOldest checks the proportional split: exactly min(drop, count)
// records go, the oldest of each shard.
func TestDropOldest(t *testing.T) {
	tests := []struct {
		name        string
		give        int
		drop        int64
		wantDropped int64
	}{
		{name: "nothing", give: 50, drop: 0, wantDropped: 0},
		{name: "a few", give: 50, drop: 7, wantDropped: 7},
		{name: "most", give: 500, drop: 451, wantDropped: 451},
		{name: "all", give: 50, drop: 50, wantDropped: 50},
		{name: "more than held", give: 50, drop: 80, wantDropped: 50},
		{name: "empty store", give: 0, drop: 5, wantDropped: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHarness(t, Config{})
			appendN(t, s.Store, 0, tt.give)
			if got := s.dropOldest(tt.drop); got != tt.wantDropped {
				t.Fatalf("dropOldest(%d) = %d, want %d", tt.drop, got, tt.wantDropped)
			}
			if got, want := s.Len(), tt.give-int(tt.wantDropped); got != want {
				t.Fatalf("Len() = %d, want %d", got, want)
			}
			checkConsistent(t, s.Store)
		})
	}
}

// TestTTL checks expiry on an injected clock: Get hides a record from the
// instant its TTL runs out, and the sweeper goroutine then removes it from
// memory (decisions.md OQ-31).
func TestTTL(t *testing.T) {
	const ttl = time.Hour
	type batch struct {
		at time.Duration // clock offset from t0 when appended
		n  int           // records appended
	}
	tests := []struct {
		name      string
		give      []batch
		advanceTo time.Duration // clock offset from t0 when checked
		wantHeld  int           // records Get still finds, the newest ones
	}{
		{name: "just before the TTL", give: []batch{{0, 100}}, advanceTo: ttl - time.Nanosecond, wantHeld: 100},
		{name: "at the TTL", give: []batch{{0, 100}}, advanceTo: ttl, wantHeld: 0},
		{name: "long after", give: []batch{{0, 100}}, advanceTo: 10 * ttl, wantHeld: 0},
		{name: "older half expires", give: []batch{{0, 60}, {30 * time.Minute, 40}}, advanceTo: ttl, wantHeld: 40},
		{name: "three generations", give: []batch{{0, 10}, {ttl / 2, 20}, {ttl, 30}}, advanceTo: ttl + ttl/2, wantHeld: 30},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHarness(t, Config{TTL: ttl})
			total := 0
			for _, b := range tt.give {
				s.clock.Advance(t0.Add(b.at).Sub(s.clock.Now()))
				appendN(t, s.Store, total, total+b.n)
				total += b.n
			}
			s.clock.Advance(t0.Add(tt.advanceTo).Sub(s.clock.Now()))

			// Expired records are hidden before any sweep, also from Ack.
			if err := s.Ack(ctx, "actor-a", id(0), id(total-1)); err != nil {
				t.Fatalf("Ack = %v", err)
			}
			for n := range total {
				want := n >= total-tt.wantHeld
				if got := held(s.Store, n); got != want {
					t.Fatalf("before the sweep: Get(%d) ok=%v, want %v", n, got, want)
				}
			}
			if got := s.Len(); got != total {
				t.Fatalf("before the sweep: Len() = %d, want %d", got, total)
			}

			s.runSweeper()
			if got := s.Len(); got != tt.wantHeld {
				t.Fatalf("after the sweep: Len() = %d, want %d", got, tt.wantHeld)
			}
			checkConsistent(t, s.Store)
			if tt.wantHeld > 0 {
				if _, acks, _ := s.Get(ctx, id(total-1)); !slices.Equal(acks, []string{"actor-a"}) {
					t.Fatalf("ackedBy of the newest = %q, want [actor-a]", acks)
				}
			}
		})
	}
}

// TestSweepFreesMemory checks that a sweep that empties the store also
// releases the rings and rebuilds the grown maps.
func TestSweepFreesMemory(t *testing.T) {
	s := newHarness(t, Config{MaxMessages: 100_000, TTL: time.Minute})
	appendN(t, s.Store, 0, 20_000)
	s.clock.Advance(time.Minute)
	if got := s.Sweep(); got != 20_000 {
		t.Fatalf("Sweep() = %d, want 20000", got)
	}
	for i := range s.shards {
		sh := &s.shards[i]
		if sh.fifo.buf != nil || sh.fifo.n != 0 {
			t.Errorf("shard %d: ring keeps %d slots for %d entries", i, len(sh.fifo.buf), sh.fifo.n)
		}
		if len(sh.m) != 0 || sh.peak != 0 {
			t.Errorf("shard %d: map holds %d, peak %d; want a rebuilt empty map", i, len(sh.m), sh.peak)
		}
	}
	appendN(t, s.Store, 20_000, 20_010)
	if got := s.Len(); got != 10 {
		t.Fatalf("Len() after refilling = %d, want 10", got)
	}
	checkConsistent(t, s.Store)
}

func TestAppendTimestamp(t *testing.T) {
	s := newHarness(t, Config{})
	s.clock.Advance(time.Second)
	given := t0.Add(-time.Minute)
	tests := []struct {
		name string
		give time.Time
		want time.Time
	}{
		{name: "kept", give: given, want: given},
		{name: "zero is filled from the clock", give: time.Time{}, want: t0.Add(time.Second)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rec(i)
			r.Timestamp = tt.give
			if err := s.Append(ctx, r); err != nil {
				t.Fatal(err)
			}
			got, _, ok := s.Get(ctx, r.MsgID)
			if !ok || !got.Timestamp.Equal(tt.want) {
				t.Fatalf("Get: ok=%v Timestamp=%v, want %v", ok, got.Timestamp, tt.want)
			}
		})
	}
}

// TestAckBound checks that each record keeps at most MaxAcksPerMessage
// distinct actors, in order of first ack, across the slice-to-set switch.
func TestAckBound(t *testing.T) {
	actors := func(from, to int) []string {
		var a []string
		for i := from; i < to; i++ {
			a = append(a, fmt.Sprintf("actor-%d", i))
		}
		return a
	}
	tests := []struct {
		name    string
		maxAcks int
		give    []string // actors acking, in order
		want    []string
	}{
		{name: "under the bound", maxAcks: 3, give: []string{"a", "b"}, want: []string{"a", "b"}},
		{name: "over the bound", maxAcks: 3, give: []string{"a", "b", "c", "d", "e"}, want: []string{"a", "b", "c"}},
		{name: "repeats do not count", maxAcks: 3, give: []string{"a", "a", "b", "a", "c", "b", "d"}, want: []string{"a", "b", "c"}},
		{name: "bound of one", maxAcks: 1, give: []string{"b", "a"}, want: []string{"b"}},
		{
			name: "past the linear scan", maxAcks: 20,
			give: slices.Concat(actors(0, 18), actors(0, 18), actors(18, 30)),
			want: actors(0, 20),
		},
		{name: "default bound", maxAcks: 0, give: slices.Concat(actors(0, 1200), actors(0, 1200)), want: actors(0, 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newHarness(t, Config{MaxAcksPerMessage: tt.maxAcks})
			appendN(t, s.Store, 0, 2)
			for _, a := range tt.give {
				if err := s.Ack(ctx, a, id(0)); err != nil {
					t.Fatalf("Ack(%q) = %v", a, err)
				}
			}
			_, got, ok := s.Get(ctx, id(0))
			if !ok || !slices.Equal(got, tt.want) {
				t.Fatalf("ackedBy = %q (ok=%v), want %q", got, ok, tt.want)
			}
			if _, other, _ := s.Get(ctx, id(1)); other != nil {
				t.Fatalf("ackedBy of an unacked record = %q, want nil", other)
			}
		})
	}
}

// TestErrors checks the sentinel errors of Append and Ack.
func TestErrors(t *testing.T) {
	s := newHarness(t, Config{})
	appendN(t, s.Store, 0, 1)
	closed := newHarness(t, Config{})
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{name: "nil record", call: func() error { return s.Append(ctx, nil) }, want: store.ErrInvalidRecord},
		{name: "empty id", call: func() error { return s.Append(ctx, &store.Record{Topic: "x"}) }, want: store.ErrInvalidRecord},
		{name: "duplicate", call: func() error { return s.Append(ctx, rec(0)) }, want: store.ErrDuplicate},
		{name: "empty actor", call: func() error { return s.Ack(ctx, "", id(0)) }, want: store.ErrInvalidAck},
		{name: "append after close", call: func() error { return closed.Append(ctx, rec(1)) }, want: store.ErrClosed},
		{name: "ack after close", call: func() error { return closed.Ack(ctx, "a", id(1)) }, want: store.ErrClosed},
		{name: "ack of nothing", call: func() error { return s.Ack(ctx, "a") }, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.want) {
				t.Fatalf("error = %v, want %v", err, tt.want)
			}
		})
	}
	if got := s.Len(); got != 1 {
		t.Fatalf("Len() = %d after rejected appends, want 1", got)
	}
}

// TestRace runs Append, Ack, Get, Len and sweeps concurrently on a small
// store with a moving clock, so pruning and expiry both happen while other
// goroutines use the shards. Run it with -race.
func TestRace(t *testing.T) {
	const (
		limit     = 200
		appenders = 8
		each      = 2000
	)
	s := newHarness(t, Config{MaxMessages: limit, TTL: time.Second, MaxAcksPerMessage: 4})
	var wg sync.WaitGroup
	for g := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := g*each + i
				if err := s.Append(ctx, rec(n)); err != nil {
					t.Errorf("Append(%d) = %v", n, err)
					return
				}
				_ = s.Ack(ctx, fmt.Sprintf("actor-%d", i%7), id(n), id(n-1), id(n-limit))
				s.Get(ctx, id(n-3))
				s.Len()
			}
		}()
	}
	done := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { // clock and sweeper
		defer bg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			s.clock.Advance(time.Millisecond)
			s.runSweeper()
		}
	}()
	wg.Wait()
	close(done)
	bg.Wait()
	if got := s.Len(); got > limit {
		t.Fatalf("Len() = %d after the appends, over the limit %d", got, limit)
	}
	checkConsistent(t, s.Store)
	s.clock.Advance(time.Second)
	s.runSweeper()
	if got := s.Len(); got != 0 {
		t.Fatalf("Len() = %d after everything expired, want 0", got)
	}
	checkConsistent(t, s.Store)
}

// TestAppendAllocs checks that Append allocates only the held entry, growth
// of the maps and rings aside.
func TestAppendAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	s := newHarness(t, Config{MaxMessages: 100_000})
	ids := make([]string, 2000)
	for i := range ids {
		ids[i] = id(i)
	}
	r := *rec(0)
	i := 0
	got := testing.AllocsPerRun(len(ids)-1, func() {
		r.MsgID = ids[i]
		i++
		if err := s.Append(ctx, &r); err != nil {
			t.Fatal(err)
		}
	})
	if got > 1 {
		t.Fatalf("Append allocates %.0f times per call, want at most 1", got)
	}
}
