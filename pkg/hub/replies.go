package hub

import (
	"sync"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// Ticket is one reply a connection is owed, reserved in request order by
// Conn.ExpectReply and answered, by whichever goroutine produces it, with
// Conn.Answer or Writer.Answer.
type Ticket uint32

// replyQueue orders a connection's output while replies are owed to it
// (wire-reference.md §3.3: replies come back in request order). Each owed reply
// is a slot, in the order the reader reserved them (ExpectReply). A reply
// the reader writes itself meanwhile (Conn.Write) takes the next slot,
// answered at once, so it keeps its request's place. What a worker writes
// meanwhile (deliveries, retained messages, events: Writer.Write,
// WriteFrame) follows the last answered slot still held, if there is one
// (a subscription's retained messages stay behind its `subscribed`, an
// echo behind its `published`), and otherwise goes out at once: a slot not
// answered yet is a reply the worker has not produced, which nothing
// written before it has to wait for. Answering the head slot releases it,
// its followers and every answered slot after it into the outbound queue,
// in that order. So order comes from this one queue: nobody waits, spins
// or times out.
//
// A Conn has one only while it is owed replies (nil otherwise: an idle
// connection pays a nil pointer). Guarded by Conn.wmu.
type replyQueue struct {
	slots []replySlot // oldest first
	base  Ticket      // ticket of slots[0]
	bytes int         // of the frames held here, counted against OutboundMaxBytes
	// closeAfter is a close decided on the reader while replies were owed
	// (Conn.CloseNow): it is carried out once they are written.
	closeAfter *disconnect.Disconnect
}

// replyQueues keeps emptied reply queues (with their slots' backing
// array) for the next connection that is owed a reply: a subscribe,
// unsubscribe or presence request then allocates nothing for its place in
// line.
var replyQueues = sync.Pool{New: func() any { return new(replyQueue) }}

// maxPooledSlots bounds the slots array a pooled queue keeps: a queue that
// grew past it under a burst of requests goes to the collector instead.
const maxPooledSlots = 16

// recycle empties q (it holds no frame and no reference afterwards) and
// returns it to replyQueues. Only the goroutine that just took q off its
// Conn (under Conn.wmu) may call it.
func (q *replyQueue) recycle() {
	if cap(q.slots) > maxPooledSlots {
		return
	}
	clear(q.slots)
	*q = replyQueue{slots: q.slots[:0]}
	replyQueues.Put(q)
}

type replySlot struct {
	reply    []byte   // the answer; nil writes nothing
	answered bool     // reply was given
	after    [][]byte // written after this slot was reserved and before the next one
}

// ExpectReply reserves the next reply a worker (or any goroutine but the
// reader) will give c, in request order, and returns its ticket. Every
// ticket must be answered exactly once (Answer, Writer.Answer; with nil
// when there is nothing to write): until it is, everything written to c
// later waits behind it. The reader calls it before handing the request
// over, so the reply keeps its request's place (wire-reference.md §3.3).
func (c *Conn) ExpectReply() Ticket {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.rq == nil {
		c.rq = replyQueues.Get().(*replyQueue)
	}
	t := c.rq.base + Ticket(len(c.rq.slots))
	c.rq.slots = append(c.rq.slots, replySlot{})
	return t
}

// PendingReplies returns the number of replies c is still owed.
func (c *Conn) PendingReplies() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.rq == nil {
		return 0
	}
	return len(c.rq.slots)
}

// Answer gives the reply of ticket t (frame may be nil: nothing to write).
// Call it on a hub worker (Hub.Run); what it releases is flushed at the end
// of the worker's batch. From the shared worker use Writer.Answer.
func (c *Conn) Answer(t Ticket, frame []byte) {
	c.w.mustOwn("Answer")
	c.w.answer(c, t, frame)
}

// answer is Answer from worker w, which flushes c at the end of its batch.
func (w *worker) answer(c *Conn, t Ticket, frame []byte) {
	c.wmu.Lock()
	released := c.answerLocked(t, frame)
	if released && !c.queueEmpty() {
		w.touched = append(w.touched, c)
	}
	c.wmu.Unlock()
}

// answerLocked records the reply of t and releases what it unblocks into
// the outbound queue; it reports whether anything was released.
func (c *Conn) answerLocked(t Ticket, frame []byte) bool {
	q := c.rq
	if q == nil {
		return false // closed or cut meanwhile: nothing more is written
	}
	i := int(int32(t - q.base))
	if i < 0 || i >= len(q.slots) || q.slots[i].answered {
		panic("hub: reply ticket answered twice or never reserved")
	}
	q.slots[i].reply, q.slots[i].answered = frame, true
	q.bytes += len(frame)
	if i != 0 {
		return false
	}
	n := 0
	for n < len(q.slots) && q.slots[n].answered {
		s := &q.slots[n]
		if s.reply != nil {
			c.moveToOut(s.reply)
		}
		for _, f := range s.after {
			c.moveToOut(f)
		}
		n++
	}
	if n == len(q.slots) {
		c.rq = nil
		d := q.closeAfter
		q.recycle()
		if d != nil {
			c.finishCloseLocked(*d)
		}
		return true
	}
	rest := copy(q.slots, q.slots[n:])
	clear(q.slots[rest:])
	q.slots = q.slots[:rest]
	q.base += Ticket(n)
	return true
}

// holdLocked keeps frames in c's reply queue when they must wait there,
// and reports whether they do: a reply of the reader's (one frame) takes a
// slot of its own, answered; a worker's frames follow the last answered
// slot still held, if any.
func (c *Conn) holdLocked(reply bool, frames ...[]byte) bool {
	q := c.rq
	if q == nil {
		return false
	}
	if reply {
		q.slots = append(q.slots, replySlot{reply: frames[0], answered: true})
		q.bytes += len(frames[0])
		return true
	}
	i := len(q.slots) - 1
	for i >= 0 && !q.slots[i].answered {
		i--
	}
	if i < 0 {
		return false
	}
	for _, f := range frames {
		q.slots[i].after = append(q.slots[i].after, f)
		q.bytes += len(f)
	}
	return true
}

// heldBytes is what c's reply queue holds, counted against
// Config.OutboundMaxBytes with the outbound queue.
func (c *Conn) heldBytes() int {
	if c.rq == nil {
		return 0
	}
	return c.rq.bytes
}

// moveToOut moves f from the reply queue to the end of the outbound queue.
func (c *Conn) moveToOut(f []byte) {
	c.rq.bytes -= len(f)
	c.queueLocked(f)
}
