package history

import (
	"context"
	"sync"

	"github.com/nats-io/nats.go"
)

// Sync returns nil once every entry that Append accepted (returned true)
// before the call is resolved: acknowledged by the stream (Stats.Acked),
// or given up (Stats.Dropped: not published; Stats.Errors: refused, not
// acknowledged within AckTimeout, lost in a reconnection). So after Sync,
// LastSeq is at least the sequence of each of those entries the stream
// stored, and a Read from an earlier position returns them.
//
// It returns ctx.Err() when ctx ends first. It does not poll: it sleeps
// until the entries resolve (in any order). Appends made while Sync waits
// are not waited for; Appends are held for the moment Sync takes its
// target, not while it waits. After Close has returned, every accepted
// entry is resolved, so Sync returns nil at once.
func (h *History) Sync(ctx context.Context) error {
	// Under the write lock no Append is between its send on the queue and
	// its count in pushed: pushed is the number of entries ever queued, the
	// first pushed of the writer's order.
	h.mu.Lock()
	target := h.pushed.Load()
	h.mu.Unlock()
	for {
		wake, ok := h.track.reached(target)
		if ok {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tracker numbers the entries in the writer's order (the queue's order:
// the n-th entry taken from the queue is the n-th queued) and records
// which are resolved, for Sync. Entries resolve out of order only when an
// acknowledgement is late or lost, so done stays small.
type tracker struct {
	mu      sync.Mutex
	next    uint64               // entries numbered: 1..next
	low     uint64               // 1..low all resolved
	pending map[*nats.Msg]uint64 // numbered, not resolved
	done    map[uint64]struct{}  // resolved, above low+1
	wake    chan struct{}        // closed when low advances; nil when no Sync waits
}

func newTracker() *tracker {
	return &tracker{pending: make(map[*nats.Msg]uint64), done: make(map[uint64]struct{})}
}

// add numbers msg, the next entry the writer took from the queue.
func (t *tracker) add(msg *nats.Msg) {
	t.mu.Lock()
	t.next++
	t.pending[msg] = t.next
	t.mu.Unlock()
}

// resolve records msg as resolved; a message not numbered or already
// resolved is ignored.
func (t *tracker) resolve(msg *nats.Msg) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.pending[msg]
	if !ok {
		return
	}
	delete(t.pending, msg)
	if n != t.low+1 {
		t.done[n] = struct{}{}
		return
	}
	t.low++
	for {
		if _, ok := t.done[t.low+1]; !ok {
			break
		}
		delete(t.done, t.low+1)
		t.low++
	}
	if t.wake != nil {
		close(t.wake)
		t.wake = nil
	}
}

// reached reports whether the entries 1..n are all resolved; if not, it
// returns a channel closed when more are.
func (t *tracker) reached(n uint64) (<-chan struct{}, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.low >= n {
		return nil, true
	}
	if t.wake == nil {
		t.wake = make(chan struct{})
	}
	return t.wake, false
}
