package auth

import (
	"container/list"
	"context"
	"crypto/sha256"
	"sync"
	"time"
)

// Cache wraps an Authenticator with the success cache of protocol.md §4.8.
//
//   - Entries are keyed by the SHA-256 of the whole token, never by a short
//     hash (OQ-10).
//   - Only successful validations are cached, each for ttl; failures always
//     reach the backend.
//   - Revalidate bypasses the cache (protocol.md §4.9).
//   - At most maxEntries entries are held. When a new entry does not fit,
//     expired entries are evicted first and then the oldest entry is dropped.
//   - If the wrapped backend implements Notifier, the cache flushes itself on
//     every change before any callback registered through Cache.OnChange
//     runs, so a reloaded token file takes effect at once (D-1).
//
// Cache implements Authenticator and Notifier. It is safe for concurrent use.
type Cache struct {
	backend    Authenticator
	ttl        time.Duration
	maxEntries int
	now        func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element
	order   *list.List // of *cacheEntry, oldest insertion first
	gen     uint64     // bumped by Flush; results fetched before it are not stored
}

type cacheEntry struct {
	key     [sha256.Size]byte
	grant   *Grant
	expires time.Time
}

// NewCache returns a Cache in front of a. ttl is how long a success is kept
// (protocol.md §4.8: 30 s); maxEntries bounds the number of cached tokens.
// A ttl or maxEntries below 1 disables caching, so every call reaches a.
// now is the clock; nil means time.Now.
func NewCache(a Authenticator, ttl time.Duration, maxEntries int, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	c := &Cache{
		backend:    a,
		ttl:        ttl,
		maxEntries: maxEntries,
		now:        now,
		entries:    make(map[[sha256.Size]byte]*list.Element),
		order:      list.New(),
	}
	if n, ok := a.(Notifier); ok {
		n.OnChange(c.Flush)
	}
	return c
}

// Validate returns the cached Grant for token while it is fresh, and
// otherwise asks the backend and caches a success (protocol.md §4.8).
// Errors come from the backend unchanged. A backend answering with neither a
// Grant nor an error is treated as ErrDenied.
func (c *Cache) Validate(ctx context.Context, token string) (*Grant, error) {
	if !c.enabled() {
		return c.validateBackend(ctx, token)
	}
	key := sha256.Sum256([]byte(token))
	now := c.now()

	c.mu.Lock()
	if el, ok := c.entries[key]; ok {
		e := el.Value.(*cacheEntry)
		if now.Before(e.expires) {
			c.mu.Unlock()
			return e.grant, nil
		}
		c.removeLocked(el)
	}
	gen := c.gen
	c.mu.Unlock()

	g, err := c.validateBackend(ctx, token)
	if err != nil {
		return nil, err
	}

	c.mu.Lock()
	if gen == c.gen {
		c.storeLocked(key, g, c.now())
	}
	c.mu.Unlock()
	return g, nil
}

func (c *Cache) validateBackend(ctx context.Context, token string) (*Grant, error) {
	g, err := c.backend.Validate(ctx, token)
	if err == nil && g == nil {
		return nil, ErrDenied
	}
	return g, err
}

// Revalidate asks the backend directly, bypassing the cache
// (protocol.md §4.9). Errors come from the backend unchanged; a backend
// answering with neither a Grant nor an error is treated as ErrDenied.
func (c *Cache) Revalidate(ctx context.Context, actorTokenID string) (*Grant, error) {
	g, err := c.backend.Revalidate(ctx, actorTokenID)
	if err == nil && g == nil {
		return nil, ErrDenied
	}
	return g, err
}

// OnChange forwards f to the wrapped backend when it implements Notifier;
// otherwise the backend never changes and f is never called. f runs after
// the cache has flushed itself (D-1).
func (c *Cache) OnChange(f func()) {
	if n, ok := c.backend.(Notifier); ok {
		n.OnChange(f)
	}
}

// Flush drops every cached entry. A validation already in flight when Flush
// runs is not stored, so data read before the flush cannot reappear (D-1).
func (c *Cache) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	c.order.Init()
}

// Len reports the number of entries held, including expired ones not yet
// evicted.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func (c *Cache) enabled() bool { return c.ttl > 0 && c.maxEntries > 0 }

// storeLocked inserts or refreshes key, evicting as described on Cache.
func (c *Cache) storeLocked(key [sha256.Size]byte, g *Grant, now time.Time) {
	if el, ok := c.entries[key]; ok {
		c.removeLocked(el)
	}
	if len(c.entries) >= c.maxEntries {
		c.evictExpiredLocked(now)
	}
	for len(c.entries) >= c.maxEntries {
		c.removeLocked(c.order.Front())
	}
	e := &cacheEntry{key: key, grant: g, expires: now.Add(c.ttl)}
	c.entries[key] = c.order.PushBack(e)
}

// evictExpiredLocked removes every entry that has expired at now. The scan is
// linear but runs only when the cache is full.
func (c *Cache) evictExpiredLocked(now time.Time) {
	for el := c.order.Front(); el != nil; {
		next := el.Next()
		if !now.Before(el.Value.(*cacheEntry).expires) {
			c.removeLocked(el)
		}
		el = next
	}
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.order.Remove(el).(*cacheEntry)
	delete(c.entries, e.key)
}

var (
	_ Authenticator = (*Cache)(nil)
	_ Notifier      = (*Cache)(nil)
)
