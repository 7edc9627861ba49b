package control

import (
	"context"
	"testing"
)

// TestRecordPublishOnRetiredCounter plays the publish that loaded a
// project's counter just before an interval report found it idle and
// removed it: its add is refused and it is counted again, in a new counter.
func TestRecordPublishOnRetiredCounter(t *testing.T) {
	b := New(Config{UsageThreshold: 1 << 30})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	b.RecordPublish("p", 3)
	v, ok := b.counters.Load("p")
	if !ok {
		t.Fatal("no counter after a publish")
	}
	stale := v.(*counter)
	b.flushUsage(false, false) // takes p's publish
	if got := b.PendingUsage(); len(got) != 0 {
		t.Fatalf("pending after a report = %+v", got)
	}
	if _, ok := b.counters.Load("p"); !ok {
		t.Fatal("a counter that had counts was removed")
	}
	b.flushUsage(false, false) // finds p idle
	if _, ok := b.counters.Load("p"); ok {
		t.Fatal("an idle counter was kept")
	}

	if b.add(stale, 5) {
		t.Fatal("add to a retired counter succeeded")
	}
	b.spill(stale) // a no-op on a retired counter
	b.recordSlow("p", 5)
	want := UsageEntry{ProjectID: "p", Count: 1, TotalBytes: 5}
	if got := b.PendingUsage(); len(got) != 1 || got[0] != want {
		t.Fatalf("pending = %+v, want %+v", got, want)
	}
	if v, _ := b.counters.Load("p"); v.(*counter) == stale {
		t.Fatal("the retired counter is back in the map")
	}
}
