package hub

import "sync"

// outq is a connection's outbound queue while it holds more than one frame
// (Conn.q): frames from head on, oldest first, the first of them possibly
// partly written. One frame alone waits in Conn.one, so a delivery to a
// connection whose queue is empty takes nothing from the pool; a queue is
// taken from outqs when a second frame comes and given back once written.
// Guarded by the connection's wmu.
type outq struct {
	out   [][]byte
	head  int // out[:head] are written (nil)
	bytes int // of out[head:]
}

// outqs pools the queues; one keeps its array unless it grew past
// outqKeep frames.
var outqs = sync.Pool{New: func() any { return new(outq) }}

const outqKeep = 64

// queueEmpty reports whether nothing is queued. Under wmu.
func (c *Conn) queueEmpty() bool { return c.q == nil && c.one[0] == nil }

// queuedBytes is what the queue holds, in bytes. Under wmu.
func (c *Conn) queuedBytes() int {
	if c.q != nil {
		return c.q.bytes
	}
	return len(c.one[0])
}

// queuedFrames is the number of frames queued. Under wmu.
func (c *Conn) queuedFrames() int {
	switch {
	case c.q != nil:
		return len(c.q.out) - c.q.head
	case c.one[0] != nil:
		return 1
	}
	return 0
}

// queued returns the frames queued, oldest first, for a write; valid until
// the queue changes. Under wmu.
func (c *Conn) queued() [][]byte {
	switch {
	case c.q != nil:
		return c.q.out[c.q.head:]
	case c.one[0] != nil:
		return c.one[:]
	}
	return nil
}

// queueLocked appends frame to the outbound queue; an empty frame is
// nothing to write and is not queued.
func (c *Conn) queueLocked(frame []byte) {
	switch {
	case len(frame) == 0:
	case c.q != nil:
		q := c.q
		if q.head > 0 && len(q.out) == cap(q.out) {
			// Full, with written slots at the front: move what waits to
			// the front instead of growing, so that the array is bounded
			// by the frames waiting, not by every frame ever queued on a
			// connection whose queue never empties.
			n := copy(q.out, q.out[q.head:])
			clear(q.out[n:])
			q.out, q.head = q.out[:n], 0
		}
		q.out = append(q.out, frame)
		q.bytes += len(frame)
	case c.one[0] == nil:
		c.one[0] = frame
	default:
		q := outqs.Get().(*outq)
		q.out = append(q.out, c.one[0], frame)
		q.bytes = len(c.one[0]) + len(frame)
		c.one[0], c.q = nil, q
	}
}

// consumeLocked drops the n bytes the transport took from the queue's
// front.
func (c *Conn) consumeLocked(n int) {
	if c.q == nil {
		if n >= len(c.one[0]) {
			c.one[0] = nil
		} else {
			c.one[0] = c.one[0][n:]
		}
		return
	}
	q := c.q
	q.bytes -= n
	i := q.head
	for i < len(q.out) && n >= len(q.out[i]) {
		n -= len(q.out[i])
		q.out[i] = nil
		i++
	}
	if i < len(q.out) && n > 0 {
		q.out[i] = q.out[i][n:]
	}
	q.head = i
}

// cutQueueLocked drops the queue but its head frame.
func (c *Conn) cutQueueLocked() {
	if c.q != nil {
		head := c.q.out[c.q.head]
		c.dropQueueLocked()
		c.one[0] = head
	}
}

// dropQueueLocked empties the queue, giving its outq back.
func (c *Conn) dropQueueLocked() {
	c.one[0] = nil
	q := c.q
	if q == nil {
		return
	}
	c.q = nil
	clear(q.out)
	q.out, q.head, q.bytes = q.out[:0], 0, 0
	if cap(q.out) > outqKeep {
		q.out = nil
	}
	outqs.Put(q)
}
