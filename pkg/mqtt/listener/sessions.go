package listener

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
)

// Persistent sessions (Clean Session 0, MQTT 3.1.1 §3.1.2.4, §4.1).
//
// A session is its client identity (clients.go: actor and client
// identifier), its subscriptions and its in-flight window (inflight.go:
// the PUBLISHes sent and not acknowledged, kept with their Packet
// Identifiers, and those waiting behind them). While its connection is
// open the window is the connection's. When a Clean Session 0 connection
// ends, the hub hands its subscriptions to Park on its worker (hub.Parker);
// the session is then kept: a parked hub connection on an offline
// transport, Adopted on that worker with the QoS 1 and 2 subscriptions, so
// no publication falls between, collects what they receive into the same
// window's queue (bounded by MaxQueuedBytes and SessionMaxMessages; past
// them the newest are dropped), QoS 0 deliveries are dropped (§4.1 lets
// the server keep them or not), and it expires through the hub's own idle
// sweep: the parked connection is touched into the future so it goes idle
// at the session's expiry (no timer or goroutine per session).
//
// A Clean Session 0 CONNECT of the same identity takes the session: CONNACK
// with session present 1, its subscriptions installed again (no retained
// messages: they were sent when it subscribed), the parked connection
// ended once they are in place (a message delivered to both in between
// may come twice, which QoS 1 allows), then, on the new connection's
// worker, every unacknowledged PUBLISH sent again with DUP=1 and its
// original Packet Identifier, a PUBREL for each QoS 2 one already
// received [MQTT-4.4.0-1], then what waited, in order, and only then the
// live deliveries that arrived meanwhile. A CONNECT that takes over a live
// Clean Session 0 connection (clients.go) waits for its session: its
// CONNACK is a reply the old connection's Park answers. A Clean Session 1
// CONNECT discards the identity's session [MQTT-3.1.2-6].
//
// The sessions are this node's, in memory; without a session store a
// broker restart loses them, and a client that reconnects to another node
// of a cluster starts a new one. With one (STORE_BACKEND=jetstream) they
// are saved there too and resumed from it (stored.go, docs/mqtt.md).

// kept is a session whose connection is gone.
type kept struct {
	enc   hub.Encoding  // of the connection that left it: what its window holds is framed so
	specs []hub.SubSpec // every subscription, newest first
	// received is the inbound QoS 2 identifiers whose PUBREL had not come:
	// a PUBLISH that repeats one after the resume is not published again.
	received map[uint16]struct{}
	f        *inflight // its window and what waits; nil when it never subscribed at QoS ≥ 1
	pc       *hub.Conn // the parked connection collecting its deliveries
}

// offline is the transport of a parked session's hub connection: a QoS 1
// or 2 delivery goes into the session's window (hub.Acker), a QoS 0 frame
// is dropped, and the hub's close (the session expired, or the broker
// shuts down) lets go of the session.
type offline struct {
	l  *Listener
	id string
	k  *kept // its window, its encoding and, once Adopted (on its worker), the parked connection
}

func (*offline) Writev(bufs [][]byte) (int, error) {
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	return n, nil // QoS 0 while away: dropped
}

// CloseWrite ends the parked connection the hub closed (expired: idle; or
// a shutdown): the session is forgotten, and the connection let go of by
// its worker (Hub.ClosedLater: this runs under its write lock).
func (o *offline) CloseWrite() error {
	o.l.clients.expire(o.id, o.k.pc)
	if o.k.pc != nil {
		o.l.hub.ClosedLater(o.k.pc)
	}
	return nil
}

func (*offline) Close() error             { return nil }
func (o *offline) Encoding() hub.Encoding { return o.k.enc } // its deliveries are framed as its connection's were

// Deliver implements hub.Acker: kept in the session's window, never
// refused (a parked session is bounded, not closed).
func (o *offline) Deliver(_ *hub.Conn, head, tail []byte, qos uint8) bool {
	f := o.k.f
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.keepLocked(head, tail, qos, time.Now().UnixNano())
}

// keepLocked queues a delivery of a session whose connection is gone or
// not resumed yet, dropping it past the session's bounds (the oldest are
// kept); at is when it was delivered (unix ns; a replay's: when it was
// published). f.mu held.
func (f *inflight) keepLocked(head, tail []byte, qos uint8, at int64) bool {
	n := len(head) + len(tail)
	if f.queued+n > f.maxQueued || f.maxN > 0 && len(f.queue)-f.head >= f.maxN {
		if f.drops != nil {
			f.drops.Add(1)
		}
		return true
	}
	f.queue = append(f.queue, queued{head: head, tail: tail, qos: qos, at: at})
	f.queued += n
	f.changes++
	return true
}

// Park implements hub.Parker, on c's worker: the subscriptions of a Clean
// Session 0 connection that ended are kept (sessions.go), or handed to the
// connection that took it over and waits for them.
func (st *conn) Park(c *hub.Conn, specs []hub.SubSpec) {
	ps := st.persistent()
	if ps == nil {
		return
	}
	l := ps.l
	k := &kept{specs: specs, f: st.window.Load(), received: st.x.received}
	l.clients.mu.Lock()
	l.clients.m.remove(st)
	if ps.gone.Load() { // taken over by a connection on another node (stored.go)
		l.clients.mu.Unlock()
		return
	}
	if w := l.clients.waiting[st.clientKey]; w != nil && w != st {
		delete(l.clients.waiting, st.clientKey)
		l.clients.mu.Unlock()
		l.restore(w, k, true) // taken over by a Clean Session 0 CONNECT
		return
	}
	if taken := l.clients.m.get(st.clientKey) != nil; taken || len(l.clients.kept) >= l.cfg.MaxSessions {
		// taken over by a Clean Session 1 CONNECT, which discards it; or
		// too many sessions kept (its record in the store stays)
		l.clients.mu.Unlock()
		if !taken {
			l.saveParked(ps, specs, k.f)
			l.log.Warn("persistent session not kept: MaxSessions sessions are kept already",
				zap.Int("max_sessions", l.cfg.MaxSessions))
		}
		return
	}
	if k.f == nil {
		k.f = newInflight(l.hub, l.cfg.MaxInflight, l.cfg.SessionMaxBytes, 0)
		k.f.sent, k.f.ws = make([]sentMsg, len(k.f.ids)), st.ws
	}
	k.f.mu.Lock()
	k.f.parked, k.f.maxN, k.f.drops = true, l.cfg.SessionMaxMessages, &l.sessionDrops
	k.f.maxQueued = l.cfg.SessionMaxBytes
	k.f.mu.Unlock()
	k.enc = st.Encoding()
	t := &offline{l: l, id: st.clientKey, k: k}
	var collect []hub.SubSpec
	for _, s := range specs {
		if s.QoS > 0 {
			s.NoRetained = true
			collect = append(collect, s)
		}
	}
	k.pc = c.Adopt(t, collect)
	// Idle once the expiry has passed (its own idle timeout, whatever
	// IDLE_TIMEOUT_SECONDS says): the hub's sweep then closes it
	// (offline.CloseWrite).
	k.pc.SetIdleTimeout(ps.expiry)
	prev := l.clients.kept[st.clientKey] // a waiting CONNECT's own, parked when it dropped first
	l.clients.kept[st.clientKey] = k
	l.clients.mu.Unlock()
	l.saveParked(ps, specs, k.f)
	if prev != nil && prev.pc != nil {
		l.hub.Close(prev.pc, disconnect.New(disconnect.SessionTakenOver))
	}
}

// expire forgets the session kept for id when pc is still its parked
// connection.
func (cs *clients) expire(id string, pc *hub.Conn) {
	cs.mu.Lock()
	if k := cs.kept[id]; k != nil && k.pc == pc {
		delete(cs.kept, id)
	}
	cs.mu.Unlock()
}

// sessionExpiry is how long st's session is kept: the token's own session
// expiry when its backend gave one, else Config.SessionExpiry.
func (l *Listener) sessionExpiry(c *hub.Conn) time.Duration {
	if s := c.Session(); s != nil {
		if g, ok := s.Grant.(*auth.Grant); ok && g.SessionExpiry > 0 {
			return g.SessionExpiry
		}
	}
	return l.cfg.SessionExpiry
}

// openSession decides, for an accepted CONNECT of st with client
// identifier id, which session it gets (clients.go, sessions.go) and
// writes or reserves its CONNACK: a Clean Session 1 one discards what is
// kept for the identity, here and in the store; a Clean Session 0 one
// takes the session kept (session present 1), or waits for the one of the
// live connection it takes over, or resumes the one in the store
// (stored.go), or starts a new one.
func (l *Listener) openSession(st *conn, clean bool, id string) {
	st.clientKey = clientKey(st.Conn, id)
	if clean {
		l.endStored(st.clientKey)
	} else {
		st.more().ps = &persist{l: l, expiry: l.sessionExpiry(st.Conn), id: storePrefix + st.clientKey}
		st.durable = true // before st enters cs.m (conn.heldSession)
	}
	cs := &l.clients
	cs.mu.Lock()
	if cs.kept == nil {
		cs.kept, cs.waiting = make(map[string]*kept), make(map[string]*conn)
	}
	old := cs.m.put(st)
	k := cs.kept[st.clientKey]
	delete(cs.kept, st.clientKey)
	if k != nil && !clean && k.enc.ID() != st.Encoding().ID() {
		// Kept by the other MQTT transport (plain or over WebSocket): what
		// it holds is framed for that one; the session starts anew.
		clean = true
	}
	// A live session is taken over by a connection of its transport only
	// (its window's frames are that transport's); across transports the
	// old one ends and is discarded (Park: the identity is taken). old's
	// encoding is fixed (conn.ws is set before it is handed over, and
	// it was registered here after its CONNECT).
	wait := !clean && old != nil && old.heldSession() != nil && old.Encoding().ID() == st.Encoding().ID()
	if wait {
		st.x.ps.connack = st.Conn.ExpectReply()
		cs.waiting[st.clientKey] = st
	}
	cs.mu.Unlock()
	if old != nil {
		l.takeovers.Add(1)
		l.hub.Close(old.Conn, disconnect.New(disconnect.SessionTakenOver))
	}
	switch {
	case wait: // the CONNACK is answered by old's Park
	case !clean && k == nil && l.store != nil:
		l.resumeStored(st)
	case clean || k == nil:
		if k != nil && k.pc != nil { // Clean Session 1: the kept session ends [MQTT-3.1.2-6]
			l.hub.Close(k.pc, disconnect.New(disconnect.SessionTakenOver))
		}
		if ps := st.persistent(); ps != nil {
			ps.saves.touch()
		}
		st.write(packet.AppendConnack(nil, false, packet.Accepted))
	default:
		st.write(packet.AppendConnack(nil, true, packet.Accepted))
		l.restore(st, k, false)
	}
}

// persist is the state of a Clean Session 0 connection's session.
type persist struct {
	l       *Listener
	expiry  time.Duration // how long the session is kept once the connection is gone
	connack hub.Ticket    // the CONNACK reserved while it waits for a takeover's session
	id      string        // its ID in the session store (stored.go)
	saves   saved         // its saves to the store
	gone    atomic.Bool   // another node took the session over: it is not kept when the connection ends
}

// restore gives st the session k: its window (held until the resend), its
// subscriptions again, then on st's worker the end of k's parked
// connection and the resend (inflight.resume). With answer (a CONNACK that
// waited for a takeover), the CONNACK with session present 1 is answered
// on st's worker once the subscriptions are in place, and what they
// deliver meanwhile is held back until it is written: no PUBLISH comes
// before the CONNACK [MQTT-3.2.0-1], and a message published after the
// client has its CONNACK reaches it. Runs on st's reader, or on the worker
// of the connection st took over.
func (l *Listener) restore(st *conn, k *kept, answer bool) {
	h := l.hub
	if answer {
		h.Run(st.Conn, func(c *hub.Conn) { c.HoldDeliveries() })
	}
	if !answer && k.received != nil { // on st's reader (a CONNECT that waited is on another's worker: not kept)
		st.more().received = k.received
	}
	f := k.f
	if f != nil {
		f.mu.Lock()
		f.parked, f.holding = false, true
		f.maxQueued, f.maxN = l.cfg.MaxQueuedBytes, 0
		f.deadline = int64(h.Config().WriteTimeout)
		if f.sent == nil {
			f.sent = make([]sentMsg, len(f.ids))
		}
		f.mu.Unlock()
		st.window.Store(f)
	}
	for i := len(k.specs) - 1; i >= 0; i-- { // oldest first
		s := k.specs[i]
		s.NoRetained, s.Reply, s.TooMany = true, nil, nil
		h.Subscribe(st.Conn, &s)
	}
	if ps := st.persistent(); ps != nil && l.store != nil {
		ps.saves.setSpecs(k.specs) // its record names this connection's node, live
	}
	if answer {
		t := st.x.ps.connack
		connack := st.framed(packet.AppendConnack(nil, true, packet.Accepted))
		h.Run(st.Conn, func(c *hub.Conn) {
			c.Answer(t, connack)
			c.ReleaseDeliveries(nil)
		})
	}
	h.Run(st.Conn, func(c *hub.Conn) { // its subscriptions are in place
		if k.pc == nil {
			if f != nil {
				f.resume(c)
			}
			return
		}
		h.Run(k.pc, func(pc *hub.Conn) {
			h.Closed(pc) // no more deliveries into f from it
			if f != nil {
				h.Run(c, f.resume)
			}
		})
	})
}

// resume ends the hold of a resumed session's window, on its new
// connection's worker: every unacknowledged PUBLISH again, oldest first,
// with DUP=1 and its Packet Identifier, a PUBREL for each QoS 2 one whose
// PUBREC came [MQTT-4.4.0-1], then what waits, as the window takes it.
func (f *inflight) resume(c *hub.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.holding = false
	order := make([]int, 0, f.n)
	for i, id := range f.ids {
		if id != 0 {
			order = append(order, i)
		}
	}
	for a := 1; a < len(order); a++ { // by send order; the window is small
		for b := a; b > 0 && f.sent[order[b]].seq < f.sent[order[b-1]].seq; b-- {
			order[b], order[b-1] = order[b-1], order[b]
		}
	}
	for _, i := range order {
		id := f.buf[2*i : 2*i+2 : 2*i+2]
		if f.state[i] == slotPubcomp {
			c.WriteFrame(frame(f.ws, packet.AppendPubrel(nil, f.ids[i])))
			continue
		}
		m := f.sent[i]
		c.WriteParts(f.withFlags(m.head, 0x08, 0x08), id, m.tail) // DUP [MQTT-3.3.1-1]
	}
	f.drainLocked(c)
}
