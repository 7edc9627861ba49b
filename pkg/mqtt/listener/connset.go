package listener

import "hash/maphash"

// connSet is the listener's connected identities (clients.m): a hash set
// of connections keyed by their clientKey, one pointer per slot, where a
// map[string]*conn would hold the key's string header beside it (24 bytes
// a slot, and Go maps never shrink). Open addressing with linear probing:
// the table is a power of two, grown at 3/4 full, halved below 1/8 full
// (so a crowd that reconnected and left does not keep its table), and a
// removal shifts the entries after it back, leaving no tombstone. A
// connection's clientKey is set before it is added and never changes.
// Not safe for concurrent use: the clients mutex guards it.
type connSet struct {
	slots []*conn // nil: empty
	n     int
	seed  maphash.Seed
}

// minConnSet is the smallest table, in slots.
const minConnSet = 8

// home is the slot key hashes to, in a table of mask+1 slots.
func (s *connSet) home(key string, mask int) int {
	return int(maphash.String(s.seed, key) & uint64(mask))
}

// find returns the slot of key, or of the empty slot where it would go.
// The table is not empty.
func (s *connSet) find(key string) int {
	mask := len(s.slots) - 1
	i := s.home(key, mask)
	for s.slots[i] != nil && s.slots[i].clientKey != key {
		i = (i + 1) & mask
	}
	return i
}

// len returns the number of connections held.
func (s *connSet) len() int { return s.n }

// get returns the connection of key, nil for none.
func (s *connSet) get(key string) *conn {
	if s.n == 0 {
		return nil
	}
	return s.slots[s.find(key)]
}

// put makes st the connection of its clientKey and returns the one it
// replaced, nil for none.
func (s *connSet) put(st *conn) (old *conn) {
	if s.slots == nil {
		s.seed = maphash.MakeSeed()
		s.slots = make([]*conn, minConnSet)
	}
	i := s.find(st.clientKey)
	if old = s.slots[i]; old != nil {
		s.slots[i] = st
		return old
	}
	s.slots[i] = st
	s.n++
	if 4*s.n > 3*len(s.slots) {
		s.resize(2 * len(s.slots))
	}
	return nil
}

// remove forgets st when it is the connection of its clientKey, and
// reports whether it was.
func (s *connSet) remove(st *conn) bool {
	if s.n == 0 {
		return false
	}
	i := s.find(st.clientKey)
	if s.slots[i] != st {
		return false
	}
	// Backward shift: each entry after i in the run moves into the hole
	// unless its home lies cyclically in (hole, its slot].
	mask := len(s.slots) - 1
	for j := (i + 1) & mask; s.slots[j] != nil; j = (j + 1) & mask {
		k := s.home(s.slots[j].clientKey, mask)
		if i <= j && i < k && k <= j || i > j && (i < k || k <= j) {
			continue
		}
		s.slots[i] = s.slots[j]
		i = j
	}
	s.slots[i] = nil
	s.n--
	if len(s.slots) > minConnSet && 8*s.n < len(s.slots) {
		s.resize(len(s.slots) / 2)
	}
	return true
}

// resize moves every connection into a table of size slots.
func (s *connSet) resize(size int) {
	old := s.slots
	s.slots = make([]*conn, size)
	mask := size - 1
	for _, st := range old {
		if st == nil {
			continue
		}
		i := s.home(st.clientKey, mask)
		for s.slots[i] != nil {
			i = (i + 1) & mask
		}
		s.slots[i] = st
	}
}

// each calls f with every connection held, in no order; f must not
// change the set.
func (s *connSet) each(f func(*conn)) {
	for _, st := range s.slots {
		if st != nil {
			f(st)
		}
	}
}
