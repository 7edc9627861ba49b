package control

import (
	"slices"
	"strings"
)

// FlushUsage makes the usage goroutine run an interval report now, as its
// ticker would, and waits for it to finish. It returns at once on a closed
// Batcher. Tests only.
func (b *Batcher) FlushUsage() {
	done := make(chan struct{})
	select {
	case b.flushReq <- done:
		<-done
	case <-b.stop:
	}
}

// FastMaxBytes is the largest size RecordPublish counts without the mutex,
// plus one. Tests only.
const FastMaxBytes = fastMaxBytes

// PendingUsage returns the counts not yet delivered, one entry per project
// with a count, sorted by project. Tests only.
func (b *Batcher) PendingUsage() []UsageEntry {
	b.umu.Lock()
	defer b.umu.Unlock()
	var out []UsageEntry
	b.counters.Range(func(_, v any) bool {
		c := v.(*counter)
		w := c.word.Load()
		if w&wordRetired != 0 {
			return true
		}
		if count := wordCount(w) + c.carryCount.Load(); count != 0 {
			out = append(out, UsageEntry{ProjectID: c.id, Count: count, TotalBytes: wordBytes(w) + c.carryBytes})
		}
		return true
	})
	slices.SortFunc(out, func(x, y UsageEntry) int { return strings.Compare(x.ProjectID, y.ProjectID) })
	return out
}
