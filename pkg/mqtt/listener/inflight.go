package listener

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/NoLagApp/kraken/pkg/hub"
)

// The states of an in-flight slot: what its outbound PUBLISH waits for
// (MQTT 3.1.1 §4.3.2, §4.3.3).
const (
	slotFree    uint8 = iota
	slotPuback        // a QoS 1 PUBLISH sent, PUBACK awaited
	slotPubrec        // a QoS 2 PUBLISH sent, PUBREC awaited
	slotPubcomp       // PUBREL sent for a QoS 2 PUBLISH, PUBCOMP awaited
)

// inflight is a connection's window of outbound QoS 1 and QoS 2 PUBLISHes
// not yet acknowledged, and the queue of those waiting for a free slot.
//
// Every outbound acknowledged PUBLISH is sent by the connection's worker:
// the hub calls Deliver there for each one, and it goes out at once (a
// fresh Packet Identifier between the shared head and tail,
// hub.Conn.WriteParts) while the window has room and nothing waits, else
// it waits in the queue. An acknowledgement frees its slot on the reader
// (release); when messages wait, the reader posts one drain to the worker
// (hub.Hub.Run), which sends as many as the window then takes. So a
// connection's PUBLISHes leave in the order the worker delivered them
// [MQTT-4.6.0-6], whoever frees the slots, and nobody waits or spins.
//
// A full window throttles instead of closing: the queue is bounded by
// bytes (maxQueued), and only a client that acknowledges nothing for the
// write deadline while messages wait, or lets the queue pass its bound, is
// a slow consumer (Deliver returns false; the hub closes it). A slot's
// identifier bytes are what the hub queues between head and tail, so a slot
// is reused only once its acknowledgement came, when they have long been
// written. The mutex is held by the worker (Deliver, drain) and the reader
// (release), never across a socket write.
type inflight struct {
	mu        sync.Mutex
	ids       []uint16 // the outstanding identifiers by slot, 0 for a free slot
	state     []uint8  // slotFree, slotPuback, slotPubrec, slotPubcomp by slot
	buf       []byte   // two bytes per slot: the identifier, big-endian
	next      uint16   // the last identifier given
	n         int      // outstanding
	queue     []queued // waiting for a slot, oldest first from head
	head      int      // the first waiting entry of queue
	queued    int      // bytes waiting
	maxQueued int      // bound of queued
	deadline  int64    // ns: no acknowledgement for this long while messages wait is a slow consumer
	progress  int64    // unix ns of the last acknowledgement, or when messages began to wait
	draining  bool     // a drain is posted to the worker and has not run yet
	drainFn   func(*hub.Conn)
	h         *hub.Hub

	// A persistent session's window (sessions.go) keeps what it sent until
	// acknowledged, to send again on a resumed connection [MQTT-4.4.0-1].
	sent    []sentMsg      // by slot, when keep
	seq     uint64         // of the last send
	holding bool           // a resumed session's window: everything waits until resend
	parked  bool           // the session's connection is gone: deliveries are kept, bounded, never refused
	maxN    int            // messages kept while parked (0: no bound)
	drops   *atomic.Uint64 // the listener's count of deliveries a kept session dropped past its bounds
	ws      bool           // the session's packets are in binary WebSocket frames (MQTT over WebSocket)
	// changes counts sends, queued deliveries and freed slots: a
	// persistent session whose count has not moved since its last save is
	// not written again (stored.go).
	changes uint64
}

// withFlags returns a copy of head, a shared PUBLISH head (framed for
// MQTT over WebSocket when f.ws), with the flag bits of its fixed header
// (DUP 0x08, QoS 0x06, RETAIN 0x01) in mask set to set.
func (f *inflight) withFlags(head []byte, mask, set byte) []byte {
	h := append([]byte(nil), head...)
	at := 0
	if f.ws {
		at = payloadAt(h)
	}
	h[at] = h[at]&^mask | set
	return h
}

// sentMsg is what a persistent session's slot sent: the PUBLISH's parts
// (head with the QoS of the delivery) and when, to send it again in order.
type sentMsg struct {
	head, tail []byte
	seq        uint64
	at         int64 // unix ns of its delivery (a replay's: of its publish), for the session's saved position
}

// queued is one delivery waiting for a slot: its shared parts, QoS and
// when it was delivered (unix ns; a replay's: when it was published).
type queued struct {
	head, tail []byte
	qos        uint8
	at         int64
}

func newInflight(h *hub.Hub, window, maxQueued int, deadline time.Duration) *inflight {
	f := &inflight{ids: make([]uint16, window), state: make([]uint8, window), buf: make([]byte, 2*window),
		maxQueued: maxQueued, deadline: int64(deadline), h: h}
	f.drainFn = f.drain
	return f
}

// Deliver implements hub.Acker, on the connection's worker: one
// acknowledged delivery of QoS qos, sent now or queued (inflight). false
// when the queue is over its bound or the client acknowledged nothing for
// the write deadline while messages waited: a slow consumer.
func (st *conn) Deliver(c *hub.Conn, head, tail []byte, qos uint8) bool {
	f := st.window.Load()
	if f == nil { // made before any QoS ≥ 1 subscription reaches the hub (subscribe)
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now().UnixNano()
	if f.head == len(f.queue) && f.n < len(f.ids) && !f.holding {
		f.send(c, head, tail, qos, now)
		return true
	}
	if f.holding {
		return f.keepLocked(head, tail, qos, now)
	}
	if f.head == len(f.queue) {
		f.progress = now // the clock of the write deadline starts with the first waiting message
	} else if f.deadline > 0 && now-f.progress > f.deadline {
		return false
	}
	n := len(head) + len(tail)
	if f.queued+n > f.maxQueued {
		return false
	}
	f.queue = append(f.queue, queued{head: head, tail: tail, qos: qos, at: now})
	f.queued += n
	f.changes++
	return true
}

// send writes one delivery with a fresh identifier, on the worker, with
// f.mu held and a slot free; at is when it was delivered (unix ns).
func (f *inflight) send(c *hub.Conn, head, tail []byte, qos uint8, at int64) {
	state := slotPuback
	if qos == 2 {
		state = slotPubrec
		head = f.withFlags(head, 0x06, 0x04) // the shared head is QoS 1's
	}
	id, slot := f.take(state)
	if f.sent != nil {
		f.seq++
		f.sent[slot] = sentMsg{head: head, tail: tail, seq: f.seq, at: at}
	}
	f.changes++
	c.WriteParts(head, id, tail)
}

// take gives a free slot a fresh identifier in state and returns the
// identifier's bytes and the slot. f.mu held, f.n below the window.
func (f *inflight) take(state uint8) ([]byte, int) {
	id := f.nextFree()
	for i, v := range f.ids {
		if v == 0 {
			f.ids[i], f.state[i] = id, state
			f.n++
			b := f.buf[2*i : 2*i+2 : 2*i+2]
			b[0], b[1] = byte(id>>8), byte(id)
			return b, i
		}
	}
	panic("mqtt: inflight.take with a full window")
}

// nextFree is the next identifier after f.next, skipping 0 and those still
// outstanding.
func (f *inflight) nextFree() uint16 {
	for {
		f.next++
		if f.next == 0 {
			f.next = 1
		}
		busy := false
		for _, v := range f.ids {
			if v == f.next {
				busy = true
				break
			}
		}
		if !busy {
			return f.next
		}
	}
}

// ack handles, on the reader, an acknowledgement of kind want (slotPuback
// for PUBACK, slotPubrec for PUBREC, slotPubcomp for PUBCOMP) for id: a
// PUBACK or PUBCOMP frees its slot, a PUBREC moves it to slotPubcomp. It
// reports whether id was in that state (an acknowledgement of nothing
// outstanding, or of the wrong kind, is ignored [MQTT-4.3.3]). A freed slot
// with messages waiting posts one drain to the connection's worker.
func (f *inflight) ack(c *hub.Conn, id uint16, want uint8) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, v := range f.ids {
		if v != id || id == 0 || f.state[i] != want {
			continue
		}
		f.progress = time.Now().UnixNano()
		if want == slotPubrec {
			f.state[i] = slotPubcomp
			return true
		}
		f.ids[i], f.state[i] = 0, slotFree
		if f.sent != nil {
			f.sent[i] = sentMsg{}
		}
		f.n--
		f.changes++
		if f.head < len(f.queue) && !f.draining && !f.holding && !f.parked {
			f.draining = true
			f.h.Run(c, f.drainFn)
		}
		return true
	}
	return false
}

// drain runs on the connection's worker (Hub.Run): it sends the waiting
// deliveries the window now takes, oldest first.
func (f *inflight) drain(c *hub.Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drainLocked(c)
}

// drainLocked is drain with f.mu held.
func (f *inflight) drainLocked(c *hub.Conn) {
	f.draining = false
	if f.holding || f.parked {
		return
	}
	for f.head < len(f.queue) && f.n < len(f.ids) && !c.Closing() {
		q := f.queue[f.head]
		f.queue[f.head] = queued{}
		f.head++
		f.queued -= len(q.head) + len(q.tail)
		f.send(c, q.head, q.tail, q.qos, q.at)
	}
	if f.head == len(f.queue) { // empty: reuse the array from its start
		f.queue, f.head = f.queue[:0], 0
	} else if f.head > len(f.queue)/2 && f.head > 64 { // mostly sent: move the rest down
		n := copy(f.queue, f.queue[f.head:])
		clear(f.queue[n:])
		f.queue, f.head = f.queue[:n], 0
	}
}

// waiting returns the number of deliveries waiting for a slot and their
// bytes.
func (f *inflight) waiting() (n, bytes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue) - f.head, f.queued
}

// oldest returns when the oldest delivery the client has not acknowledged
// was delivered (unix ns; a replay's: when it was published): the first
// one waiting, or an outstanding PUBLISH of a persistent session's
// window (a QoS 2 one whose PUBREC came is the client's); 0 for none.
// It also returns the window's change count.
func (f *inflight) oldest() (at int64, changes uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head < len(f.queue) {
		at = f.queue[f.head].at
	}
	if f.sent != nil {
		for i, id := range f.ids {
			if id != 0 && f.state[i] != slotPubcomp && (at == 0 || f.sent[i].at < at) {
				at = f.sent[i].at
			}
		}
	}
	return at, f.changes
}

// changeCount returns the window's change count (inflight.changes).
func (f *inflight) changeCount() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes
}
