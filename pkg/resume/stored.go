package resume

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/sessionkv"
)

// Store keeps the node's resumable sessions where every node of the
// cluster, and this node after a restart, can read them
// (STORE_BACKEND=jetstream: *sessionkv.Store, a JetStream KV bucket). Its
// methods are safe for concurrent use.
type Store interface {
	// Save writes a batch of records, each replacing the one of its ID.
	Save(ctx context.Context, recs []sessionkv.Record) error
	// Load returns the record of id; ok false when there is none.
	Load(ctx context.Context, id string) (rec sessionkv.Record, ok bool, err error)
	// TakeOver tells node that session id was resumed elsewhere.
	TakeOver(node, id string) error
	// Listen calls fn with each id another node took over from node.
	Listen(node string, fn func(id string)) (stop func(), err error)
}

// History is the durable message history a session resumed from a Store
// is replayed from (*history.History).
type History interface {
	// SeqAt is the Read position just before the first entry stored at or
	// after t; gap reports that entries after t may have been removed.
	SeqAt(ctx context.Context, t time.Time) (after uint64, gap bool, err error)
	// Sync returns once what was appended before the call is stored.
	Sync(ctx context.Context) error
	// Read returns the entries of topics after the position after.
	Read(ctx context.Context, topics []string, after uint64, limit int) ([]history.Entry, history.ReadResult, error)
	// Count returns how many entries of topics are stored in (after,
	// last], at most max; exact false when there are more.
	Count(ctx context.Context, topics []string, after, last uint64, max int) (n int, exact bool, err error)
}

// Defaults of the durable sessions (Config.Store).
const (
	// DefaultSaveEvery is how often the live sessions whose position or
	// subscriptions changed, and the sessions parked since, are written
	// to the Store, in one batch.
	DefaultSaveEvery = time.Second
	// DefaultPositionLag is how far behind the moment of a save a live
	// session's position is put: a message accepted on another node up to
	// this long before reaches this node's subscriber after it, and clocks
	// of the nodes and the NATS servers may differ by a little. A resume
	// on another node may replay up to this long plus DefaultSaveEvery of
	// messages the client had already received (isReplay:true, the same
	// msgId: at-least-once).
	DefaultPositionLag = 2 * time.Second
	// DefaultMaxReplay bounds the messages a resume from the Store reads
	// (when Config.MaxMessages is 0); past it the oldest are replayed and
	// replayEnd says backlog_limit.
	DefaultMaxReplay = 10000
	// maxCounted bounds the entries a replay stopped at its limit counts
	// to say how many it left out (replayEnd's lost): past it, lost is not
	// sent.
	maxCounted = 1_000_000
	// storeTimeout bounds one Store or History request of a resume, and a
	// batch of saves.
	storeTimeout = 5 * time.Second
	// replaySettle is how long a resume from the Store waits, once its
	// subscriptions are in place and this node's appends are stored, for
	// the other nodes' appends of messages accepted just before: those
	// are then in the history, and those after come live (held, then
	// released without the ones replayed).
	replaySettle = 150 * time.Millisecond
)

// ReasonUnavailable: the Store or the history could not be reached in
// time; the session's subscriptions are restored when known, what was
// missed is not.
const ReasonUnavailable = "store_unavailable"

// Stored is a session found in the Store by a reconnect that this node
// does not keep: the subscriptions to restore and the position to replay
// the history from.
type Stored struct {
	ID       string
	Specs    []Spec
	Position time.Time
	// Reason is why nothing can be replayed ("" when the history can be
	// read from Position): ReasonUnavailable.
	Reason string
}

// durable is what a Live keeps for its saves.
type durable struct {
	sent    uint32    // hub.Conn.Progress at the last save
	pos     time.Time // its position at the last save
	pinned  bool      // pos stays until the tap holds nothing unacked (a replay's messages carry their replay time)
	savedAt time.Time // zero: never saved, or changed since
	// off: nothing is written for this session (Unclaimed): its record
	// could not be read, so it may be another node's.
	off bool
}

// positionAt is the position of a live session at now: now less the lag,
// or earlier, before its oldest unacked delivery; unchanged while the tap
// lost unacked deliveries or still holds those of a replay.
func (r *Registry) positionAt(c *hub.Conn, d *durable, now time.Time) (time.Time, uint32) {
	sent, oldest, stuck := c.Progress()
	pos := now.Add(-r.cfg.PositionLag)
	if oldest != 0 {
		pos = minTime(pos, time.Unix(0, oldest).Add(-r.cfg.PositionLag))
	} else {
		d.pinned = false
	}
	if (stuck || d.pinned) && !d.pos.IsZero() {
		pos = minTime(pos, d.pos)
	}
	return pos, sent
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// StartSaving starts writing the sessions to Config.Store every
// Config.SaveEvery and listening for the sessions other nodes take over
// from this one; a no-op without a Store. StopSaving ends it.
func (r *Registry) StartSaving() error {
	if r.cfg.Store == nil {
		return nil
	}
	stop, err := r.cfg.Store.Listen(r.cfg.Node, r.takenOver)
	if err != nil {
		return err
	}
	r.stopListen = stop
	r.saving = make(chan struct{})
	r.saved = make(chan struct{})
	go r.saveLoop() // ends at StopSaving, which waits for it
	return nil
}

// StopSaving writes what is left to save (the sessions the shutdown just
// parked), within ctx, and stops the saves.
func (r *Registry) StopSaving(ctx context.Context) {
	if r.saving == nil {
		return
	}
	r.stopListen()
	close(r.saving)
	<-r.saved
	r.saveOnce(ctx)
}

func (r *Registry) saveLoop() {
	defer close(r.saved)
	t := time.NewTicker(r.cfg.SaveEvery)
	defer t.Stop()
	for {
		select {
		case <-r.saving:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		r.saveOnce(ctx)
		cancel()
	}
}

// saveOnce writes, in one batch, the sessions parked since the last
// batch and the live ones that changed (a delivery, a subscription) or
// were not written for Config.Refresh.
func (r *Registry) saveOnce(ctx context.Context) {
	now := r.cfg.Now()
	type liveConn struct {
		c *hub.Conn
		l *Live
	}
	r.mu.Lock()
	recs := make([]sessionkv.Record, 0, len(r.unsaved))
	for _, rec := range r.unsaved {
		recs = append(recs, rec)
	}
	clear(r.unsaved)
	lives := make([]liveConn, 0, len(r.byConn))
	for c, l := range r.byConn {
		lives = append(lives, liveConn{c, l})
	}
	sources := r.sources
	r.mu.Unlock()
	for _, src := range sources {
		recs = append(recs, src.LiveRecords(now)...)
	}
	for _, lc := range lives {
		r.mu.Lock()
		if r.byConn[lc.c] != lc.l { // closed meanwhile: parked, in the next batch
			r.mu.Unlock()
			continue
		}
		d := &lc.l.durable
		if d.off {
			r.mu.Unlock()
			continue
		}
		pos, sent := r.positionAt(lc.c, d, now)
		refresh := r.cfg.Refresh
		if refresh <= 0 {
			refresh = lc.l.expiry / 3
		}
		if !d.savedAt.IsZero() && sent == d.sent && now.Sub(d.savedAt) < refresh {
			r.mu.Unlock()
			continue
		}
		d.sent, d.pos, d.savedAt = sent, pos, now
		recs = append(recs, r.recordLocked(lc.l, true, pos, now))
		r.mu.Unlock()
	}
	if len(recs) == 0 {
		return
	}
	if err := r.cfg.Store.Save(ctx, recs); err != nil {
		r.stats.saveErrors.Add(uint64(len(recs)))
		r.cfg.Logger.Warn("resumable sessions not saved", zap.Int("sessions", len(recs)), zap.Error(err))
		r.mu.Lock()
		for _, rec := range recs { // again next time, unless newer ones came
			if _, newer := r.unsaved[rec.ID]; !newer && !rec.Live {
				r.unsaved[rec.ID] = rec
			}
		}
		r.mu.Unlock()
		return
	}
	r.stats.saved.Add(uint64(len(recs)))
}

// recordLocked is the record of l as saved at now.
func (r *Registry) recordLocked(l *Live, live bool, pos, now time.Time) sessionkv.Record {
	rec := sessionkv.Record{ID: l.ID, Node: r.cfg.Node, Live: live, Position: pos, Saved: now, Expiry: l.expiry,
		Specs: make([]sessionkv.Spec, len(l.specs))}
	for i, s := range l.specs {
		rec.Specs[i] = sessionkv.Spec{Pattern: s.Pattern, Key: s.Key, Wildcard: s.Wildcard, Filters: s.Filters,
			QoS: s.QoS, LoadBalance: s.LoadBalance, Group: s.Group, Durable: s.Durable}
	}
	return rec
}

// parkedRecordLocked queues the record of l, whose connection c just
// closed, for the next batch: parked at the position its client reached.
func (r *Registry) parkedRecordLocked(c *hub.Conn, l *Live) {
	if r.cfg.Store == nil || l.durable.off {
		return
	}
	now := r.cfg.Now()
	pos, _ := r.positionAt(c, &l.durable, now)
	l.durable.pos = pos
	rec := r.recordLocked(l, false, pos, now)
	if len(l.specs) == 0 {
		rec.Expiry = 0 // nothing to resume: ended
	}
	r.unsaved[l.ID] = rec
}

// takenOver ends what this node keeps of session id, which a reconnect
// resumed on another node: a parked session is dropped, a live connection
// is closed (session_taken_over) without parking.
func (r *Registry) takenOver(id string) {
	r.mu.Lock()
	pk := r.parked[id]
	if pk != nil {
		delete(r.parked, id)
	}
	o := r.owner[id]
	if o != nil {
		delete(r.owner, id)
		delete(r.byConn, o)
	}
	delete(r.unsaved, id)
	r.mu.Unlock()
	if pk != nil {
		r.h.Closed(pk.conn)
	}
	if o != nil {
		r.h.Close(o, takenOverClose)
	}
	r.mu.Lock()
	sources := r.sources
	r.mu.Unlock()
	for _, src := range sources {
		if src.TakenOver(id) {
			break
		}
	}
	r.stats.takenOver.Add(1)
}

// Source is the sessions of another transport that the registry saves to
// Config.Store with its own, in the same batches and with the same
// rules, and whose takeovers by other nodes it passes on (the MQTT
// listener's persistent sessions, decisions.md OQ-75). Their IDs must not
// be ones the registry uses (Identity): prefix them.
type Source interface {
	// LiveRecords returns, for the batch being written at now, the records
	// of its live sessions that changed since they were last returned or
	// are due for a refresh (SaveTiming); it runs on the saving goroutine
	// and must not block. Parked and ended sessions go through SaveLater.
	LiveRecords(now time.Time) []sessionkv.Record
	// TakenOver ends what this node keeps of session id, which a
	// connection resumed on another node (Store.TakeOver), and reports
	// whether id was one of its sessions. It runs on the Store's listening
	// goroutine and must return quickly.
	TakenOver(id string) bool
}

// AddSource adds src to the sessions saved and taken over with the
// registry's (Source), from the next batch on; a no-op without a Store.
func (r *Registry) AddSource(src Source) {
	if r.cfg.Store == nil {
		return
	}
	r.mu.Lock()
	r.sources = append(r.sources, src)
	r.mu.Unlock()
}

// SaveLater queues rec, the record of a Source's session that was parked
// or ended (Expiry 0), for the next batch, replacing one of its ID queued
// before; a no-op without a Store.
func (r *Registry) SaveLater(rec sessionkv.Record) {
	if r.cfg.Store == nil {
		return
	}
	r.mu.Lock()
	r.unsaved[rec.ID] = rec
	r.mu.Unlock()
}

// SaveTiming returns the rules a Source's records follow: this node's ID
// (Config.Node), how far behind its save a position is put
// (Config.PositionLag, DefaultPositionLag) and how often an unchanged
// live session is written again (Config.Refresh; 0: a third of its
// expiry).
func (r *Registry) SaveTiming() (node string, lag, refresh time.Duration) {
	return r.cfg.Node, r.cfg.PositionLag, r.cfg.Refresh
}

// Fetch looks session id up in the Store for a reconnect that found
// nothing kept on this node (Attach gave no Parked): nil when the Store has
// no such session or it expired. A session that another node holds is
// taken over from it (Store.TakeOver: it closes the connection or drops
// the parked session there). When the Store cannot be reached, the result
// has no subscriptions and Reason ReasonUnavailable.
func (r *Registry) Fetch(ctx context.Context, id string) *Stored {
	if r.cfg.Store == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, ok, err := r.cfg.Store.Load(ctx, id)
	if err != nil {
		r.cfg.Logger.Warn("resumable session not read from the store", zap.Error(err))
		return &Stored{ID: id, Reason: ReasonUnavailable}
	}
	if !ok || !r.cfg.Now().Before(rec.Expires()) {
		return nil
	}
	if rec.Node != r.cfg.Node {
		if err := r.cfg.Store.TakeOver(rec.Node, id); err != nil {
			r.cfg.Logger.Warn("session take-over not sent", zap.String("node", rec.Node), zap.Error(err))
		}
	}
	st := &Stored{ID: id, Position: rec.Position}
	for _, s := range rec.Specs {
		st.Specs = append(st.Specs, Spec{Pattern: s.Pattern, Key: s.Key, Wildcard: s.Wildcard, Filters: s.Filters,
			QoS: s.QoS, LoadBalance: s.LoadBalance, Group: s.Group, Durable: s.Durable})
	}
	return st
}

// Durable reports whether the registry keeps its sessions in a Store
// (Config.Store): without one, Fetch and Claim have nothing to ask.
func (r *Registry) Durable() bool { return r.cfg.Store != nil }

// Unclaimed stops the saves of c's session: its record in the Store could
// not be read (Fetch said ReasonUnavailable), so another node may hold it,
// and a record written from here (an ended session when c closes without
// subscriptions) would replace that node's. c is resumable on this node as
// before; a later reconnect that reads the Store resumes from the other
// node's record.
func (r *Registry) Unclaimed(c *hub.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.byConn[c]; l != nil {
		l.durable.off = true
	}
}

// Claim tells whether a fresh connect (no reconnect:true) may make session
// id its own, by the Store: false when another node's live connection
// holds it and its record is not past its expiry (as on one node, the
// first live connection keeps the session, decisions.md OQ-51); a session
// another node keeps for a dropped connection is dropped there
// (Store.TakeOver), since a fresh connect starts afresh. True without a
// Store, for a session of this node or none, and when the Store cannot be
// read in time.
func (r *Registry) Claim(ctx context.Context, id string) bool {
	if r.cfg.Store == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rec, ok, err := r.cfg.Store.Load(ctx, id)
	if err != nil || !ok || rec.Node == r.cfg.Node || !r.cfg.Now().Before(rec.Expires()) {
		return true
	}
	if rec.Live {
		return false
	}
	if err := r.cfg.Store.TakeOver(rec.Node, id); err != nil {
		r.cfg.Logger.Warn("dropping a kept session on another node failed", zap.String("node", rec.Node), zap.Error(err))
	}
	return true
}

// Pin keeps the position of c's session at pos until its client has acked
// everything it is sent from now on (a replay's messages are kept by the
// tap with the time they were replayed, not accepted). Call it before a
// replay.
func (r *Registry) Pin(c *hub.Conn, pos time.Time) {
	if pos.IsZero() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.byConn[c]; l != nil {
		d := &l.durable
		if d.pos.IsZero() || pos.Before(d.pos) {
			d.pos = pos
		}
		d.pinned, d.savedAt = true, time.Time{}
	}
}
