package auth

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"github.com/NoLagApp/kraken/pkg/acl"
	"sync"
	"time"
)

// Cache wraps an Authenticator with the success cache of wire-reference.md §4.8.
//
//   - Entries are keyed by the SHA-256 of the whole token, never by a short
//     hash (OQ-10).
//   - Only successful validations are cached, each for ttl; failures always
//     reach the backend.
//   - Concurrent Validate calls for one token that all miss the cache are
//     merged into a single backend call (one flight per SHA-256 key); every
//     caller gets that call's result. The call runs on a goroutine of the
//     cache's own with a context that keeps the first caller's values but
//     none of its deadline or cancellation; it is cancelled once every
//     caller waiting for it has given up, or by Close. Each caller waits
//     only until its own ctx is done. Close waits for those goroutines.
//   - Revalidate bypasses the cache (wire-reference.md §4.9).
//   - At most maxEntries entries are held. When a new entry does not fit,
//     expired entries are evicted first and then the oldest entry is dropped.
//   - If the wrapped backend implements Notifier, the cache flushes itself on
//     every change before any callback registered through Cache.OnChange
//     runs, so a reloaded token file takes effect at once (D-1).
//   - If the wrapped backend is Instant, so is the cache: a miss asks the
//     backend on the caller's goroutine, with the caller's context, and
//     there are no flights to merge (the backend answers at once).
//
// Cache implements Authenticator, Notifier and Instant. It is safe for
// concurrent use.
type Cache struct {
	backend    Authenticator
	instant    bool // IsInstant(backend)
	ttl        time.Duration
	maxEntries int
	now        func() time.Time

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*list.Element
	order   *list.List // of *cacheEntry, oldest insertion first
	gen     uint64     // bumped by Flush; results fetched before it are not stored
	flights map[[sha256.Size]byte]*flight
	closed  bool // Close was called: no flight starts

	base context.Context    // cancelled by Close, and every flight with it
	stop context.CancelFunc // cancels base
	wg   sync.WaitGroup     // the flights' goroutines; Add under mu while open
}

// flight is one backend Validate shared by every caller that missed the
// cache for its key while it ran. g and err are written once, before done is
// closed; waiters and finished are guarded by Cache.mu.
type flight struct {
	done     chan struct{}
	g        *Grant
	err      error
	gen      uint64 // Cache.gen when the flight started
	waiters  int
	finished bool
	cancel   context.CancelFunc
	unhook   func() bool // detaches cancel from Cache.base
}

type cacheEntry struct {
	key     [sha256.Size]byte
	grant   *Grant
	expires time.Time
}

// NewCache returns a Cache in front of a. ttl is how long a success is kept
// (wire-reference.md §4.8: 30 s); maxEntries bounds the number of cached tokens.
// A ttl or maxEntries below 1 disables caching, so every call reaches a.
// now is the clock; nil means time.Now. Call Close when done, after the
// last Validate.
func NewCache(a Authenticator, ttl time.Duration, maxEntries int, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	base, stop := context.WithCancel(context.Background())
	c := &Cache{
		base:       base,
		stop:       stop,
		backend:    a,
		instant:    IsInstant(a),
		ttl:        ttl,
		maxEntries: maxEntries,
		now:        now,
		entries:    make(map[[sha256.Size]byte]*list.Element),
		order:      list.New(),
		flights:    make(map[[sha256.Size]byte]*flight),
	}
	if n, ok := a.(Notifier); ok {
		n.OnChange(c.Flush)
	}
	return c
}

// Validate returns the cached Grant for token while it is fresh, and
// otherwise asks the backend and caches a success (wire-reference.md §4.8).
// Callers that miss the cache for the same token while a backend call for it
// is running wait for that call instead of making their own.
//
// Errors come from the backend unchanged. A backend answering with neither a
// Grant nor an error is treated as ErrDenied; a backend that panics yields an
// error wrapping ErrUnavailable. When ctx is done before the answer arrives,
// Validate returns an error wrapping both ErrUnavailable and ctx's error; the
// backend call goes on for the other waiters and is cancelled when none is
// left. After Close, a Validate that misses the cache fails with
// ErrUnavailable (Close).
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
	if err := ctx.Err(); err != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, context.Cause(ctx))
	}
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: the token cache is closed", ErrUnavailable)
	}
	if c.instant {
		gen := c.gen
		c.mu.Unlock()
		return c.validateInstant(ctx, key, token, gen)
	}
	f, ok := c.flights[key]
	if !ok {
		f = c.startLocked(ctx, key, token)
	}
	f.waiters++
	c.mu.Unlock()

	select {
	case <-f.done:
		return f.g, f.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	if f.finished { // the answer came in at the same moment: use it
		c.mu.Unlock()
		return f.g, f.err
	}
	f.waiters--
	if f.waiters == 0 {
		// Nobody wants the answer any more: stop the call, and let the next
		// caller start afresh rather than join a cancelled flight.
		f.cancel()
		if c.flights[key] == f {
			delete(c.flights, key)
		}
	}
	c.mu.Unlock()
	return nil, fmt.Errorf("%w: %w", ErrUnavailable, context.Cause(ctx))
}

// startLocked registers a new flight for key and starts the backend call on
// its own goroutine, owned by the cache (wg). The call's context keeps
// ctx's values but is cancelled only through f.cancel, which Close also
// calls. Callers hold mu and have checked that the cache is open.
func (c *Cache) startLocked(ctx context.Context, key [sha256.Size]byte, token string) *flight {
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	f := &flight{done: make(chan struct{}), gen: c.gen, cancel: cancel, unhook: context.AfterFunc(c.base, cancel)}
	c.flights[key] = f
	c.wg.Add(1)
	go c.fly(fctx, f, key, token)
	return f
}

// fly runs one flight: the backend call, then the store (unless a Flush came
// in between) before the waiters are released, so a caller that returns and
// validates again hits the cache.
func (c *Cache) fly(ctx context.Context, f *flight, key [sha256.Size]byte, token string) {
	defer c.wg.Done()
	defer f.unhook()
	defer f.cancel()
	g, err := c.validateRecover(ctx, token)
	c.mu.Lock()
	f.g, f.err, f.finished = g, err, true
	if c.flights[key] == f {
		delete(c.flights, key)
	}
	if err == nil && f.gen == c.gen {
		c.storeLocked(key, g, c.now())
	}
	c.mu.Unlock()
	close(f.done)
}

// validateInstant asks an Instant backend on the caller's goroutine and
// stores a success, unless a Flush came in since gen was read (as fly
// does).
func (c *Cache) validateInstant(ctx context.Context, key [sha256.Size]byte, token string, gen uint64) (*Grant, error) {
	g, err := c.validateRecover(ctx, token)
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

// Instant implements Instant: the backend's answer (IsInstant).
func (c *Cache) Instant() bool { return c.instant }

// validateRecover is validateBackend turning a panic into an error: the call
// runs on a goroutine of the cache's own, where a panic would otherwise end
// the process rather than the caller's connection.
func (c *Cache) validateRecover(ctx context.Context, token string) (g *Grant, err error) {
	defer func() {
		if r := recover(); r != nil {
			g, err = nil, fmt.Errorf("%w: the backend panicked: %v", ErrUnavailable, r)
		}
	}()
	return c.validateBackend(ctx, token)
}

func (c *Cache) validateBackend(ctx context.Context, token string) (*Grant, error) {
	g, err := c.backend.Validate(ctx, token)
	if err == nil && g == nil {
		return nil, ErrDenied
	}
	return g, err
}

// Revalidate asks the backend directly, bypassing the cache
// (wire-reference.md §4.9). Errors come from the backend unchanged; a backend
// answering with neither a Grant nor an error is treated as ErrDenied.
func (c *Cache) Revalidate(ctx context.Context, actorTokenID string) (*Grant, error) {
	g, err := c.backend.Revalidate(ctx, actorTokenID)
	if err == nil && g == nil {
		return nil, ErrDenied
	}
	return g, err
}

// RuleSets passes the backend's rule lists through when it implements
// RuleLister; otherwise ok is false: the grants cannot be listed.
func (c *Cache) RuleSets() ([]acl.Rules, bool) {
	if rl, ok := c.backend.(RuleLister); ok {
		return rl.RuleSets()
	}
	return nil, false
}

// CheckRoomAccess passes the subscribe cache-miss fallback (wire-reference.md
// §4.10) through to the backend when it implements RoomAccessChecker;
// otherwise it denies (the static backend has no fallback). It is not
// cached here: backends cache their own denials.
func (c *Cache) CheckRoomAccess(ctx context.Context, actorTokenID, pattern string) (acl.Rules, error) {
	if rc, ok := c.backend.(RoomAccessChecker); ok {
		return rc.CheckRoomAccess(ctx, actorTokenID, pattern)
	}
	return nil, ErrDenied
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
// runs is not stored, so data read before the flush cannot reappear (D-1);
// its current waiters still get its answer, but a Validate that starts after
// Flush never joins it and asks the backend again.
func (c *Cache) Flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
	c.order.Init()
	clear(c.flights)
}

// Close cancels the backend calls in flight and returns once their
// goroutines have ended; their waiters get the backend's answer to the
// cancelled call. From then on a Validate that misses the cache fails with
// ErrUnavailable instead of starting a call (with caching disabled, calls
// go on reaching the backend on the caller's goroutine). The backend is
// not closed. Close is safe to call more than once.
func (c *Cache) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop()
	c.wg.Wait()
	return nil
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
	_ Instant       = (*Cache)(nil)
)
