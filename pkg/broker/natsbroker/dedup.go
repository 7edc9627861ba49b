package natsbroker

import "sync"

// window is how many of a source node's most recent publishes dedup
// remembers.
const window = 1 << 16

// dedup remembers, per source node, which of its recent publish sequence
// numbers were handed over, so a publication that arrives on two of this
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
	s := d.nodes[node]
	if s == nil {
		s = &seen{}
		d.nodes[node] = s
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
