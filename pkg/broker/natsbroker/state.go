package natsbroker

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// Shared state (presence, connection counts, liveness) is one JetStream KV
// bucket, <Prefix>_STATE, History 1, keys as keys.go describes. A node
//
//   - writes its own keys from one goroutine (the writer): SetPresence,
//     ClearPresence and SetConnections only record the wanted value of a key
//     and queue the key, coalesced (a key queued twice is written once, with
//     its newest value), so callers never wait on NATS;
//   - puts its liveness key n.<node> every Heartbeat (the heartbeat
//     goroutine);
//   - watches the whole bucket, initial values included (the watcher
//     goroutine), hands other nodes' changes to the Handler and judges
//     liveness.
//
// Liveness is judged on the watcher's own timeline: a node is down when,
// at the arrival of one of this node's own heartbeats, its last put
// arrived more than LivenessTimeout earlier, or when its liveness key is
// deleted (Close deletes it first). Measuring against one's own heartbeats
// coming back through the same stream means a node whose own view is stale
// (disconnected, paused, its watcher behind) judges nobody. After a
// reconnection, and when this node's own heartbeat comes back after more
// than LivenessTimeout (its view was stale), every node gets
// LivenessTimeout afresh. Any put of a node's key shows it alive again.
//
// What fails of this (writes, the watch) is kept for readiness and logged
// (health.go). A watch that delivers nothing of this node's stored
// heartbeats for LivenessTimeout is replaced by a new one (its consumer
// was lost with a NATS server, without an error).
//
// When a node is judged down, each other node calls HandleNodeDown once,
// forgets the node's keys and keeps them, with their revisions, as
// "zombies"; the live node with the smallest id deletes the zombies, each
// only at the revision it saw (so a newer put of a node that came back
// survives). A node that sees one of its own keys deleted by another (it
// was judged down during a pause or a partition) writes it again, and when
// it is its liveness key, all of its state; after a reconnection to NATS it
// also writes all of its state again.

// StateBucket returns the KV bucket name of prefix: the prefix with every
// byte outside [A-Za-z0-9_-] replaced by '_', then "_STATE".
func StateBucket(prefix string) string {
	b := []byte(prefix)
	for i, c := range b {
		if !plainKeyByte(c) {
			b[i] = '_'
		}
	}
	return string(b) + "_STATE"
}

// shared is a node's part of the shared state. It is safe for concurrent
// use; the fields under "owned by the watcher" are touched by the watcher
// goroutine only.
type shared struct {
	b       *Broker
	node    string
	selfKey string // n.<node>

	wake    chan struct{} // to the writer: work queued
	beat    chan struct{} // to the heartbeat goroutine: put now
	rejoin  chan struct{} // to the watcher: reconnected, restart the clocks
	rewatch chan struct{} // to the watcher: the bucket was made anew
	stop    chan struct{} // closed by shutdown
	ready   chan struct{} // closed once the initial values are in, or state is off
	wg      sync.WaitGroup
	bg      sync.WaitGroup // watchers being stopped after shutdown
	once    sync.Once      // closes ready

	mu        sync.Mutex
	kv        jetstream.KeyValue // nil until set up
	off       bool               // no JetStream: state stays per node
	closing   bool
	desired   map[string][]byte // own keys and the values this node set
	dirty     map[string]bool   // own keys queued for the writer
	queue     []string          // the dirty keys, in order
	purge     map[string]uint64 // dead nodes' keys to delete, at their revision
	own       map[string]uint64 // own keys the bucket holds, as the watcher saw them
	resync    bool              // a change was dropped: write everything when idle
	rebind    bool              // reconnected: make or bind the bucket again
	created   time.Time         // when the bucket's stream was made
	lostWatch bool              // the watcher's subscription ended: watch anew

	// Owned by the watcher.
	peers map[string]*peer // live other nodes
	// peerIDs is the ids of peers, sorted, for any goroutine (Broker.Peers).
	peerIDs  atomic.Pointer[[]string]
	zombies  map[string]uint64 // keys of nodes judged down, not yet deleted
	selfSeen time.Time         // arrival of this node's newest heartbeat
	viewFrom time.Time         // when the watch was made or the node reconnected
	stale    map[string]bool   // on a new watch: other nodes' keys not seen again yet

	// beatOK is when the heartbeat's puts began succeeding without a
	// failure since, in unix nanoseconds; 0 after a failure.
	beatOK atomic.Int64
	health *stateHealth // health.go
	stats  stateCounters
}

// peer is another live node as the watcher knows it.
type peer struct {
	seen time.Time         // arrival of its newest put
	keys map[string]uint64 // its keys and revisions, liveness key included
}

type stateCounters struct {
	writes, dropped, errors, nodesDown, purged, rejoins, malformed atomic.Uint64
}

func newShared(b *Broker) *shared {
	return &shared{b: b, node: b.cfg.Node, selfKey: stateKey(kindNode, b.cfg.Node, ""),
		wake: make(chan struct{}, 1), beat: make(chan struct{}, 1), rejoin: make(chan struct{}, 1), rewatch: make(chan struct{}, 1),
		stop: make(chan struct{}), ready: make(chan struct{}),
		desired: map[string][]byte{}, dirty: map[string]bool{}, purge: map[string]uint64{},
		own: map[string]uint64{}, peers: map[string]*peer{}, zombies: map[string]uint64{},
		health: newStateHealth(b.log, StateBucket(b.cfg.Prefix), b.cfg.StateReplicas)}
}

// failed counts a failed KV call and hands it to the health (health.go).
func (s *shared) failed(part statePart, op string, err error) {
	s.stats.errors.Add(1)
	s.health.fail(part, op, err)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// start runs the writer, which sets the bucket up and then starts the
// heartbeat and the watcher.
func (s *shared) start() {
	s.wg.Add(1)
	go s.runWriter() // owned by wg: shutdown stops it, waitStopped waits
}

// set records the wanted value of an own key (nil: absent) and queues it.
func (s *shared) set(key string, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.off || s.closing {
		return
	}
	if value == nil {
		if _, ok := s.desired[key]; !ok {
			if _, held := s.own[key]; !held {
				return // never set: a no-op
			}
		}
		delete(s.desired, key)
	} else {
		s.desired[key] = value
	}
	s.markLocked(key)
}

// markLocked queues key for the writer; s.mu is held.
func (s *shared) markLocked(key string) {
	if s.dirty[key] {
		return
	}
	if len(s.queue) >= s.b.cfg.StateQueue {
		s.stats.dropped.Add(1)
		s.resync = true
		return
	}
	s.dirty[key] = true
	s.queue = append(s.queue, key)
	signal(s.wake)
}

// markAllLocked queues every own key, wanted or held; s.mu is held. It is
// not bounded by StateQueue: it is at most the node's own state.
func (s *shared) markAllLocked() {
	for _, set := range []map[string][]byte{s.desired} {
		for k := range set {
			s.forceMarkLocked(k)
		}
	}
	for k := range s.own {
		if k != s.selfKey {
			s.forceMarkLocked(k)
		}
	}
	signal(s.wake)
}

func (s *shared) forceMarkLocked(key string) {
	if !s.dirty[key] {
		s.dirty[key] = true
		s.queue = append(s.queue, key)
	}
}

// reconnected is called when the connection to NATS is back: this node
// writes its state again and gives every other node LivenessTimeout
// afresh.
func (s *shared) reconnected() {
	s.mu.Lock()
	if !s.off && !s.closing {
		s.rebind = true
		s.markAllLocked()
	}
	s.mu.Unlock()
	signal(s.beat)
	signal(s.rejoin)
}

// setup creates or binds the bucket, retrying until it works, the servers
// say they have no JetStream (state is then off), or shutdown. It returns
// nil unless it worked.
func (s *shared) setup() jetstream.KeyValue {
	cfg := s.b.cfg
	wait := 100 * time.Millisecond
	for {
		kv, created, err := s.createBucket()
		if err == nil {
			s.mu.Lock()
			renewed := !s.created.IsZero() && !created.Equal(s.created) || s.lostWatch
			s.kv, s.created, s.lostWatch = kv, created, false
			s.mu.Unlock()
			s.health.ok(partWrite)
			if renewed {
				signal(s.rewatch)
			}
			return kv
		}
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			s.b.log.Warn("JetStream unavailable: presence, connection counts and node liveness stay per node",
				zap.String("bucket", StateBucket(cfg.Prefix)), zap.Error(err))
			s.mu.Lock()
			s.off = true
			clear(s.desired)
			clear(s.dirty)
			s.queue = nil
			s.mu.Unlock()
			s.once.Do(func() { close(s.ready) })
			return nil
		}
		s.failed(partWrite, "bucket", err)
		select {
		case <-s.stop:
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// createBucket makes or binds the bucket and says when its stream was
// made (a new time: a new, empty bucket).
func (s *shared) createBucket() (jetstream.KeyValue, time.Time, error) {
	cfg := s.b.cfg
	js, err := jetstream.New(s.b.nc)
	if err != nil {
		return nil, time.Time{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.StateTimeout)
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: StateBucket(cfg.Prefix), Description: "kraken presence, connection counts and node liveness",
		History: 1, Storage: jetstream.FileStorage, Replicas: cfg.StateReplicas,
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	var created time.Time
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok {
		created = bs.StreamInfo().Created
	}
	return kv, created, nil
}

func (s *shared) runWriter() {
	defer s.wg.Done()
	kv := s.setup()
	if kv == nil {
		return
	}
	w, cancel := s.watch(kv)
	if w == nil {
		return
	}
	s.wg.Add(2)
	go s.runWatcher(w, cancel) // owned by wg, as the writer
	go s.runHeartbeat()        // owned by wg, as the writer
	var err error
	backoff := time.Duration(0)
	for {
		if backoff > 0 {
			select {
			case <-s.stop:
				return
			case <-time.After(backoff):
			}
		}
		s.mu.Lock()
		rebind := s.rebind
		s.rebind = false
		s.mu.Unlock()
		if rebind && s.setup() == nil {
			return
		}
		key, value, rev, purge, ok := s.next()
		if !ok {
			return
		}
		if key == "" {
			continue
		}
		kv := s.bucket()
		ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.StateTimeout)
		op := "put"
		switch {
		case purge:
			op = "purge"
			err = kv.Delete(ctx, key, jetstream.LastRevision(rev))
			if err == nil {
				s.stats.purged.Add(1)
			} else if errors.Is(err, jetstream.ErrKeyExists) {
				err = nil // written again since: the node is back
			}
		case value != nil:
			_, err = kv.Put(ctx, key, value)
		default:
			op = "delete"
			err = kv.Delete(ctx, key)
		}
		cancel()
		if err == nil {
			s.stats.writes.Add(1)
			s.health.ok(partWrite)
			backoff = 0
			continue
		}
		s.failed(partWrite, op, err)
		s.mu.Lock()
		s.rebind = true // the bucket may be gone: make or bind it again first
		if purge {
			if _, again := s.purge[key]; !again {
				s.purge[key] = rev
			}
		} else if !s.closing {
			s.forceMarkLocked(key)
		}
		s.mu.Unlock()
		backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
	}
}

// next waits for the writer's next operation: an own key with its wanted
// value (nil: delete), or a dead node's key to purge at rev. ok is false
// on shutdown.
func (s *shared) next() (key string, value []byte, rev uint64, purge, ok bool) {
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			key = s.queue[0]
			s.queue[0] = ""
			s.queue = s.queue[1:]
			delete(s.dirty, key)
			value = s.desired[key]
			s.mu.Unlock()
			return key, value, 0, false, true
		}
		for k, r := range s.purge {
			delete(s.purge, k)
			s.mu.Unlock()
			return k, nil, r, true, true
		}
		if s.resync {
			s.resync = false
			s.markAllLocked()
			s.mu.Unlock()
			continue
		}
		if s.rebind {
			s.mu.Unlock()
			return "", nil, 0, false, true // an empty op: the loop rebinds
		}
		s.mu.Unlock()
		select {
		case <-s.stop:
			return "", nil, 0, false, false
		case <-s.wake:
		}
	}
}

// watch starts watching the whole bucket, retrying until shutdown (nil).
// The watcher's subscription lives until cancel.
func (s *shared) watch(kv jetstream.KeyValue) (jetstream.KeyWatcher, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	for {
		w, err := kv.WatchAll(ctx)
		if err == nil {
			return w, cancel
		}
		s.failed(partWatch, "watch", err)
		select {
		case <-s.stop:
			cancel()
			return nil, nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *shared) bucket() jetstream.KeyValue {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kv
}

func (s *shared) runHeartbeat() {
	defer s.wg.Done()
	value := []byte(strconv.FormatInt(time.Now().UnixMilli(), 10)) // when this run started
	put := func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.Heartbeat)
		defer cancel()
		if _, err := s.bucket().Put(ctx, s.selfKey, value); err != nil {
			s.beatOK.Store(0)
			s.failed(partWrite, "heartbeat", err)
			return
		}
		s.beatOK.CompareAndSwap(0, time.Now().UnixNano())
		s.health.ok(partWrite)
	}
	t := time.NewTicker(s.b.cfg.Heartbeat)
	defer t.Stop()
	put()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			put()
		case <-s.beat:
			put()
		}
	}
}

func (s *shared) runWatcher(w jetstream.KeyWatcher, cancel context.CancelFunc) {
	defer s.wg.Done()
	t := time.NewTicker(s.b.cfg.Heartbeat)
	defer t.Stop()
	updates := w.Updates() // nil while there is no watch
	s.viewFrom = time.Now()
	// renew watches the bucket anew, the old watch stopped first, or in
	// the background (a watch whose consumer is gone may take a while to
	// stop); other nodes' keys the new watch lacks are gone. false: the
	// node is shutting down.
	renew := func(background bool) bool {
		if updates != nil {
			if background {
				old, oldCancel := w, cancel
				s.bg.Add(1)
				go func() { defer s.bg.Done(); s.stopWatcher(old, oldCancel) }()
			} else {
				s.stopWatcher(w, cancel)
			}
		}
		cancel()
		if w, cancel = s.watch(s.bucket()); w == nil {
			return false
		}
		updates = w.Updates()
		s.viewFrom = time.Now()
		s.stale = map[string]bool{}
		for _, p := range s.peers {
			for k := range p.keys {
				s.stale[k] = true
			}
		}
		return true
	}
	for {
		select {
		case <-s.stop:
			cancel()
			if updates != nil {
				// Unsubscribing asks the server to delete the watch's
				// consumer, which waits for a server that may be going
				// away too: off the shutdown's path. Closing the
				// connection ends it (Broker.stop waits for it then).
				s.bg.Add(1)
				go func() { defer s.bg.Done(); s.stopWatcher(w, cancel) }()
			}
			return
		case e, ok := <-updates:
			if !ok {
				// nats.go gave the watch up (the bucket is gone): the
				// writer makes it again.
				updates = nil
				s.failed(partWatch, "watch", errWatchEnded)
				s.mu.Lock()
				s.rebind, s.lostWatch = true, true
				s.mu.Unlock()
				signal(s.wake)
				continue
			}
			s.health.ok(partWatch)
			if e == nil {
				s.initialDone()
				continue
			}
			delete(s.stale, e.Key())
			s.apply(e)
		case <-s.rewatch:
			// A new bucket (a server that lost its store): its revisions
			// start again, and say nothing of the entries this node has.
			s.b.log.Warn("state bucket made again; watching it anew")
			for _, p := range s.peers {
				for k := range p.keys {
					p.keys[k] = 0
				}
			}
			if !renew(false) {
				return
			}
		case <-s.rejoin:
			now := time.Now()
			s.viewFrom = now
			for _, p := range s.peers {
				p.seen = now
			}
		case now := <-t.C:
			if updates != nil && s.checkWatch(now) && !s.stopping() {
				if !renew(true) {
					return
				}
			}
			s.maybePurge()
		}
	}
}

// checkWatch runs on every tick of the watcher. When none of this node's
// heartbeats has come back through the watch for LivenessTimeout, the
// node's view of the others is stale and the watch fails (health.go)
// until an entry arrives. If the heartbeats were stored meanwhile (for a
// Heartbeat or more), the watch itself is lost: its consumer went away
// with a NATS server, without an error (nats.go would notice after two of
// the consumer's 5 s idle heartbeats), and checkWatch returns true: watch
// anew. While the heartbeats fail, that failure is the cause and the watch
// is kept.
func (s *shared) checkWatch(now time.Time) bool {
	last := s.selfSeen
	if s.viewFrom.After(last) {
		last = s.viewFrom
	}
	quiet := now.Sub(last)
	if quiet <= s.b.cfg.LivenessTimeout {
		return false
	}
	okSince := s.beatOK.Load()
	lost := okSince != 0 && now.Sub(time.Unix(0, okSince)) >= s.b.cfg.Heartbeat
	why := "none of this node's heartbeats came back through its watch for " + quiet.Round(time.Millisecond).String()
	if lost {
		s.stats.errors.Add(1)
		why += ", though stored: watching anew"
	}
	s.health.fail(partWatch, "watch", errors.New("natsbroker: "+why))
	return lost
}

// stopping reports whether shutdown has begun.
func (s *shared) stopping() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// stopWatcher unsubscribes and drains the watcher's channel, so nats.go's
// callback, which blocks on a full channel, returns.
func (s *shared) stopWatcher(w jetstream.KeyWatcher, cancel context.CancelFunc) {
	cancel()
	_ = w.Stop()
	deadline := time.After(2 * time.Second)
	for {
		select {
		case _, ok := <-w.Updates():
			if !ok {
				return
			}
		case <-deadline:
			return
		}
	}
}

// initialDone runs once the bucket's initial values are in: own keys left
// from an earlier run under this node id are deleted.
func (s *shared) initialDone() {
	for k := range s.stale {
		// Gone from the bucket while the watch was down: as if deleted.
		s.apply(staleEntry(k))
	}
	s.stale = nil
	s.mu.Lock()
	for k := range s.own {
		if _, ok := s.desired[k]; !ok && k != s.selfKey {
			s.markLocked(k)
		}
	}
	s.mu.Unlock()
	s.once.Do(func() { close(s.ready) })
}

// apply handles one change of the bucket.
func (s *shared) apply(e jetstream.KeyValueEntry) {
	key := e.Key()
	kind, node, item, err := parseStateKey(key)
	if err != nil {
		s.stats.malformed.Add(1)
		return
	}
	del := e.Operation() != jetstream.KeyValuePut
	if node == s.node {
		s.applyOwn(key, kind, del, e.Revision())
		return
	}
	h := s.b.h
	p := s.peers[node]
	if del {
		delete(s.zombies, key)
		if p == nil {
			return // a node judged down, or never seen: nothing to tell
		}
		if _, ok := p.keys[key]; !ok {
			return
		}
		delete(p.keys, key)
		switch kind {
		case kindNode:
			s.down(node, p)
		case kindPresence:
			h.HandlePresenceGone(node, item)
		case kindConns:
			h.HandleConnections(node, item, 0)
		}
		return
	}
	if p == nil {
		p = &peer{keys: map[string]uint64{}}
		s.peers[node] = p
		s.publishPeers()
		s.b.noteUp(node)
	}
	p.seen = time.Now()
	delete(s.zombies, key)
	if rev, ok := p.keys[key]; ok && rev == e.Revision() {
		return // the entry this node has: a new watch's initial values
	}
	switch kind {
	case kindNode:
		p.keys[key] = e.Revision()
	case kindPresence:
		pr, err := decodePresence(node, item, e.Value())
		if err != nil {
			s.stats.malformed.Add(1)
			return
		}
		p.keys[key] = e.Revision()
		h.HandlePresence(pr)
	case kindConns:
		n, err := strconv.Atoi(string(e.Value()))
		if err != nil {
			s.stats.malformed.Add(1)
			return
		}
		p.keys[key] = e.Revision()
		h.HandleConnections(node, item, n)
	}
}

// applyOwn handles a change of one of this node's own keys.
func (s *shared) applyOwn(key, kind string, del bool, rev uint64) {
	s.mu.Lock()
	if !del {
		s.own[key] = rev
	} else {
		delete(s.own, key)
		if !s.closing && !s.off {
			if kind == kindNode {
				// Another node judged this one down and forgot its state.
				s.stats.rejoins.Add(1)
				s.markAllLocked()
				signal(s.beat)
			} else if _, ok := s.desired[key]; ok {
				s.markLocked(key)
			}
		}
	}
	s.mu.Unlock()
	if !del && kind == kindNode {
		now := time.Now()
		if !s.selfSeen.IsZero() && now.Sub(s.selfSeen) > s.b.cfg.LivenessTimeout {
			// This node's own view was stale (its heartbeats or its watch
			// failed): what it missed of the others meanwhile is no sign
			// of their death, and they get LivenessTimeout afresh.
			for _, p := range s.peers {
				p.seen = now
			}
		}
		s.selfSeen = now
		s.judge()
	}
}

// judge marks down every node silent for LivenessTimeout before this
// node's newest heartbeat came back.
func (s *shared) judge() {
	for node, p := range s.peers {
		if s.selfSeen.Sub(p.seen) > s.b.cfg.LivenessTimeout {
			s.down(node, p)
		}
	}
}

// down forgets node (judged down or closed) and tells the handler, once.
func (s *shared) down(node string, p *peer) {
	delete(s.peers, node)
	s.publishPeers()
	s.b.noteDown(node)
	for k, rev := range p.keys {
		s.zombies[k] = rev
	}
	s.stats.nodesDown.Add(1)
	s.b.log.Info("node down", zap.String("peer", node))
	s.b.h.HandleNodeDown(node)
	s.maybePurge()
}

// maybePurge hands the zombies to the writer if this node is the live
// node with the smallest id.
func (s *shared) maybePurge() {
	if len(s.zombies) == 0 {
		return
	}
	for node := range s.peers {
		if node < s.node {
			return
		}
	}
	s.mu.Lock()
	for k, rev := range s.zombies {
		s.purge[k] = rev
	}
	s.mu.Unlock()
	signal(s.wake)
}

// waitReady waits up to d for the initial values.
func (s *shared) waitReady(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ready:
	case <-t.C:
	}
}

// waitStopped waits, at most d, for the goroutines that shutdown left in a
// NATS call: they end once the connection is closed.
func (s *shared) waitStopped(d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	waitGroup(ctx, &s.wg)
	waitGroup(ctx, &s.bg)
}

// waitGroup waits for wg until ctx ends, and reports whether wg finished.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	// Ends with wg; past ctx nobody waits for it, and it ends once the
	// goroutines of wg do (they end when the connection is closed).
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// shutdown stops the goroutines. With goodbye, it then deletes this node's
// liveness key (the others call HandleNodeDown and forget its keys) and its
// other keys. Both within StateTimeout in all; what is left the others
// purge. A goroutine still in a NATS call past it is left to end when the
// connection is closed (waitStopped).
func (s *shared) shutdown(goodbye bool) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.closing = true
	s.mu.Unlock()
	s.health.close()
	close(s.stop)
	// One budget for the goroutines to stop and the goodbye: a KV call in
	// flight to a NATS that is going away must not hold the node's exit
	// (what is left the others purge).
	ctx, cancel := context.WithTimeout(context.Background(), s.b.cfg.StateTimeout)
	defer cancel()
	if !waitGroup(ctx, &s.wg) {
		return
	}
	s.mu.Lock()
	kv, keys := s.kv, make([]string, 0, len(s.own)+len(s.desired))
	for k := range s.own {
		if k != s.selfKey {
			keys = append(keys, k)
		}
	}
	for k := range s.desired {
		if _, ok := s.own[k]; !ok {
			keys = append(keys, k)
		}
	}
	s.mu.Unlock()
	if !goodbye || kv == nil {
		return
	}
	if err := kv.Delete(ctx, s.selfKey); err != nil {
		return
	}
	for _, k := range keys {
		if kv.Delete(ctx, k) != nil {
			return
		}
	}
}

// SetPresence implements broker.Broker.
func (b *Broker) SetPresence(p *broker.Presence) {
	b.state.set(stateKey(kindPresence, b.cfg.Node, p.ID), encodePresence(p))
}

// ClearPresence implements broker.Broker.
func (b *Broker) ClearPresence(id string) {
	b.state.set(stateKey(kindPresence, b.cfg.Node, id), nil)
}

// SetConnections implements broker.Broker.
func (b *Broker) SetConnections(org string, n int) {
	var v []byte
	if n > 0 {
		v = strconv.AppendInt(nil, int64(n), 10)
	}
	b.state.set(stateKey(kindConns, b.cfg.Node, org), v)
}

// staleEntry is a delete of key, as the watcher would have seen it.
type staleEntry string

func (e staleEntry) Bucket() string                  { return "" }
func (e staleEntry) Key() string                     { return string(e) }
func (e staleEntry) Value() []byte                   { return nil }
func (e staleEntry) Revision() uint64                { return 0 }
func (e staleEntry) Created() time.Time              { return time.Time{} }
func (e staleEntry) Delta() uint64                   { return 0 }
func (e staleEntry) Operation() jetstream.KeyValueOp { return jetstream.KeyValueDelete }
