package hub

import (
	"sync"
	"time"
)

// TapMax and TapMaxBytes (of their data) bound the deliveries a tap
// keeps: past either the oldest go, and the tap says it overflowed.
// TapMaxBeforeAck bounds them while the client has acked nothing yet: a
// client that acks does so within a round trip, and one that does not ack
// (found out at its next frame, Config.TapAckWait) holds at most this many
// entries meanwhile (wire-reference.md §12: no memory growth for unacked
// messages).
const (
	TapMax          = 1024
	TapMaxBytes     = 1 << 20
	TapMaxBeforeAck = 64
)

// DefaultTapAckWait is how long a tapped connection's client may read on (send
// frames: messages, heartbeats, pings) after a delivery without ever
// acking anything before it counts as a client that does not ack (the
// official Go and Python SDKs, wire-reference.md §12): its tap is let go of
// then, and it keeps nothing while connected (§12: unacked messages must
// not make memory grow).
// Config.TapAckWait sets it.
const DefaultTapAckWait = 10 * time.Second

// tap keeps the recent deliveries to a resumable connection that its
// client has not acked yet, so those lost in flight when its network went
// can be replayed (pkg/resume). Written by the worker per delivery, acked
// from the connection's reader.
type tap struct {
	mu       sync.Mutex
	ents     []tapEntry // oldest first; nil while nothing is kept
	bytes    int        // of the kept deliveries' data
	overflow bool       // some unacked deliveries were dropped for the bounds
	ackSeen  bool       // the client has acked something
	off      bool       // the client does not ack: keep nothing (tapOff)
}

// tapOff marks a connection whose client does not ack: StartTap leaves it.
var tapOff = &tap{off: true}

type tapEntry struct {
	p        *Publication
	r        *replayed // instead of p: a message written by a replay
	display  string
	at       int64 // unix ns of the delivery
	wildcard bool
	acked    bool
}

// replayed is a message a replay wrote (TapReplayed): its msgId and the
// MessagePack payload it was written with (isReplay:true).
type replayed struct {
	id      string
	payload []byte
}

func (e *tapEntry) msgID() string {
	if e.r != nil {
		return e.r.id
	}
	return e.p.Msg.MsgID
}

func (e *tapEntry) size() int {
	if e.r != nil {
		return len(e.r.payload)
	}
	return len(e.p.Msg.Data)
}

// Delivered is one delivery a tap kept: the message as the subscription
// with display topic Topic got it; for one a replay wrote, Msg is nil and
// MsgID and Payload are what the replay wrote.
type Delivered struct {
	Msg     *Publication
	Topic   string
	Wild    bool
	Acked   bool
	MsgID   string
	Payload []byte
}

// nonAckerLocked reports whether the client has read on for wait past the
// oldest kept delivery, lastRead being the unix ns of its last complete
// frame, without acking anything ever.
func (t *tap) nonAckerLocked(lastRead int64, wait time.Duration) bool {
	return !t.ackSeen && len(t.ents) > 0 && lastRead-t.ents[0].at > int64(wait)
}

// tapAckWait is Config.TapAckWait of c's hub.
func (c *Conn) tapAckWait() time.Duration {
	if c.w == nil {
		return DefaultTapAckWait
	}
	return c.w.h.cfg.TapAckWait
}

// tapDelivery keeps a delivery to c at now, or lets go of c's tap when its
// client turns out not to ack. On c's worker.
func (c *Conn) tapDelivery(t *tap, p *Publication, display string, wildcard bool, now int64) {
	t.mu.Lock()
	if t.nonAckerLocked(c.lastRead.Load(), c.tapAckWait()) {
		t.mu.Unlock()
		c.x.Load().tap.Store(tapOff) // t is c's: c has its connExtra
		return
	}
	t.appendLocked(tapEntry{p: p, display: display, at: now, wildcard: wildcard})
	t.mu.Unlock()
}

// appendLocked keeps e, dropping the oldest past the bounds.
func (t *tap) appendLocked(e tapEntry) {
	if t.ents == nil {
		t.ents = make([]tapEntry, 0, 4)
	}
	t.ents = append(t.ents, e)
	t.bytes += e.size()
	max := TapMax
	if !t.ackSeen {
		max = TapMaxBeforeAck
	}
	n := 0
	for len(t.ents)-n > max || t.bytes > TapMaxBytes && len(t.ents)-n > 1 {
		t.bytes -= t.ents[n].size()
		if !t.ents[n].acked {
			t.overflow = true
		}
		n++
	}
	t.dropHead(n)
}

// TapReplayed keeps a message a replay wrote to c (msgId id, for the
// subscription with display topic display, payload as written) like a
// delivery, so that a client that drops during or right after its replay
// gets it again. On c's worker; a no-op without a tap.
func (c *Conn) TapReplayed(id, display string, payload []byte) {
	t := c.tapped()
	if t == nil || t.off {
		return
	}
	t.mu.Lock()
	t.appendLocked(tapEntry{r: &replayed{id: id, payload: payload}, display: display, at: c.w.now()})
	t.mu.Unlock()
}

// StartTap makes c keep its deliveries from now on until they are acked
// (TapAck), unless its client was found not to ack. Call it only from
// Hub.Run.
func (c *Conn) StartTap() {
	c.w.mustOwn("StartTap")
	if x := c.extra(); x.tap.Load() == nil {
		x.tap.Store(&tap{})
	}
}

// TapAck marks the deliveries of msgIDs acked and forgets the acked ones at
// the head. Safe from any goroutine; a no-op without a tap.
func (c *Conn) TapAck(msgIDs ...string) {
	t := c.tapped()
	if t == nil || t.off {
		return
	}
	t.mu.Lock()
	t.ackSeen = true
	for _, id := range msgIDs {
		for i := len(t.ents) - 1; i >= 0; i-- {
			if e := &t.ents[i]; e.msgID() == id {
				e.acked = true
			}
		}
	}
	n := 0
	for n < len(t.ents) && t.ents[n].acked {
		t.bytes -= t.ents[n].size()
		n++
	}
	t.dropHead(n)
	if len(t.ents) == 0 {
		// Caught up: an idle connection keeps no slice, and what the
		// bounds dropped before is behind the newest ack.
		t.ents, t.overflow = nil, false
	}
	t.mu.Unlock()
}

// dropHead forgets the n oldest entries, clearing their slots.
func (t *tap) dropHead(n int) {
	if n == 0 {
		return
	}
	copy(t.ents, t.ents[n:])
	clear(t.ents[len(t.ents)-n:])
	t.ents = t.ents[:len(t.ents)-n]
}

// Tapped returns what c's tap kept and its client did not ack, oldest
// first, and whether the tap lost some unacked ones to the bounds; nil
// without a tap, and for a client that has read on for Config.TapAckWait past
// the oldest of them without ever acking (it does not ack: what was
// written to it counts as read).
func (c *Conn) Tapped() (d []Delivered, overflow bool) {
	t := c.tapped()
	if t == nil || t.off {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nonAckerLocked(c.lastRead.Load(), c.tapAckWait()) {
		return nil, false
	}
	for _, e := range t.ents {
		if e.acked {
			continue
		}
		if e.r != nil {
			d = append(d, Delivered{Topic: e.display, MsgID: e.r.id, Payload: e.r.payload})
		} else {
			d = append(d, Delivered{Msg: e.p, Topic: e.display, Wild: e.wildcard, MsgID: e.p.Msg.MsgID})
		}
	}
	return d, t.overflow
}

// Progress tells a resumable session's keeper (pkg/resume) how far c's
// client got: sent is the bytes c's transport has taken so far, modulo
// 2^32 (it changes whenever anything was written to c); oldest is the
// unix ns at which c's tap got the oldest delivery its client has not
// acked (0 when every one is acked, c has no tap, or its client does not
// ack); stuck is true when the tap lost unacked deliveries to its bounds
// (TapMax, TapMaxBytes), so that nothing after the first of them can be
// taken as read. Safe from any goroutine.
func (c *Conn) Progress() (sent uint32, oldest int64, stuck bool) {
	c.wmu.Lock()
	sent = c.sent
	c.wmu.Unlock()
	t := c.tapped()
	if t == nil || t.off {
		return sent, 0, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nonAckerLocked(c.lastRead.Load(), c.tapAckWait()) {
		return sent, 0, false
	}
	for i := range t.ents {
		if !t.ents[i].acked {
			return sent, t.ents[i].at, t.overflow
		}
	}
	return sent, 0, t.overflow
}
