package session

import (
	"context"
	"sync"
	"time"

	"github.com/NoLagApp/kraken/pkg/hub"
)

// callShards is the number of independently locked parts of calls: the
// auths of a reconnect storm start and end on many readers at once.
const callShards = 16

// callShardKeep is how many entries a shard's map may have held and still
// be kept once empty: a map that grew past it (a reconnect storm: one entry
// per auth waiting on the backend) is dropped when it empties, so the
// buckets of a storm are not kept for the life of the node.
const callShardKeep = 8

// calls holds the cancel function of every backend call made for one
// connection (auth, reauth, the room-access check) while it is in flight,
// keyed by the connection. Nothing is held for a connection without a call
// in flight: an idle connection costs nothing here, and no context exists
// for it. A call's context is made when the call starts, with the values of
// the node's base context (Config.Context), and cancelled when:
//
//   - the hub decides to close the connection (hub.Config.OnClosing →
//     closing): the call in flight is cancelled; one started later sees
//     hub.Conn.Closing and is cancelled at once;
//   - the peer hung up while the reader is still in its call (the
//     transport's OnDisconnect → Protocol.Hangup → hangup): the call in
//     flight is cancelled, and the connection is marked
//     (hub.Conn.MarkHungUp, a bit of the connection's own, so a hang-up
//     with nothing in flight adds no entry here) so that a call its
//     reader starts later is cancelled at once;
//   - the base context ends (Protocol.Stop, or the embedder cancelling
//     Config.Context → cancelAll): every call in flight is cancelled, and
//     one started later at once.
//
// The calls' contexts are not children of the base context in the context
// tree: a child would be registered with the base, under its one mutex, by
// every auth of every connection, and the base's map of children would keep
// the size of the largest storm. cancelAll walks this registry instead.
//
// Calls are started and ended on the connection's reader, one at a time; the
// cancellations come from any goroutine.
type calls struct {
	base   context.Context // the Protocol's: its end cancels every call
	values context.Context // base without its cancellation: the calls' parent
	shards [callShards]callShard
}

type callShard struct {
	mu   sync.Mutex
	m    map[*hub.Conn]call
	peak int // the most entries m held since it was made
}

// call is one connection's entry: the call in flight (ctx, cancel). gone
// reports that the call was cancelled because its connection went away
// (closing, hung up) or the node is stopping.
type call struct {
	ctx    context.Context
	cancel context.CancelFunc
	gone   bool
}

// init makes base the parent whose end cancels every call.
func (k *calls) init(base context.Context) {
	k.base, k.values = base, context.WithoutCancel(base)
}

func (k *calls) shard(c *hub.Conn) *callShard { return &k.shards[c.ID%callShards] }

// put stores e for c; callers hold mu.
func (s *callShard) put(c *hub.Conn, e call) {
	if s.m == nil {
		s.m = make(map[*hub.Conn]call)
	}
	s.m[c] = e
	s.peak = max(s.peak, len(s.m))
}

// remove deletes c's entry, and the map once it is empty after a storm;
// callers hold mu.
func (s *callShard) remove(c *hub.Conn) {
	delete(s.m, c)
	if len(s.m) == 0 && s.peak > callShardKeep {
		s.m, s.peak = nil, 0
	}
}

// start makes the context of a backend call for c, bounded by d, and
// registers it until end. The context is already cancelled when c is
// closing, its peer has hung up or the base context has ended.
func (k *calls) start(c *hub.Conn, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(k.values, d)
	s := k.shard(c)
	s.mu.Lock()
	// The mark is read under the shard's lock, which hangup takes to set
	// it: a hang-up before this point is seen here, one after it finds the
	// entry.
	e := call{ctx: ctx, cancel: cancel, gone: c.HungUp()}
	s.put(c, e)
	s.mu.Unlock()
	// After the entry is in: a close decided, or a base ended, before this
	// point is seen here; one after it finds the entry (closing, cancelAll).
	if e.gone || c.Closing() || k.base.Err() != nil {
		k.closing(c)
	}
	return ctx, cancel
}

// startUnless is start, but for a call that answers from memory (instant:
// an auth.Instant backend's), which gets the calls' parent context, with
// neither deadline nor cancellation, and is not registered: no context,
// timer or entry is made for it, and there is never anything to cancel.
// end takes its nil cancel function.
func (k *calls) startUnless(instant bool, c *hub.Conn, d time.Duration) (context.Context, context.CancelFunc) {
	if instant {
		return k.values, nil
	}
	return k.start(c, d)
}

// end unregisters the call of ctx (from start) and releases its context. It
// reports whether the call was cancelled because c went away (closed, its
// peer hung up) or the node is stopping, so that its outcome is not taken
// for the backend's. A nil cancel is an instant call (startUnless): never
// registered, never cancelled.
func (k *calls) end(c *hub.Conn, ctx context.Context, cancel context.CancelFunc) (gone bool) {
	if cancel == nil {
		return false
	}
	cancel()
	s := k.shard(c)
	s.mu.Lock()
	switch e, ok := s.m[c]; {
	case !ok:
		gone = true // forgotten meanwhile: the connection is closed
	case e.ctx == ctx:
		gone = e.gone
		s.remove(c)
	}
	s.mu.Unlock()
	return gone
}

// closing cancels the call c has in flight, if any: c is closing
// (hub.Config.OnClosing) or its peer hung up. It never blocks.
func (k *calls) closing(c *hub.Conn) { k.cancel(c, false) }

// hangup is closing for a peer that went away while its reader may still
// run: the mark (hub.Conn.MarkHungUp, set under the shard's lock that start
// reads it under) makes a call started later cancelled at once. Nothing is
// added here: a connection with no call in flight costs no entry.
func (k *calls) hangup(c *hub.Conn) { k.cancel(c, true) }

// cancel cancels the call c has in flight, if any, marking c hung up
// first with hangUp, under the shard's lock. Every entry is a call in
// flight (start), so every entry has a cancel function.
func (k *calls) cancel(c *hub.Conn, hangUp bool) {
	s := k.shard(c)
	s.mu.Lock()
	if hangUp {
		c.MarkHungUp()
	}
	e, ok := s.m[c]
	if ok {
		e.gone = true
		s.m[c] = e
	}
	s.mu.Unlock()
	if ok {
		e.cancel()
	}
}

// forget drops what is held for c, cancelling a call still in flight; the
// session calls it once it has let go of the closed connection.
func (k *calls) forget(c *hub.Conn) {
	s := k.shard(c)
	s.mu.Lock()
	e, ok := s.m[c]
	if ok {
		s.remove(c)
	}
	s.mu.Unlock()
	if ok && e.cancel != nil {
		e.cancel()
	}
}

// cancelAll cancels every call in flight: the base context has ended. It
// never blocks on anything but the shards' locks.
func (k *calls) cancelAll() {
	var cancels []context.CancelFunc
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		for c, e := range s.m {
			if e.cancel != nil {
				e.gone = true
				s.m[c] = e
				cancels = append(cancels, e.cancel)
			}
		}
		s.mu.Unlock()
	}
	for _, cancel := range cancels {
		cancel()
	}
}

// inFlight is the number of entries held (calls in flight), for tests.
func (k *calls) inFlight() int {
	n := 0
	for i := range k.shards {
		s := &k.shards[i]
		s.mu.Lock()
		n += len(s.m)
		s.mu.Unlock()
	}
	return n
}
