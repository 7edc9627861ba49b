package history

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func seqAt(t *testing.T, h *History, at time.Time) (uint64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	after, gap, err := h.SeqAt(ctx, at)
	if err != nil {
		t.Fatalf("SeqAt(%v): %v", at, err)
	}
	return after, gap
}

func TestSeqAtIsThePositionBeforeTheFirstEntryAtOrAfterATime(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	if after, gap := seqAt(t, h, time.Now()); after != 0 || gap {
		t.Fatalf("empty stream: %d, gap %v", after, gap)
	}
	before := time.Now().Add(-time.Minute)
	for i := 0; i < 5; i++ {
		h.Append("a/b", "", []byte("first"))
	}
	settle(t, h)
	time.Sleep(50 * time.Millisecond)
	between := time.Now()
	time.Sleep(50 * time.Millisecond)
	for i := 0; i < 3; i++ {
		h.Append("c/d", "", []byte("second"))
	}
	settle(t, h)
	time.Sleep(10 * time.Millisecond)
	later := time.Now()

	if after, gap := seqAt(t, h, before); after != 0 || gap {
		t.Errorf("before everything: %d, gap %v; want 0", after, gap)
	}
	after, gap := seqAt(t, h, between)
	if after != 5 || gap {
		t.Errorf("between the batches: %d, gap %v; want 5", after, gap)
	}
	entries, res := read(t, h, []string{"#"}, after, 100)
	if got := topicsOf(t, entries); len(got) != 3 || got[0] != "c/d=second" || !res.Complete {
		t.Errorf("Read after %d: %q, %+v", after, got, res)
	}
	for _, e := range entries {
		if e.Time.Before(between) {
			t.Errorf("entry %d stored at %v, before %v", e.Seq, e.Time, between)
		}
	}
	if after, gap := seqAt(t, h, later); after != 8 || gap {
		t.Errorf("after everything: %d, gap %v; want LastSeq 8", after, gap)
	}
	// The time of an entry itself: that entry is the first at or after it.
	entries, _ = read(t, h, []string{"#"}, 0, 100)
	if after, gap := seqAt(t, h, entries[6].Time); after != 6 || gap {
		t.Errorf("at entry 7's time: %d, gap %v; want 6", after, gap)
	}
}

func TestSeqAtReportsAGapAfterRemoval(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{MaxAge: time.Second})
	start := time.Now().Add(-time.Minute)
	appendAndAgeOut(t, h, 5)
	// Empty stream that held entries: their times are unknown.
	if after, gap := seqAt(t, h, start); after != 5 || !gap {
		t.Errorf("emptied stream: %d, gap %v; want 5 and a gap", after, gap)
	}
	if after, gap := seqAt(t, h, time.Now()); after != 5 || !gap {
		t.Errorf("emptied stream, now: %d, gap %v; want 5 and a gap", after, gap)
	}
	h.Append("a/b", "", []byte("new"))
	h.Append("a/b", "", []byte("new"))
	settle(t, h)
	// The first entry at or after start is the stream's first (6), and 5 is gone.
	if after, gap := seqAt(t, h, start); after != 5 || !gap {
		t.Errorf("after removal: %d, gap %v; want 5 and a gap", after, gap)
	}
	entries, _ := read(t, h, []string{"#"}, 0, 100)
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	// At the second new entry's time: entry 6 is stored, before it.
	if after, gap := seqAt(t, h, entries[1].Time); after != 6 || gap {
		t.Errorf("at entry 7's time: %d, gap %v; want 6, no gap", after, gap)
	}
}

func TestSyncWaitsForTheAcknowledgements(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.Sync(ctx); err != nil {
		t.Fatalf("Sync of nothing: %v", err)
	}
	for i := 0; i < 1000; i++ {
		if !h.Append("a/b", "", []byte("0123456789")) {
			t.Fatalf("Append %d dropped", i)
		}
	}
	if err := h.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if s := h.Stats(); s.Acked != 1000 {
		t.Fatalf("after Sync: %+v", s)
	}
	if seq, err := h.LastSeq(ctx); err != nil || seq < 1000 {
		t.Fatalf("LastSeq after Sync = %d, %v; want ≥ 1000", seq, err)
	}
	// A context that ends first.
	for i := 0; i < 100; i++ {
		h.Append("a/b", "", nil)
	}
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := h.Sync(done); err != nil && err != context.Canceled {
		t.Fatalf("Sync with an ended context: %v", err)
	}
	// After Close every accepted entry is resolved.
	h.Close()
	if err := h.Sync(ctx); err != nil {
		t.Fatalf("Sync after Close: %v", err)
	}
}

func TestSyncWithoutTheServerEndsWithTheContext(t *testing.T) {
	nc, shutdown := connect(t)
	h := open(t, nc, Config{})
	shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for nc.Status() == nats.CONNECTED {
		if time.Now().After(deadline) {
			t.Fatal("still connected")
		}
		time.Sleep(time.Millisecond)
	}
	// Published into the reconnect buffer: no acknowledgement until
	// AckTimeout.
	for i := 0; i < 10; i++ {
		h.Append("a/b", "", []byte("x"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := h.Sync(ctx); err != context.DeadlineExceeded {
		t.Fatalf("Sync without a server: %v; want the context's deadline (%+v)", err, h.Stats())
	}
	// Close gives the entries up: resolved.
	h.closeWait = 100 * time.Millisecond
	h.Close()
	if err := h.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := h.Stats(); s.Dropped+s.Errors != 10 {
		t.Fatalf("after Close: %+v", s)
	}
}

// An entry removed from the middle of the stream by MaxMsgsPerTopic right
// before the position is no gap: a Read of other topics from SeqAt's
// position is complete, and a Read of the capped topic itself reports
// history_limit (it cannot tell whether what it lost was before t).
func TestSeqAtAfterARemovalInTheMiddle(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{MaxMsgsPerTopic: 2})
	h.Append("b/x", "", []byte("b"))    // 1
	h.Append("hot/x", "", []byte("h1")) // 2: removed by the cap below
	settle(t, h)
	time.Sleep(20 * time.Millisecond)
	at := time.Now()
	time.Sleep(20 * time.Millisecond)
	h.Append("c/x", "", []byte("c"))    // 3
	h.Append("hot/x", "", []byte("h2")) // 4
	h.Append("hot/x", "", []byte("h3")) // 5
	settle(t, h)
	after, gap := seqAt(t, h, at)
	if after != 1 || gap {
		t.Fatalf("SeqAt = %d, gap %v; want 1 (before the removed 2), no gap", after, gap)
	}
	entries, res := read(t, h, []string{"c/x"}, after, 10)
	if len(entries) != 1 || !res.Complete {
		t.Fatalf("Read(c/x) = %d entries, %+v; want 1, complete", len(entries), res)
	}
	entries, res = read(t, h, []string{"hot/x"}, after, 10)
	if len(entries) != 2 || res.Complete || res.Reason != ReasonLimit {
		t.Fatalf("Read(hot/x) = %d entries, %+v; want 2 and %s", len(entries), res, ReasonLimit)
	}
}
