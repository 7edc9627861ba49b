package memstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NoLagApp/kraken/pkg/store"
)

// Defaults applied by New to zero or negative Config fields.
const (
	// DefaultMaxMessages is the default of Config.MaxMessages
	// (STORE_MAX_MESSAGES, wire-reference.md §6.5, §9).
	DefaultMaxMessages = 10000
	// DefaultTTL is the default of Config.TTL (STORE_TTL_SECONDS=3600,
	// wire-reference.md §6.5, §9).
	DefaultTTL = time.Hour
	// DefaultMaxAcksPerMessage is the default of Config.MaxAcksPerMessage.
	DefaultMaxAcksPerMessage = 1000
	// DefaultSweepInterval is the default of Config.SweepInterval; a
	// shorter TTL lowers the default to the TTL.
	DefaultSweepInterval = time.Minute
)

const (
	shardCount = 16 // a power of two
	// linearAcks is the ack count up to which an entry finds an actor by
	// scanning its slice; past it the entry also keeps a set.
	linearAcks = 16
	// mapSizeHint caps the initial size of each shard's map.
	mapSizeHint = 4096
	// minRebuild is the peak size below which a shard's map is never
	// rebuilt to give memory back.
	minRebuild = 256
)

// Config configures a Store. The zero value is valid: every zero or
// negative field takes its default.
type Config struct {
	// MaxMessages bounds the number of records (STORE_MAX_MESSAGES,
	// default 10000). When the count goes over it, the oldest
	// max(count − MaxMessages, count/10) records are dropped
	// (wire-reference.md §6.5).
	MaxMessages int
	// TTL is how long a record lives after Append (STORE_TTL_SECONDS,
	// default 1h). A record is expired once Now() − appended ≥ TTL
	// (decisions.md OQ-31).
	TTL time.Duration
	// MaxAcksPerMessage bounds the distinct actors kept per record
	// (default 1000); acks by further actors are ignored.
	MaxAcksPerMessage int
	// SweepInterval is the period of the sweeper that removes expired
	// records (default min(1 min, TTL), so memory is freed within about one
	// TTL even when the TTL is short).
	SweepInterval time.Duration
	// Now is the clock (default time.Now). It must not go backwards; the
	// store stamps each record with Now() at Append and measures the TTL
	// from that stamp.
	Now func() time.Time
}

// withDefaults returns c with every zero or negative field set to its
// default.
func (c Config) withDefaults() Config {
	if c.MaxMessages <= 0 {
		c.MaxMessages = DefaultMaxMessages
	}
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxAcksPerMessage <= 0 {
		c.MaxAcksPerMessage = DefaultMaxAcksPerMessage
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = min(DefaultSweepInterval, c.TTL)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Store is the bounded in-memory message store. It implements store.Store
// and store.Closer; see the package documentation for its bounds and
// concurrency. Create it with New.
type Store struct {
	limit   int64
	ttl     time.Duration
	maxAcks int
	now     func() time.Time

	count   atomic.Int64 // records held, changed under the shard lock
	pruning atomic.Bool  // an Append is pruning
	closed  atomic.Bool

	shards [shardCount]shard

	closeOnce  sync.Once
	stop, done chan struct{}
	afterSweep func() // test hook, run by the sweeper after each sweep
}

var (
	_ store.Store  = (*Store)(nil)
	_ store.Closer = (*Store)(nil)
)

// shard is one slice of the store: the records whose id hashes to it.
type shard struct {
	mu   sync.Mutex
	m    map[string]*entry
	fifo ring     // the entries of m in append order
	peak int      // largest len(m) since m was made
	_    [64]byte // keeps neighbouring shards' locks off one cache line
}

// entry is one held record.
type entry struct {
	rec    store.Record
	at     time.Time           // Now() at Append; the TTL runs from here
	acks   []string            // distinct actors, in order of first ack
	ackSet map[string]struct{} // the same actors, once len(acks) > linearAcks
}

// New returns an empty Store configured by cfg and starts its sweeper
// goroutine, which runs every cfg.SweepInterval until Close.
func New(cfg Config) *Store {
	cfg = cfg.withDefaults()
	t := time.NewTicker(cfg.SweepInterval)
	return newStore(cfg, t.C, t.Stop, nil)
}

// newStore builds a Store whose sweeper runs on every value received from
// tick and calls stopTick when it exits; afterSweep, if not nil, runs after
// each of those sweeps. cfg must have its defaults applied.
func newStore(cfg Config, tick <-chan time.Time, stopTick, afterSweep func()) *Store {
	s := &Store{
		limit:      int64(cfg.MaxMessages),
		ttl:        cfg.TTL,
		maxAcks:    cfg.MaxAcksPerMessage,
		now:        cfg.Now,
		stop:       make(chan struct{}),
		done:       make(chan struct{}),
		afterSweep: afterSweep,
	}
	hint := min(mapSizeHint, cfg.MaxMessages/shardCount+1)
	for i := range s.shards {
		s.shards[i].m = make(map[string]*entry, hint)
	}
	go s.sweeper(tick, stopTick) // owned by s: Close stops it and waits on done
	return s
}

// Close stops the sweeper and waits for it to exit. It is safe to call more
// than once and always returns nil. Afterwards Append and Ack return
// store.ErrClosed; Get and Len keep working on the records still held.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		<-s.done
	})
	return nil
}

// Append records a copy of r, stamped with Now(); a zero r.Timestamp is set
// to that stamp. It returns store.ErrInvalidRecord for a nil r or an empty
// MsgID, an error wrapping store.ErrDuplicate when the id is held (the held
// record is kept), and store.ErrClosed after Close. When the count goes over
// MaxMessages, the calling Append prunes the oldest records
// (wire-reference.md §6.5) before it returns. ctx is not used: Append never blocks
// beyond one shard lock. It allocates only the held entry, plus amortised
// growth of the shard's map and ring.
func (s *Store) Append(_ context.Context, r *store.Record) error {
	if r == nil || r.MsgID == "" {
		return store.ErrInvalidRecord
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	e := &entry{rec: *r}
	sh := s.shard(r.MsgID)
	sh.mu.Lock()
	if _, dup := sh.m[r.MsgID]; dup {
		sh.mu.Unlock()
		return fmt.Errorf("%w: %s", store.ErrDuplicate, r.MsgID)
	}
	// Stamped under the lock, so each shard's ring is in stamp order.
	e.at = s.now()
	if e.rec.Timestamp.IsZero() {
		e.rec.Timestamp = e.at
	}
	sh.m[r.MsgID] = e
	sh.fifo.push(e)
	sh.peak = max(sh.peak, len(sh.m))
	n := s.count.Add(1)
	sh.mu.Unlock()
	if n > s.limit {
		s.prune()
	}
	return nil
}

// Ack adds actorID to the ack set of each held, unexpired record among
// msgIDs (ack / batchAck, wire-reference.md §6.4). Unknown, expired and empty ids
// are ignored, so are repeated acks and acks by new actors once a record has
// MaxAcksPerMessage of them. It returns store.ErrInvalidAck for an empty
// actorID and store.ErrClosed after Close. Acks change nothing observable;
// nothing is ever re-sent (decisions.md OQ-66). ctx is not used.
func (s *Store) Ack(_ context.Context, actorID string, msgIDs ...string) error {
	if actorID == "" {
		return store.ErrInvalidAck
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	if len(msgIDs) == 0 {
		return nil
	}
	now := s.now()
	for _, id := range msgIDs {
		if id == "" {
			continue
		}
		sh := s.shard(id)
		sh.mu.Lock()
		if e, ok := sh.m[id]; ok && !s.expired(e, now) {
			e.addAck(actorID, s.maxAcks)
		}
		sh.mu.Unlock()
	}
	return nil
}

// Get returns a copy of the record msgID and a fresh slice of the actors
// that acked it, in order of first ack (nil when none did). ok is false when
// msgID is unknown or expired, even if the sweeper has not removed it yet.
// ctx is not used.
func (s *Store) Get(_ context.Context, msgID string) (r store.Record, ackedBy []string, ok bool) {
	now := s.now()
	sh := s.shard(msgID)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e, ok := sh.m[msgID]
	if !ok || s.expired(e, now) {
		return store.Record{}, nil, false
	}
	return e.rec, slices.Clone(e.acks), true
}

// Len returns the number of records held in memory. It counts expired
// records until the sweeper (or Sweep) removes them, so it never exceeds
// MaxMessages by more than the number of Appends in flight.
func (s *Store) Len() int { return int(s.count.Load()) }

// Sweep removes every expired record now and returns how many it removed.
// The sweeper calls it every SweepInterval; calling it directly is safe at
// any time, also after Close.
func (s *Store) Sweep() int {
	now := s.now()
	removed := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		k := 0
		for sh.fifo.n > 0 && s.expired(sh.fifo.peek(), now) {
			delete(sh.m, sh.fifo.pop().rec.MsgID)
			k++
		}
		s.count.Add(int64(-k))
		sh.compact()
		sh.mu.Unlock()
		removed += k
	}
	return removed
}

// sweeper runs Sweep on every tick until Close.
func (s *Store) sweeper(tick <-chan time.Time, stopTick func()) {
	defer close(s.done)
	defer stopTick()
	for {
		select {
		case <-s.stop:
			return
		case <-tick:
			s.Sweep()
			if s.afterSweep != nil {
				s.afterSweep()
			}
		}
	}
}

// expired reports whether e's TTL has run out at now.
func (s *Store) expired(e *entry, now time.Time) bool {
	return now.Sub(e.at) >= s.ttl
}

// prune drops the oldest records while the count is over the limit
// (wire-reference.md §6.5). Only one goroutine prunes at a time; an Append that
// finds a prune running leaves its excess to it, and the pruner checks the
// count again after releasing the flag, so no excess is left behind once
// Appends quiesce.
func (s *Store) prune() {
	for s.count.Load() > s.limit && s.pruning.CompareAndSwap(false, true) {
		for {
			n := s.count.Load()
			if n <= s.limit {
				break
			}
			if s.dropOldest(max(n-s.limit, n/10)) == 0 {
				break // nothing held yet: the Appends are still in flight
			}
		}
		s.pruning.Store(false)
	}
}

// dropOldest drops about drop records, the oldest of each shard, split over
// the shards in proportion to their sizes by largest remainder so that the
// shares sum to exactly min(drop, total) when no Append runs concurrently.
// It returns the number dropped.
func (s *Store) dropOldest(drop int64) int64 {
	var sizes [shardCount]int64
	var total int64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sizes[i] = int64(sh.fifo.n)
		sh.mu.Unlock()
		total += sizes[i]
	}
	if total == 0 {
		return 0
	}
	drop = min(drop, total)
	var quota, rem [shardCount]int64
	var assigned int64
	for i, n := range sizes {
		quota[i], rem[i] = drop*n/total, drop*n%total
		assigned += quota[i]
	}
	for ; assigned < drop; assigned++ {
		best := -1
		for i := range rem {
			if quota[i] < sizes[i] && (best < 0 || rem[i] > rem[best]) {
				best = i
			}
		}
		quota[best]++
		rem[best] = -1
	}
	var dropped int64
	for i := range s.shards {
		if quota[i] == 0 {
			continue
		}
		sh := &s.shards[i]
		sh.mu.Lock()
		k := int64(0)
		for ; k < quota[i] && sh.fifo.n > 0; k++ {
			delete(sh.m, sh.fifo.pop().rec.MsgID)
		}
		s.count.Add(-k)
		sh.compact()
		sh.mu.Unlock()
		dropped += k
	}
	return dropped
}

// shard returns the shard of id, chosen by its 32-bit FNV-1a hash.
func (s *Store) shard(id string) *shard {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return &s.shards[h&(shardCount-1)]
}

// compact gives memory back after removals: the ring shrinks while at most a
// quarter full, and the map is rebuilt once it holds under a quarter of its
// peak, since a Go map never shrinks by itself. The caller holds sh.mu.
func (sh *shard) compact() {
	sh.fifo.compact()
	if sh.peak > minRebuild && len(sh.m) < sh.peak/4 {
		m := make(map[string]*entry, 2*len(sh.m))
		for k, v := range sh.m {
			m[k] = v
		}
		sh.m, sh.peak = m, len(m)
	}
}

// addAck records actorID unless it already acked or the set is full. The
// caller holds the shard lock.
func (e *entry) addAck(actorID string, maxAcks int) {
	if e.ackSet != nil {
		if _, ok := e.ackSet[actorID]; ok {
			return
		}
	} else if slices.Contains(e.acks, actorID) {
		return
	}
	if len(e.acks) >= maxAcks {
		return
	}
	e.acks = append(e.acks, actorID)
	switch {
	case e.ackSet != nil:
		e.ackSet[actorID] = struct{}{}
	case len(e.acks) > linearAcks:
		e.ackSet = make(map[string]struct{}, 2*len(e.acks))
		for _, a := range e.acks {
			e.ackSet[a] = struct{}{}
		}
	}
}
