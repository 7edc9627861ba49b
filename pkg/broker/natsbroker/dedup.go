package natsbroker

import (
	"strconv"
	"sync"
)

// window is how many of a source node's most recent publishes dedup
// remembers.
const window = 1 << 16

// maxSources bounds the (node, run) pairs dedup keeps, 8 KiB each.
const maxSources = 1024

// dedup remembers, per source node and run (the high 32 bits of the
// sequence number), which of its recent publish sequence numbers were
// handed over, so a publication that arrives on two of this
// node's subscriptions (an exact and a wildcard interest matching one key)
// is handed over once. A number older than the window is taken as new.
type dedup struct {
	mu    sync.Mutex
	nodes map[string]*seen
}

type seen struct {
	top  uint64 // highest sequence number seen
	bits [window / 64]uint64
}

// first reports whether (node, seq) is seen for the first time.
func (d *dedup) first(node string, seq uint64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nodes == nil {
		d.nodes = map[string]*seen{}
	}
	key := node + "\x00" + strconv.FormatUint(seq>>32, 36) // the run: a restart under the same id is a new source
	s := d.nodes[key]
	if s == nil {
		if len(d.nodes) >= maxSources {
			clear(d.nodes) // many restarts: start over rather than grow
		}
		s = &seen{}
		d.nodes[key] = s
	}
	switch {
	case seq > s.top:
		for n := s.top + 1; n < seq && seq-n < window; n++ {
			s.clear(n)
		}
		if seq-s.top >= window {
			s.bits = [window / 64]uint64{}
		}
		s.top = seq
	case s.top-seq >= window:
		return true
	case s.has(seq):
		return false
	}
	s.set(seq)
	return true
}

func (s *seen) has(n uint64) bool { return s.bits[(n%window)/64]&(1<<(n%64)) != 0 }
func (s *seen) set(n uint64)      { s.bits[(n%window)/64] |= 1 << (n % 64) }
func (s *seen) clear(n uint64)    { s.bits[(n%window)/64] &^= 1 << (n % 64) }
