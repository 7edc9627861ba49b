package memstore

// minRing is the smallest ring capacity; capacities are powers of two.
const minRing = 16

// ring is a FIFO of entries in append order, oldest at head. It is guarded
// by the owning shard's mutex.
type ring struct {
	buf  []*entry // len(buf) is 0 or a power of two
	head int      // index of the oldest entry
	n    int      // number of entries
}

// push appends e at the tail, doubling the buffer when it is full.
func (r *ring) push(e *entry) {
	if r.n == len(r.buf) {
		r.resize(max(minRing, 2*len(r.buf)))
	}
	r.buf[(r.head+r.n)&(len(r.buf)-1)] = e
	r.n++
}

// peek returns the oldest entry; the ring must not be empty.
func (r *ring) peek() *entry { return r.buf[r.head] }

// pop removes and returns the oldest entry, clearing its slot so the entry
// can be collected; the ring must not be empty.
func (r *ring) pop() *entry {
	e := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) & (len(r.buf) - 1)
	r.n--
	return e
}

// compact halves the buffer while it is at most a quarter full, so capacity
// left by a burst or a sweep goes back to the garbage collector.
func (r *ring) compact() {
	c := len(r.buf)
	for c > minRing && r.n <= c/4 {
		c /= 2
	}
	if r.n == 0 && c == minRing {
		c = 0
	}
	if c != len(r.buf) {
		r.resize(c)
	}
}

// resize moves the entries, oldest first, into a new buffer of capacity c
// (0 or a power of two, at least r.n).
func (r *ring) resize(c int) {
	var buf []*entry
	if c > 0 {
		buf = make([]*entry, c)
		for i := 0; i < r.n; i++ {
			buf[i] = r.buf[(r.head+i)&(len(r.buf)-1)]
		}
	}
	r.buf, r.head = buf, 0
}
