package httpauth

import (
	"container/list"
	"sync"
	"time"
)

// denyCache is the negative cache of check-room-access (wire-reference.md §4.10):
// the error of a failed (actor, pattern) check, kept for ttl. Every entry has
// the same ttl, so insertion order is expiry order and the oldest entry is
// both the first to expire and the one dropped when the cache is full. A ttl
// or maxEntries below 1 disables it. It is safe for concurrent use.
type denyCache struct {
	ttl        time.Duration
	maxEntries int
	now        func() time.Time

	mu      sync.Mutex
	entries map[denyKey]*list.Element
	order   *list.List // of *denyEntry, oldest first
}

type denyKey struct{ actor, pattern string }

type denyEntry struct {
	key     denyKey
	err     error
	expires time.Time
}

func newDenyCache(ttl time.Duration, maxEntries int, now func() time.Time) *denyCache {
	return &denyCache{ttl: ttl, maxEntries: maxEntries, now: now,
		entries: map[denyKey]*list.Element{}, order: list.New()}
}

func (c *denyCache) enabled() bool { return c.ttl > 0 && c.maxEntries > 0 }

// get returns the cached error for (actor, pattern), or nil.
func (c *denyCache) get(actor, pattern string) error {
	if !c.enabled() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[denyKey{actor, pattern}]
	if !ok {
		return nil
	}
	e := el.Value.(*denyEntry)
	if !c.now().Before(e.expires) {
		c.removeLocked(el)
		return nil
	}
	return e.err
}

// put caches err for (actor, pattern), dropping expired entries and then the
// oldest ones to stay within maxEntries.
func (c *denyCache) put(actor, pattern string, err error) {
	if !c.enabled() {
		return
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	k := denyKey{actor, pattern}
	if el, ok := c.entries[k]; ok {
		c.removeLocked(el)
	}
	for el := c.order.Front(); el != nil && (len(c.entries) >= c.maxEntries || !now.Before(el.Value.(*denyEntry).expires)); el = c.order.Front() {
		c.removeLocked(el)
	}
	c.entries[k] = c.order.PushBack(&denyEntry{key: k, err: err, expires: now.Add(c.ttl)})
}

// len reports the number of entries held, including expired ones.
func (c *denyCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *denyCache) removeLocked(el *list.Element) {
	delete(c.entries, c.order.Remove(el).(*denyEntry).key)
}
