// Package resume keeps the sessions of resumable connections across a
// dropped connection: on a resumable connection's close its
// subscriptions are parked on a hub connection of their own, whose
// transport keeps the messages they receive (bounded per session), until
// the client reconnects with reconnect:true and the same identity, or the
// session expires. In memory on its node; with a Store (stored.go:
// STORE_BACKEND=jetstream) the sessions, and those of another transport
// that is a Source (the MQTT listener's persistent sessions), are also
// saved where every node and a restarted one resume them.
package resume

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/sessionkv"
)

// Defaults applied by New to zero or negative Config fields.
const (
	DefaultExpiry      = 120 * time.Second // RESUME_EXPIRY_SECONDS
	DefaultMaxSessions = 100000
	DefaultMaxBytes    = 1 << 20 // per session
)

// Config bounds a Registry.
type Config struct {
	// Expiry is how long a dropped session is kept.
	Expiry time.Duration
	// MaxSessions caps the sessions kept while disconnected; parking one
	// more drops the oldest.
	MaxSessions int
	// MaxBytes bounds the bytes of missed messages kept per session, and
	// MaxMessages (0: no bound) their number (STORE_MAX_MESSAGES); past
	// either further messages are dropped and the replay says
	// complete:false, backlog_limit.
	MaxBytes    int
	MaxMessages int
	// MaxAge (0: none) caps every session's expiry, a token's own
	// included: messages are not kept longer than the store keeps records
	// (STORE_TTL_SECONDS).
	MaxAge time.Duration
	// IdleTimeout is the hub's (hub.Config.IdleTimeout, default 60 s): a
	// parked connection is made to go idle at its session's expiry, so the
	// hub's own sweep ends it then, with no timer per session.
	IdleTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time

	// Store, when set (STORE_BACKEND=jetstream), keeps the sessions where
	// every node and a restarted one can resume them (stored.go): Node
	// names this node there, the live sessions that changed and those
	// parked are written every SaveEvery (default DefaultSaveEvery) with
	// positions PositionLag (DefaultPositionLag) behind, a live session
	// unchanged is written again every Refresh (0: a third of its own
	// expiry, a token's included) so its record outlives a sudden end of
	// this node by its expiry, and
	// a session resumed from the Store is replayed from History.
	Store       Store
	History     History
	Node        string
	SaveEvery   time.Duration
	PositionLag time.Duration
	Refresh     time.Duration
	// Logger receives the Store's failures (default: none).
	Logger *zap.Logger
}

// Spec is one subscription kept for a session: the hub's SubSpec without
// its reply frames.
type Spec = hub.SubSpec

// Live is a resumable connection's session while it is connected: its
// identity and the subscriptions it holds, kept up to date by the session
// protocol from the connection's reader. Guarded by the Registry's mutex.
type Live struct {
	ID     string
	expiry time.Duration
	specs  []Spec
	// restored is the patterns a resume restored on the connection that
	// its client has not subscribed to again yet (Restored, Resubscribe).
	restored map[string]struct{}
	durable  durable // its saves to Config.Store (stored.go)
}

// Parked is a session kept after its connection dropped.
type Parked struct {
	ID      string
	Specs   []Spec
	conn    *hub.Conn
	expires time.Time
	t       *transport
	reason  string // set for a session taken over from a live connection: nothing kept
	seq     uint64 // its parking (fifo)
	// position is where its client had got when its connection closed:
	// every message accepted before it was delivered and, if it asks
	// for acks, acked (stored.go; zero without a Store).
	position time.Time
}

// parking is a Parked's place in the fifo. It names the session rather than
// pointing at it, so a session that ended out of order (resumed, dropped,
// expired through the hub's sweep) pins nothing while its place waits to
// reach the head.
type parking struct {
	id      string
	seq     uint64
	expires time.Time
}

// Registry is the node's resumable sessions. Safe for concurrent use.
type Registry struct {
	cfg Config
	h   *hub.Hub

	mu     sync.Mutex
	byConn map[*hub.Conn]*Live
	owner  map[string]*hub.Conn // identity → its live connection
	parked map[string]*Parked
	fifo   []parking // parked sessions in parking order, some no longer kept
	seq    uint64    // of the last parking
	// unsaved is the records of sessions parked (or ended) since the last
	// batch of saves to Config.Store.
	unsaved map[string]sessionkv.Record
	sources []Source // other transports' sessions, saved with these (AddSource)

	stopListen    func()        // Store.Listen's
	saving, saved chan struct{} // StopSaving closes saving; saveLoop closes saved
	stats         counters
}

// counters are a Registry's counters, shared with its parked transports.
type counters struct {
	replays                      [numReplayResults]atomic.Uint64
	givenBack, lost              atomic.Uint64
	saved, saveErrors, takenOver atomic.Uint64
}

// Replay results, as counted by CountReplay: complete, or the reason it
// was not.
const (
	replayComplete = iota
	replayExpired
	replayTakenOver
	replayOverflow
	replayHistoryLimit
	replayUnavailable
	numReplayResults
)

// Stats are a Registry's counters.
type Stats struct {
	// Parked is the sessions kept while disconnected now.
	Parked int
	// Replays counts the replays sent to reconnects with reconnect:true,
	// by result: complete, session_expired, session_taken_over,
	// backlog_limit, history_limit, store_unavailable (the names of
	// ReplayResults).
	Replays [numReplayResults]uint64
	// GivenBack counts unacked load-balanced messages handed back to their
	// group when a session ended unresumed, and Lost those that found no
	// member of the group on this node.
	GivenBack, Lost uint64
	// Saved counts the session records written to Config.Store,
	// SaveErrors the records of the batches it refused, and TakenOver the
	// sessions of this node that a reconnect resumed on another.
	Saved, SaveErrors, TakenOver uint64
}

// ReplayResults names the entries of Stats.Replays.
var ReplayResults = [numReplayResults]string{"complete", ReasonExpired, ReasonTakenOver, ReasonOverflow,
	history.ReasonLimit, ReasonUnavailable}

// CountReplay counts one replay sent with reason ("" for complete).
func (r *Registry) CountReplay(reason string) {
	i := replayComplete
	for k, name := range ReplayResults {
		if k != replayComplete && name == reason {
			i = k
		}
	}
	r.stats.replays[i].Add(1)
}

// Stats returns the current counters.
func (r *Registry) Stats() Stats {
	st := Stats{Parked: r.Len(), GivenBack: r.stats.givenBack.Load(), Lost: r.stats.lost.Load(),
		Saved: r.stats.saved.Load(), SaveErrors: r.stats.saveErrors.Load(), TakenOver: r.stats.takenOver.Load()}
	for i := range st.Replays {
		st.Replays[i] = r.stats.replays[i].Load()
	}
	return st
}

// New returns an empty Registry parking subscriptions on h.
func New(cfg Config, h *hub.Hub) *Registry {
	if cfg.Expiry <= 0 {
		cfg.Expiry = DefaultExpiry
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.SaveEvery <= 0 {
		cfg.SaveEvery = DefaultSaveEvery
	}
	if cfg.PositionLag <= 0 {
		cfg.PositionLag = DefaultPositionLag
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	return &Registry{cfg: cfg, h: h, byConn: map[*hub.Conn]*Live{}, owner: map[string]*hub.Conn{},
		parked: map[string]*Parked{}, unsaved: map[string]sessionkv.Record{}}
}

// Identity is the session identity of actor with the auth frame's clientId:
// the clientId sanitised to [A-Za-z0-9_-] and at most 64 characters
// (decisions.md OQ-51); without one, one session per actor.
func Identity(actor, clientID string) string {
	var b strings.Builder
	b.WriteString(actor)
	b.WriteByte('\x00')
	n := 0
	for i := 0; i < len(clientID) && n < 64; i++ {
		ch := clientID[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_' || ch == '-' {
			b.WriteByte(ch)
			n++
		}
	}
	return b.String()
}

// Attach makes c the live connection of session id, to be kept for expiry
// (Config.Expiry when 0) once c drops, unless another live connection
// holds it (then c is not resumable: ok false). With take, it also hands
// back the parked session of id, if one is kept and not expired; the
// caller must then Replay it. Without, a parked session of id is dropped.
func (r *Registry) Attach(c *hub.Conn, id string, take bool, expiry time.Duration) (pk *Parked, ok bool) {
	if expiry <= 0 {
		expiry = r.cfg.Expiry
	}
	if r.cfg.MaxAge > 0 && expiry > r.cfg.MaxAge {
		expiry = r.cfg.MaxAge
	}
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sweepLocked(now)
	if o, held := r.owner[id]; held && o != c {
		if !take {
			return nil, false
		}
		// A reconnect while the old connection still looks live (its drop
		// not noticed yet): the session moves to c with the subscriptions,
		// the old connection keeps its own but is no longer resumable, and
		// what it was sent since it dropped is unknown.
		l := r.byConn[o]
		delete(r.byConn, o)
		r.owner[id] = c
		r.byConn[c] = &Live{ID: id, expiry: expiry}
		return &Parked{ID: id, Specs: l.specs, reason: ReasonTakenOver}, true
	}
	r.owner[id] = c
	r.byConn[c] = &Live{ID: id, expiry: expiry}
	if pk = r.parked[id]; pk != nil {
		delete(r.parked, id)
		if !take || !now.Before(pk.expires) {
			r.h.Closed(pk.conn) // a fresh connect drops what was kept
			pk = nil
		}
		r.compactLocked()
	}
	return pk, true
}

// Subscribed records spec (its reply frames dropped) as a subscription of
// c's session, replacing one with the same pattern.
func (r *Registry) Subscribed(c *hub.Conn, spec *hub.SubSpec) {
	s := *spec
	s.Reply, s.TooMany = nil, nil
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.byConn[c]
	if l == nil {
		return
	}
	l.durable.savedAt = time.Time{}
	for i := range l.specs {
		if l.specs[i].Pattern == s.Pattern {
			l.specs[i] = s
			return
		}
	}
	l.specs = append(l.specs, s)
}

// Restored notes patterns as subscriptions a resume restored on c, before
// its client may subscribe to them again (see Resubscribe).
func (r *Registry) Restored(c *hub.Conn, patterns []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.byConn[c]
	if l == nil || len(patterns) == 0 {
		return
	}
	if l.restored == nil {
		l.restored = make(map[string]struct{}, len(patterns))
	}
	for _, p := range patterns {
		l.restored[p] = struct{}{}
	}
}

// Resubscribe reports whether pattern is a subscription restored on c by
// a resume that c's client has not subscribed to again, and makes it no
// longer one. That first subscribe again (the Go SDK re-subscribes all
// after a reconnect) must get no retained message: the client got it when
// it first subscribed, and a newer one is in the replay (docs/protocol.md
// "Resumable sessions"). Later subscribes are plain ones.
func (r *Registry) Resubscribe(c *hub.Conn, pattern string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.byConn[c]
	if l == nil {
		return false
	}
	if _, ok := l.restored[pattern]; !ok {
		return false
	}
	delete(l.restored, pattern)
	return true
}

// Unsubscribed forgets c's subscription to pattern.
func (r *Registry) Unsubscribed(c *hub.Conn, pattern string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.byConn[c]; l != nil {
		l.durable.savedAt = time.Time{}
		for i := range l.specs {
			if l.specs[i].Pattern == pattern {
				l.specs = append(l.specs[:i], l.specs[i+1:]...)
				return
			}
		}
	}
}

// FiltersSet replaces the filters of c's subscription to pattern.
func (r *Registry) FiltersSet(c *hub.Conn, pattern string, filters []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.byConn[c]; l != nil {
		l.durable.savedAt = time.Time{}
		for i := range l.specs {
			if l.specs[i].Pattern == pattern {
				l.specs[i].Filters = filters
			}
		}
	}
}

// Resumable reports whether c is the live connection of a session.
func (r *Registry) Resumable(c *hub.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byConn[c] != nil
}

// Closed parks the session of c, a connection that ended, when it has
// one: its subscriptions are kept, and those of QoS ≥ 1 that are not
// load-balanced go on collecting messages, until Expiry. What c's QoS ≥ 1
// subscriptions were sent and not acked is kept too; for a load-balanced
// one it goes back to its group if the session ends unresumed. It must run on
// c's worker once c's subscriptions are gone (hub.Config.OnClose). It
// reports whether c was a parked connection itself, which the caller must
// then ignore.
func (r *Registry) Closed(c *hub.Conn) (parkedConn bool) {
	if t, ok := c.Transport().(*transport); ok {
		// Expired (the hub's sweep found it idle), dropped, taken or shut
		// down: let go of it and of what it kept.
		r.mu.Lock()
		if pk := r.parked[t.id]; pk != nil && pk.conn == c {
			delete(r.parked, t.id)
		}
		r.sweepLocked(r.cfg.Now()) // its place in the fifo, and those before it
		r.mu.Unlock()
		t.drop() // a replay that took it already is unaffected
		return true
	}
	now := r.cfg.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.byConn[c]
	if l == nil {
		return false
	}
	delete(r.byConn, c)
	if r.owner[l.ID] == c {
		delete(r.owner, l.ID)
	}
	r.sweepLocked(now)
	if old := r.parked[l.ID]; old != nil {
		r.h.Closed(old.conn)
	}
	r.parkedRecordLocked(c, l)
	if len(l.specs) == 0 {
		return false // nothing to keep (a publisher, a clean close before any subscribe)
	}
	for len(r.parked) >= r.cfg.MaxSessions && len(r.fifo) > 0 {
		r.dropHeadLocked()
	}
	expires := now.Add(l.expiry)
	t := &transport{h: r.h, id: l.ID, max: r.cfg.MaxBytes, maxN: r.cfg.MaxMessages, stats: &r.stats}
	var collect, acked []Spec
	for _, s := range l.specs {
		if s.QoS < 1 {
			continue
		}
		acked = append(acked, s)
		if !s.LoadBalance {
			s.NoRetained = true
			collect = append(collect, s)
		}
	}
	t.inFlight(c, acked)
	// On c's worker, right after c's subscriptions went: no publication
	// falls between them and the parked ones.
	pc := c.Adopt(t, collect)
	t.c.Store(pc)
	// Idle, by the hub's clock (time.Now), once the expiry has passed: the
	// hub's sweep then closes it and Closed lets go of it.
	pc.Touch(time.Now().Add(l.expiry).UnixNano() - int64(r.cfg.IdleTimeout))
	r.seq++
	pk := &Parked{ID: l.ID, Specs: l.specs, conn: pc, expires: expires, t: t, seq: r.seq, position: l.durable.pos}
	r.parked[l.ID] = pk
	r.fifo = append(r.fifo, parking{id: l.ID, seq: r.seq, expires: expires})
	return false
}

// Sweep drops the sessions expired at now.
func (r *Registry) Sweep(now time.Time) {
	r.mu.Lock()
	r.sweepLocked(now)
	r.mu.Unlock()
}

// sweepLocked drops, oldest first, the parked sessions expired or already
// taken. One behind a longer-lived one waits for it (a token's own expiry,
// Attach), and is never resumed once expired.
func (r *Registry) sweepLocked(now time.Time) {
	for len(r.fifo) > 0 && (!now.Before(r.fifo[0].expires) || !r.keptLocked(r.fifo[0])) {
		r.dropHeadLocked()
	}
	r.compactLocked()
}

// keptLocked reports whether the session of e is still kept.
func (r *Registry) keptLocked(e parking) bool {
	pk := r.parked[e.id]
	return pk != nil && pk.seq == e.seq
}

// compactLocked drops the places of sessions no longer kept once they
// outnumber the kept ones, so the fifo stays within twice the sessions
// kept (plus a little) however they end.
func (r *Registry) compactLocked() {
	if len(r.fifo) <= 2*len(r.parked)+64 {
		return
	}
	kept := make([]parking, 0, 2*len(r.parked)+16)
	for _, e := range r.fifo {
		if r.keptLocked(e) {
			kept = append(kept, e)
		}
	}
	r.fifo = kept
}

// dropHeadLocked drops the oldest parked session, if it is still kept.
func (r *Registry) dropHeadLocked() {
	e := r.fifo[0]
	r.fifo[0] = parking{}
	r.fifo = r.fifo[1:]
	if r.keptLocked(e) {
		pk := r.parked[e.id]
		delete(r.parked, e.id)
		r.h.Closed(pk.conn)
	}
}

// Len returns the sessions kept while disconnected.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.parked)
}
