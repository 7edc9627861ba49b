package listener

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/sessionkv"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Persistent sessions in the node's session store (STORE_BACKEND=jetstream,
// decisions.md OQ-75).
//
// With a store (node.Node.Sessions is durable), every persistent session
// also has a record there, which every node of the cluster and this one
// after a restart can read: its ID is storePrefix + its identity (actor
// and client identifier, clients.go), so it never meets a WebSocket
// session's (resume.Identity). The records are written by the resume
// registry's saver, in its batches (the Listener is a resume.Source): a
// live session when its subscriptions changed, its window moved (a
// delivery, an acknowledgement) or its record is due for a refresh; a
// parked one once, when its connection goes (Park, resume.Registry.SaveLater,
// which the node's Shutdown writes too). Its position is a time: every
// QoS ≥ 1 message accepted before it was delivered and acknowledged; it is
// put PositionLag (2 s) behind the save, and before the oldest delivery
// its window holds unacknowledged.
//
// A Clean Session 0 CONNECT that finds no session on this node reads the
// record (resumeStored): a session found and not expired is resumed
// (session present 1), its node told to let it go (resume.Registry.Fetch:
// a live connection there is closed, the client-identifier takeover of
// [MQTT-3.1.4-2] across nodes, or its kept session dropped), and what was
// published on its QoS ≥ 1 subscriptions since the position is read from
// the history and sent, through the window, before the live deliveries
// (held meanwhile; those replayed, by msgId, dropped). A record that
// cannot be read starts a new session, and nothing is written over it. A
// Clean Session 1 CONNECT ends the record [MQTT-3.1.2-6].

// storePrefix begins the store ID of every MQTT persistent session.
const storePrefix = "mqtt\x00"

// restoreWait bounds a CONNECT's read of the store and the history (each
// read is bounded by 5 s in pkg/resume).
const restoreWait = 15 * time.Second

// saved is what a persistent session's saves to the store keep. Guarded
// by its mutex: the reader, the worker and the saver use it.
type saved struct {
	mu      sync.Mutex
	specs   []hub.SubSpec // its subscriptions, oldest first
	changed bool          // written at the next batch
	savedAt time.Time     // its last write (zero: never)
	mark    uint64        // its window's change count then
	// floor, while a session read from the store is being replayed, is
	// its stored position: no save puts it later before the replay is in
	// its window (whose entries then hold it back).
	floor time.Time
	// off: nothing is written for it, since its record could not be read
	// (another node may hold it) or another node took it over.
	off bool
}

// setSpecs records the subscriptions of a session (newest first, as the
// hub lists them) for its next save.
func (s *saved) setSpecs(specs []hub.SubSpec) {
	out := make([]hub.SubSpec, len(specs))
	for i, sp := range specs {
		sp.Reply, sp.TooMany, sp.NoRetained = nil, nil, false
		out[len(specs)-1-i] = sp
	}
	s.mu.Lock()
	s.specs, s.changed = out, true
	s.mu.Unlock()
}

// touch makes the session written at the next batch.
func (s *saved) touch() {
	s.mu.Lock()
	s.changed = true
	s.mu.Unlock()
}

// stop makes nothing written for the session any more; it reports whether
// it was written before.
func (s *saved) stop() (was bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	was = !s.off
	s.off = true
	return was
}

// noteSpecs records c's subscriptions for the store, on c's worker, when
// st is a persistent session and there is a store.
func (l *Listener) noteSpecs(st *conn, c *hub.Conn) {
	if ps := st.persistent(); ps != nil && l.store != nil {
		ps.saves.setSpecs(c.SubSpecs())
	}
}

// position is the position of a session at now whose window is f (nil
// for none): now less the lag, or earlier, before its oldest delivery not
// acknowledged, and no later than floor when it is not zero.
func position(f *inflight, floor, now time.Time, lag time.Duration) (time.Time, uint64) {
	pos := now.Add(-lag)
	if !floor.IsZero() && floor.Before(pos) {
		pos = floor
	}
	if f == nil {
		return pos, 0
	}
	oldest, changes := f.oldest()
	if oldest != 0 {
		if t := time.Unix(0, oldest).Add(-lag); t.Before(pos) {
			pos = t
		}
	}
	return pos, changes
}

// record is the store record of a session.
func (l *Listener) record(ps *persist, specs []hub.SubSpec, live bool, pos, now time.Time) sessionkv.Record {
	node, _, _ := l.store.SaveTiming()
	rec := sessionkv.Record{ID: ps.id, Node: node, Live: live, Position: pos, Saved: now, Expiry: ps.expiry,
		Specs: make([]sessionkv.Spec, len(specs))}
	for i, s := range specs {
		rec.Specs[i] = sessionkv.Spec{Pattern: s.Pattern, Key: s.Key, Wildcard: s.Wildcard, Filters: s.Filters,
			QoS: s.QoS, LoadBalance: s.LoadBalance, Group: s.Group, Durable: s.Durable}
	}
	return rec
}

// LiveRecords implements resume.Source: the records of this node's
// connected persistent sessions that changed since their last save, or
// were not written for the refresh (resume.Registry.SaveTiming; 0: a
// third of their expiry).
func (l *Listener) LiveRecords(now time.Time) []sessionkv.Record {
	_, lag, refresh := l.store.SaveTiming()
	l.clients.mu.Lock()
	type live struct {
		st *conn
		ps *persist
	}
	var lives []live
	l.clients.m.each(func(st *conn) {
		if ps := st.heldSession(); ps != nil {
			lives = append(lives, live{st, ps})
		}
	})
	l.clients.mu.Unlock()
	var recs []sessionkv.Record
	for _, h := range lives {
		ps, f := h.ps, h.st.window.Load()
		var changes uint64
		if f != nil {
			changes = f.changeCount()
		}
		s := &ps.saves
		s.mu.Lock()
		every := refresh
		if every <= 0 {
			every = ps.expiry / 3
		}
		skip := s.off || !s.changed && (s.savedAt.IsZero() || changes == s.mark && now.Sub(s.savedAt) < every)
		floor := s.floor
		s.mu.Unlock()
		if skip { // an idle session costs no write, nor a look at its window
			continue
		}
		pos, changes := position(f, floor, now, lag)
		s.mu.Lock()
		if !s.off {
			s.changed, s.savedAt, s.mark = false, now, changes
			recs = append(recs, l.record(ps, s.specs, true, pos, now))
		}
		s.mu.Unlock()
	}
	return recs
}

// saveParked queues the record of st's session, parked with specs (newest
// first) and window f at now, for the next batch.
func (l *Listener) saveParked(ps *persist, specs []hub.SubSpec, f *inflight) {
	if l.store == nil {
		return
	}
	ps.saves.mu.Lock()
	off, floor := ps.saves.off, ps.saves.floor
	ps.saves.off = true // its live record is no longer written
	ps.saves.mu.Unlock()
	if off {
		return
	}
	now := time.Now()
	_, lag, _ := l.store.SaveTiming()
	pos, _ := position(f, floor, now, lag)
	oldestFirst := make([]hub.SubSpec, len(specs))
	for i, s := range specs {
		oldestFirst[len(specs)-1-i] = s
	}
	l.store.SaveLater(l.record(ps, oldestFirst, false, pos, now))
}

// endStored ends the stored session of the identity key (a Clean Session
// 1 CONNECT, [MQTT-3.1.2-6]): a record with no expiry, in the next batch.
func (l *Listener) endStored(key string) {
	if l.store == nil {
		return
	}
	node, _, _ := l.store.SaveTiming()
	l.store.SaveLater(sessionkv.Record{ID: storePrefix + key, Node: node, Saved: time.Now()})
}

// TakenOver implements resume.Source: the persistent session of store ID
// id was resumed on another node, so what this node has of it ends: a
// kept session is dropped, a live connection closed (session_taken_over,
// [MQTT-3.1.4-2]) without its session kept.
func (l *Listener) TakenOver(id string) bool {
	key, ok := strings.CutPrefix(id, storePrefix)
	if !ok {
		return false
	}
	cs := &l.clients
	cs.mu.Lock()
	k := cs.kept[key]
	delete(cs.kept, key)
	var st *conn
	var ps *persist
	if st = cs.m.get(key); st != nil {
		ps = st.heldSession()
	}
	cs.mu.Unlock()
	if k != nil && k.pc != nil {
		l.hub.Close(k.pc, disconnect.New(disconnect.SessionTakenOver))
	}
	if ps != nil {
		ps.saves.stop()
		ps.gone.Store(true)
		l.takeovers.Add(1)
		l.hub.Close(st.Conn, disconnect.New(disconnect.SessionTakenOver))
	}
	return true
}

// resumeStored answers the Clean Session 0 CONNECT of st, which found no
// session on this node, from the store: CONNACK with session present 1
// and the session restored when its record is there and not expired,
// else a new session (session present 0); when the store cannot be read
// (5 s), a new session whose record is never written, so that what
// another node may keep is not overwritten. It blocks the connection's
// reader for the reads.
func (l *Listener) resumeStored(st *conn) {
	ps := st.persistent()
	ctx, cancel := context.WithTimeout(l.node.Context(), restoreWait)
	defer cancel()
	rs := l.store.Fetch(ctx, ps.id)
	switch {
	case rs == nil:
		ps.saves.touch()
		st.write(packet.AppendConnack(nil, false, packet.Accepted))
	case rs.Reason != "":
		ps.saves.stop()
		l.log.Warn("persistent session not read from the store: a new one is started, and not saved",
			zap.String("reason", rs.Reason))
		st.write(packet.AppendConnack(nil, false, packet.Accepted))
	default:
		st.write(packet.AppendConnack(nil, true, packet.Accepted))
		l.restoreStored(ctx, st, rs)
	}
}

// replayed is one message of a stored session's replay.
type replayed struct {
	head, tail []byte
	qos        uint8
	at         int64 // unix ns of its publish
	msgID      string
	pattern    string // the subscription it is sent for
}

// restoreStored gives st the session rs read from the store: its
// deliveries held (hub.Conn.HoldDeliveries), rs's subscriptions installed
// (no retained messages), then, once they are in place, what the history
// has of its QoS ≥ 1 subscriptions since its position
// (resume.Registry.ReadStored), sent through its window as new PUBLISHes
// at the subscription's QoS capped at 1 (the history does not keep a
// publish's QoS), oldest first, then the held live deliveries but those
// replayed (same msgId). Runs on st's reader and blocks for the reads.
func (l *Listener) restoreStored(ctx context.Context, st *conn, rs *resume.Stored) {
	h := l.hub
	ps := st.persistent()
	ps.saves.mu.Lock()
	ps.saves.floor = rs.Position
	ps.saves.mu.Unlock()
	for _, s := range rs.Specs {
		if s.QoS > 0 && st.window.Load() == nil {
			w := newInflight(h, l.cfg.MaxInflight, l.cfg.MaxQueuedBytes, h.Config().WriteTimeout)
			w.sent, w.ws = make([]sentMsg, len(w.ids)), st.ws
			st.window.Store(w)
		}
	}
	f := st.window.Load()
	h.Run(st.Conn, func(c *hub.Conn) { c.HoldDeliveries() })
	for i := range rs.Specs {
		s := rs.Specs[i]
		s.NoRetained = true // sent when it first subscribed
		h.Subscribe(st.Conn, &s)
	}
	placed := make(chan struct{})
	h.Run(st.Conn, func(*hub.Conn) { close(placed) })
	var msgs []replayed
	gap := resume.Gap{Reason: resume.ReasonUnavailable}
	enc, _ := st.Encoding().(hub.QoS1Encoding)
	select {
	case <-placed:
		gap = l.store.ReadStored(ctx, rs, func(s *resume.Spec, m *wire.Message, room int) int {
			head, tail := enc.MessageQoS1(m)
			n := len(head) + len(tail)
			if head == nil || f == nil {
				return 0 // a topic MQTT cannot carry
			}
			if n > room {
				return -1
			}
			msgs = append(msgs, replayed{head: head, tail: tail, qos: min(s.QoS, 1), at: m.Timestamp * int64(time.Millisecond),
				msgID: m.MsgID, pattern: s.Pattern})
			return n
		})
	case <-ctx.Done():
	}
	if gap.Reason != "" {
		l.log.Warn("persistent session resumed from the store without all it missed",
			zap.String("reason", gap.Reason), zap.Int("lost", gap.Lost))
	}
	h.Run(st.Conn, func(c *hub.Conn) {
		seen := make(map[string]struct{}, len(msgs))
		if f != nil {
			f.mu.Lock()
			for _, m := range msgs {
				if !c.Subscribed(m.pattern) {
					continue
				}
				f.keepLocked(m.head, m.tail, m.qos, m.at)
				if m.msgID != "" {
					seen[m.msgID] = struct{}{}
				}
			}
			f.progress = time.Now().UnixNano() // the write deadline starts now
			f.drainLocked(c)
			f.mu.Unlock()
		}
		c.ReleaseDeliveries(func(p *hub.Publication) bool {
			_, dup := seen[p.Msg.MsgID]
			return dup && p.Msg.MsgID != ""
		})
		ps.saves.mu.Lock()
		ps.saves.floor = time.Time{} // the replay's entries in the window hold the position back now
		ps.saves.mu.Unlock()
		ps.saves.setSpecs(c.SubSpecs())
	})
}
