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
// the frame a parked session keeps: a one-byte msgId length, the msgId,
// then the MessagePack payload of the message with isReplay:true.
type encoding struct{}

var enc encoding

func (encoding) ID() uint8 { return encodingID }

func (encoding) Message(m *wire.Message) []byte {
	r := *m
	r.IsReplay = true
	id := r.MsgID
	if len(id) > 255 {
		id = id[:255]
	}
	b := make([]byte, 0, 1+len(id)+64+len(r.Topic)+len(r.Data))
	b = append(b, byte(len(id)))
	b = append(b, id...)
	return wire.AppendMessage(b, &r)
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
	max      int
	bytes    int
	frames   [][]byte
	overflow bool
	dropped  bool // the session ended: nothing to replay
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
		if t.overflow || t.bytes+len(b) > t.max {
			t.overflow = true // the oldest are kept, with no gap
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
// go of at once, off the write lock the hub holds.
func (t *transport) CloseWrite() error {
	if c := t.c.Load(); c != nil {
		go t.h.Closed(c)
	}
	return nil
}

func (t *transport) Close() error           { return nil }
func (t *transport) Encoding() hub.Encoding { return enc }

// Missed is one message a parked session kept.
type Missed struct {
	MsgID   string
	Payload []byte // MessagePack of the message, isReplay:true
}

// drop lets go of what t kept: its session ended (expired, dropped or
// shut down); a replay still to take it is told so.
func (t *transport) drop() {
	t.mu.Lock()
	t.frames, t.bytes, t.dropped = nil, 0, true
	t.mu.Unlock()
}

// take returns what t kept and empties it, with the reason the replay is
// not complete ("" when it is).
func (t *transport) take() (missed []Missed, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dropped {
		return nil, ReasonExpired
	}
	missed = make([]Missed, 0, len(t.frames))
	for _, f := range t.frames {
		n := int(f[0])
		missed = append(missed, Missed{MsgID: string(f[1 : 1+n]), Payload: f[1+n:]})
	}
	if t.overflow {
		reason = ReasonOverflow
	}
	t.frames, t.bytes = nil, 0
	return missed, reason
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
	// ReasonOverflow: more was missed than MaxBytes; the oldest were kept.
	ReasonOverflow = "backlog_limit"
)

// Replay moves the parked session pk onto c, a connection that resumed it
// and whose auth reply is queued: c's deliveries are held, pk's
// subscriptions are installed on c, then on pk's worker what pk kept is
// taken and pk ends, and on c's worker write(c, missed, reason) writes the
// replay (reason "" when it is complete), after which the held live
// deliveries follow but those replayed. All of it runs on the workers;
// Replay returns at once.
func (r *Registry) Replay(c *hub.Conn, pk *Parked, write func(c *hub.Conn, missed []Missed, reason string)) {
	h := r.h
	h.Run(c, func(c *hub.Conn) { c.HoldDeliveries() })
	for i := range pk.Specs {
		s := pk.Specs[i]
		s.NoRetained = true // sent when it first subscribed; a newer one is in the replay
		h.Subscribe(c, &s)
	}
	if pk.conn == nil { // taken over: nothing kept
		h.Run(c, func(c *hub.Conn) {
			write(c, nil, pk.reason)
			c.ReleaseDeliveries(nil)
		})
		return
	}
	h.Run(c, func(*hub.Conn) { // c's subscriptions are in place
		h.Run(pk.conn, func(pc *hub.Conn) {
			pc.Flush() // what this batch delivered to pc, into pk.t
			missed, reason := pk.t.take()
			h.Closed(pc)
			h.Run(c, func(c *hub.Conn) {
				write(c, missed, reason)
				seen := make(map[string]struct{}, len(missed))
				for _, m := range missed {
					seen[m.MsgID] = struct{}{}
				}
				c.ReleaseDeliveries(func(p *hub.Publication) bool {
					_, dup := seen[p.Msg.MsgID]
					return dup && p.Msg.MsgID != ""
				})
			})
		})
	})
}

// inFlight starts t's backlog with what c, an acking connection that just
// closed, was sent on the subscriptions specs and its client did not ack:
// per subscription, the messages after the newest it acked (the position
// of issue 16). A subscription its client never acked on counts as read up
// to the newest written, and keeps nothing; so does every subscription of
// a connection whose client never acked (it has no tap).
func (t *transport) inFlight(c *hub.Conn, specs []Spec) {
	d, ackedOn, overflow := c.Tapped()
	if len(d) == 0 {
		return
	}
	last := make(map[string]int, len(specs)) // newest acked index per kept subscription, -1 for none in the tap
	for _, s := range specs {
		if ackedOn(s.Pattern) {
			last[s.Pattern] = -1
		}
	}
	for i, e := range d {
		if _, ok := last[e.Topic]; ok && e.Acked {
			last[e.Topic] = i
		}
	}
	var frames [][]byte
	for i, e := range d {
		if l, ok := last[e.Topic]; !ok || i <= l || e.Acked {
			continue
		}
		m := e.Msg.Msg
		m.Topic = e.Topic
		if e.Wild {
			m.SourceTopic = e.Msg.Topic
		}
		frames = append(frames, enc.Message(&m))
	}
	_, _ = t.Writev(frames)
	if overflow && len(frames) > 0 {
		t.mu.Lock()
		t.overflow = true // older unacked deliveries were not kept
		t.mu.Unlock()
	}
}
