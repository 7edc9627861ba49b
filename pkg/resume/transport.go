package resume

import (
	"sync"
	"sync/atomic"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// encodingID is the frame cache id of the parked encoding.
const encodingID = 250

// encoding builds, once per publication and display topic on each worker,
// the frame a parked session keeps: a one-byte msgId length, the msgId, a
// two-byte display topic length, the display topic, then the MessagePack
// payload of the message with isReplay:true.
type encoding struct{}

var enc encoding

func (encoding) ID() uint8 { return encodingID }

func (encoding) Message(m *wire.Message) []byte {
	r := *m
	r.IsReplay = true
	id := r.MsgID
	b := keptHeader(make([]byte, 0, 3+len(id)+64+2*len(r.Topic)+len(r.Data)), id, r.Topic)
	return wire.AppendMessage(b, &r)
}

// keptHeader appends the head of a kept frame (see encoding) to b: the
// msgId, at most 255 bytes, and the display topic, at most 65,535.
func keptHeader(b []byte, id, topic string) []byte {
	if len(id) > 255 {
		id = id[:255]
	}
	if len(topic) > 0xffff {
		topic = topic[:0xffff]
	}
	b = append(b, byte(len(id)))
	b = append(b, id...)
	b = append(b, byte(len(topic)>>8), byte(len(topic)))
	return append(b, topic...)
}

func (encoding) Close(disconnect.Disconnect) []byte { return nil }
func (encoding) HandshakeTimeout() []byte           { return nil }

// transport is a parked session's stream: it keeps the frames written to
// it, sharing them (the hub never modifies a frame), up to max bytes.
type transport struct {
	h  *hub.Hub
	id string                   // the session's identity
	c  atomic.Pointer[hub.Conn] // set once registered

	mu       sync.Mutex
	max      int // bytes
	maxN     int // messages, 0 for no bound
	bytes    int
	frames   [][]byte
	overflow bool      // past max or maxN: nothing more is kept
	over     int       // the messages not kept for it
	lost     bool      // unacked deliveries from before the drop were lost to the tap's bounds
	dropped  bool      // the session ended: nothing to replay
	lb       []unacked // unacked load-balanced deliveries, oldest first
	stats    *counters // the registry's
}

// unacked is a message a load-balanced member was sent and did not ack
// before its connection dropped: replayed to it if it resumes, else handed
// back to its group when the session ends (wire-reference.md §6.6).
type unacked struct {
	p          *hub.Publication
	group, key string
}

// IsParked reports whether c is a parked session's hub connection.
func IsParked(c *hub.Conn) bool {
	_, ok := c.Transport().(*transport)
	return ok
}

func (t *transport) Writev(bufs [][]byte) (int, error) {
	n := 0
	t.mu.Lock()
	for _, b := range bufs {
		n += len(b)
		if t.overflow || t.bytes+len(b) > t.max || t.maxN > 0 && len(t.frames) >= t.maxN {
			t.overflow = true // the oldest are kept, with no gap
			t.over++
			continue
		}
		t.bytes += len(b)
		t.frames = append(t.frames, b)
	}
	t.mu.Unlock()
	return n, nil
}

// CloseWrite ends the parked connection the hub closed (its session
// expired: idle; or a shutdown): no peer will close its side, so it is let
// go of at once, by its worker (Hub.ClosedLater: Hub.Closed would take
// the write lock the hub holds while it calls this).
func (t *transport) CloseWrite() error {
	if c := t.c.Load(); c != nil {
		t.h.ClosedLater(c)
	}
	return nil
}

func (t *transport) Close() error           { return nil }
func (t *transport) Encoding() hub.Encoding { return enc }

// Missed is one message a parked session kept.
type Missed struct {
	MsgID   string
	Topic   string // the display topic of the subscription it was kept for
	Payload []byte // MessagePack of the message, isReplay:true
}

// drop lets go of what t kept: its session ended (expired, dropped or
// shut down); a replay still to take it is told so.
func (t *transport) drop() {
	t.mu.Lock()
	lb := t.lb
	t.frames, t.bytes, t.dropped, t.lb = nil, 0, true, nil
	t.mu.Unlock()
	t.giveBack(lb)
}

// giveBack hands each unacked load-balanced message back to its group on
// this node, oldest first, with isReplay:true (it may have been handled
// already by the member that did not ack it): the group's worker delivers
// it to the next member that accepts it, or to none when the group has no
// member here any more (counted as lost).
func (t *transport) giveBack(lb []unacked) {
	stats := t.stats
	for _, g := range lb {
		p := &hub.Publication{Key: g.p.Key, Topic: g.p.Topic, Filter: g.p.Filter, Msg: g.p.Msg, Echo: true}
		p.Msg.IsReplay = true
		p.Msg.SourceTopic = ""
		t.h.Redeliver(p, g.group, g.key, func(delivered bool) {
			if stats == nil {
				return
			}
			if delivered {
				stats.givenBack.Add(1)
			} else {
				stats.lost.Add(1)
			}
		})
	}
}

// take returns what t kept and empties it, with the reason the replay is
// not complete ("" when it is).
func (t *transport) take() (missed []Missed, gap Gap) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped {
		return nil, Gap{Reason: ReasonExpired}
	}
	missed = make([]Missed, 0, len(t.frames))
	for _, f := range t.frames {
		n := int(f[0])
		tl := int(f[1+n])<<8 | int(f[2+n])
		missed = append(missed, Missed{MsgID: string(f[1 : 1+n]), Topic: string(f[3+n : 3+n+tl]),
			Payload: f[3+n+tl:]})
	}
	if t.overflow || t.lost {
		gap.Reason = ReasonOverflow
		if !t.lost { // unacked deliveries the tap lost are not counted
			gap.Lost = t.over
		}
	}
	t.frames, t.bytes, t.lb = nil, 0, nil // the load-balanced ones are replayed to their member
	return missed, gap
}

// Gap is what a replay does not cover: the zero Gap for a complete one
// (replayEnd complete:true); else Reason (complete:false) and Lost, the
// messages it held when they could be counted (0: not counted).
type Gap struct {
	Reason string
	Lost   int
}

// Reasons of a replayEnd with complete:false.
const (
	// ReasonExpired: no session is kept for the client: expired, never
	// parked (a first connect), dropped for MaxSessions, or lost in a
	// restart.
	ReasonExpired = "session_expired"
	// ReasonTakenOver: a reconnect took the session over from a connection
	// whose drop was not noticed yet; its subscriptions are restored, what
	// the old connection missed is not known.
	ReasonTakenOver = "session_taken_over"
	// ReasonOverflow: more was missed than MaxBytes or MaxMessages; the
	// oldest were kept.
	ReasonOverflow = "backlog_limit"
)

// Replay moves the parked session pk onto c, a connection that resumed it
// and whose auth reply is queued: c's deliveries are held, pk's
// subscriptions are installed on c, then on pk's worker what pk kept is
// taken and pk ends, and on c's worker write(c, missed, gap) writes the
// replay (the zero Gap when it is complete), after which the held live
// deliveries follow but those replayed. All of it runs on the workers;
// Replay returns at once.
func (r *Registry) Replay(c *hub.Conn, pk *Parked, write func(c *hub.Conn, missed []Missed, gap Gap)) {
	h := r.h
	r.Pin(c, pk.position)
	h.Run(c, func(c *hub.Conn) { c.HoldDeliveries() })
	for i := range pk.Specs {
		s := pk.Specs[i]
		s.NoRetained = true // sent when it first subscribed; a newer one is in the replay
		h.Subscribe(c, &s)
	}
	if pk.conn == nil { // taken over: nothing kept
		h.Run(c, func(c *hub.Conn) {
			write(c, nil, Gap{Reason: pk.reason})
			c.ReleaseDeliveries(nil)
		})
		return
	}
	h.Run(c, func(*hub.Conn) { // c's subscriptions are in place
		h.Run(pk.conn, func(pc *hub.Conn) {
			pc.Flush() // what this batch delivered to pc, into pk.t
			missed, gap := pk.t.take()
			h.Closed(pc)
			h.Run(c, func(c *hub.Conn) { finishReplay(c, missed, gap, write) })
		})
	})
}

// finishReplay, on c's worker, writes the replay of missed to c (those on
// subscriptions c still holds: not what it unsubscribed from since it
// resumed) and releases the live deliveries held meanwhile, without those
// replayed (the same msgId).
func finishReplay(c *hub.Conn, missed []Missed, gap Gap, write func(c *hub.Conn, missed []Missed, gap Gap)) {
	kept := missed[:0]
	for _, m := range missed {
		if c.Subscribed(m.Topic) {
			kept = append(kept, m)
		}
	}
	missed = kept
	write(c, missed, gap)
	seen := make(map[string]struct{}, len(missed))
	for _, m := range missed {
		seen[m.MsgID] = struct{}{}
	}
	c.ReleaseDeliveries(func(p *hub.Publication) bool {
		_, dup := seen[p.Msg.MsgID]
		return dup && p.Msg.MsgID != ""
	})
}

// inFlight starts t's backlog with what c, a resumable connection that
// just closed, was sent on the subscriptions specs and its client did not
// ack (hub.Conn.Tapped): each such message, oldest first, acked out of
// order or not, so delivery is at-least-once. A client that does not ack
// (it read on past hub.Config.TapAckWait without acking) counts as having read
// everything written to it, and keeps nothing. The unacked messages of a
// load-balanced subscription are also remembered to be handed back to its
// group if the session is not resumed.
func (t *transport) inFlight(c *hub.Conn, specs []Spec) {
	d, overflow := c.Tapped()
	if overflow {
		t.lost = true // older unacked deliveries were not kept
	}
	if len(d) == 0 {
		return
	}
	kept := make(map[string]*Spec, len(specs))
	for i := range specs {
		kept[specs[i].Pattern] = &specs[i]
	}
	var frames [][]byte
	for _, e := range d {
		s := kept[e.Topic]
		if s == nil {
			continue
		}
		if e.Msg == nil { // written by a replay, and not acked since
			frames = append(frames, append(keptHeader(nil, e.MsgID, e.Topic), e.Payload...))
			continue
		}
		m := e.Msg.Msg
		m.Topic = e.Topic
		if e.Wild {
			m.SourceTopic = e.Msg.Topic
		}
		frames = append(frames, enc.Message(&m))
		if s.LoadBalance {
			t.lb = append(t.lb, unacked{p: e.Msg, group: s.Group, key: s.Key})
		}
	}
	_, _ = t.Writev(frames)
}
