package topic

import (
	"math/bits"
	"slices"
)

// indexMin is the number of entries up to which a list has no index and is
// searched linearly by remove. A list that grows past it builds one.
const indexMin = 8

// indexDrop is the number of entries at or under which an indexed list drops
// its index again. It is below indexMin so that a list going up and down
// around indexMin entries does not rebuild its index on every change.
const indexDrop = indexMin / 2

// list holds the entries of one pattern (a node's vals, or its hash), in
// insertion order. Positions are int32: a list holds fewer than 1<<31
// entries.
//
// A small list (up to indexMin entries) is only the slice s, with no other
// memory: add appends, remove searches and shifts, both in at most indexMin
// steps. A larger one has an index giving, for every value, the position of
// its first entry in s, so remove finds an entry in O(1). Removing does not
// shift the entries after it, which would be O(n): it leaves a hole in s,
// marked in a bitset, that each skips. Holes at the end of s are cut off at
// once; the others are squeezed out when they come to outnumber the entries,
// or when s or the map has room for eight times the entries (see squeeze).
// A squeeze takes time linear in the size of the list and comes after at
// least as many removes as there are entries left, so a remove costs O(1)
// amortized, but the one that squeezes a list of n entries takes O(n).
//
// The zero list is empty. An empty list has s and ix nil.
type list[T comparable] struct {
	s  []T       // entries in insertion order; with ix, holes hold the zero T
	ix *index[T] // built when s grows past indexMin, dropped at indexDrop entries
}

// index is the position index of a large list.
type index[T comparable] struct {
	// first maps each value in the list to the position in s of its first
	// entry.
	first map[T]int32
	// next[i] is the position of the next entry of the value at i, or -1;
	// meaningful for entries only, not holes. It is nil until some value is
	// stored twice, and has the length of s otherwise.
	next []int32
	// dead has bit i set when s[i] is a hole.
	dead []uint64
	// holes is the number of holes in s.
	holes int
	// peak is the most values first has held since it was made.
	peak int
}

// hole reports whether s[i] is a hole.
func (x *index[T]) hole(i int) bool {
	return x.dead[i>>6]&(1<<(uint(i)&63)) != 0
}

// size returns the number of entries in l. O(1).
func (l *list[T]) size() int {
	if l.ix == nil {
		return len(l.s)
	}
	return len(l.s) - l.ix.holes
}

// each calls fn for every entry of l in insertion order, in O(len(l.s)),
// which is at most twice the number of entries.
func (l *list[T]) each(fn func(T)) {
	if l.ix == nil || l.ix.holes == 0 {
		for _, v := range l.s {
			fn(v)
		}
		return
	}
	x := l.ix
	for i, v := range l.s {
		if !x.hole(i) {
			fn(v)
		}
	}
}

// add appends the entry v. It is O(1) amortized, building the index when the
// list grows past indexMin entries; when v is already in the list k times it
// walks those k entries.
func (l *list[T]) add(v T) {
	l.s = append(l.s, v)
	x := l.ix
	if x == nil {
		if len(l.s) > indexMin {
			l.reindex()
		}
		return
	}
	i := int32(len(l.s) - 1)
	if len(l.s) > 64*len(x.dead) {
		x.dead = append(x.dead, 0)
	}
	if x.next != nil {
		x.next = append(x.next, -1)
	}
	j, ok := x.first[v]
	if !ok {
		x.first[v] = i
		x.peak = max(x.peak, len(x.first))
		return
	}
	if x.next == nil {
		x.next = make([]int32, len(l.s))
		for k := range x.next {
			x.next[k] = -1
		}
	}
	for x.next[j] >= 0 {
		j = x.next[j]
	}
	x.next[j] = i
}

// remove deletes the first entry equal to v, keeping the order of the others,
// and reports whether there was one. Without an index it is O(n) for
// n <= indexMin entries; with one, O(1) amortized, one remove in a while
// taking time linear in the size of the list to squeeze it (see list).
func (l *list[T]) remove(v T) bool {
	x := l.ix
	if x == nil {
		return removeFirst(&l.s, v)
	}
	i, ok := x.first[v]
	if !ok {
		return false
	}
	if x.next != nil && x.next[i] >= 0 {
		x.first[v] = x.next[i]
	} else {
		delete(x.first, v)
	}
	var zero T
	l.s[i] = zero // let the value go
	x.dead[i>>6] |= 1 << (uint(i) & 63)
	x.holes++
	n := len(l.s)
	for n > 0 && x.hole(n-1) {
		n--
		x.dead[n>>6] &^= 1 << (uint(n) & 63)
		x.holes--
	}
	l.s = l.s[:n]
	if x.next != nil {
		x.next = x.next[:n]
	}
	// An indexed list has more than indexDrop entries, so this one has at
	// least indexDrop left: it does not become empty here but loses its
	// index first, and the loop above stops at its last entry. Besides
	// holes outnumbering entries, squeeze is called for when s or the map
	// are eight times too big (holes cut off at the end leave both as they
	// are); each takes at least as many removes as entries remain.
	if live := n - x.holes; live <= indexDrop || x.holes > live || 8*live <= cap(l.s) || 8*live <= x.peak {
		l.squeeze()
	}
	return true
}

// squeeze moves the entries of an indexed list over its holes, keeping their
// order, and renumbers the index in place, in O(len(l.s)) with one map write
// per distinct value. When the list has shrunk to a quarter of the capacity
// of s or less, it moves them to a smaller slice, so that memory goes. When
// it has shrunk to an eighth of the most distinct values its index has held
// or less, it builds a new index, so that the memory of the map goes too: a
// Go map never shrinks, and building one costs several times more per value
// than renumbering one, so it is done only when the list is small next to
// the work that emptied it. When the list has indexDrop entries or fewer,
// squeeze drops the index.
func (l *list[T]) squeeze() {
	x := l.ix
	live := len(l.s) - x.holes
	if live <= indexDrop || 8*live <= x.peak {
		s := make([]T, 0, 2*live)
		for i, v := range l.s {
			if !x.hole(i) {
				s = append(s, v)
			}
		}
		l.s, l.ix = s, nil
		if live > indexDrop {
			l.reindex()
		}
		return
	}
	// before[w] is the number of holes in the words of x.dead before w, and
	// rank(p) the position the entry at p moves to.
	before := make([]int32, len(x.dead))
	h := 0
	for w, word := range x.dead {
		before[w] = int32(h)
		h += bits.OnesCount64(word)
	}
	rank := func(p int32) int32 {
		w := p >> 6
		return p - before[w] - int32(bits.OnesCount64(x.dead[w]&(1<<(uint(p)&63)-1)))
	}
	shrink := cap(l.s) >= 4*live
	s, next := l.s[:0], x.next[:0]
	if shrink {
		s = make([]T, 0, 2*live)
		if x.next != nil {
			next = make([]int32, 0, 2*live)
		}
	}
	// In place, entry i moves to len(s) <= i, after it has been read.
	for i, v := range l.s {
		if x.hole(i) {
			continue
		}
		s = append(s, v)
		if x.next != nil {
			nx := x.next[i]
			if nx >= 0 {
				nx = rank(nx)
			}
			next = append(next, nx)
		}
	}
	for v, p := range x.first {
		x.first[v] = rank(p)
	}
	if !shrink {
		clear(l.s[len(s):]) // let the values go
	}
	l.s, x.next = s, next
	words := (len(s) + 63) / 64
	if shrink {
		x.dead = make([]uint64, words, (2*live+63)/64)
	} else {
		clear(x.dead)
		x.dead = x.dead[:words]
	}
	x.holes = 0
}

// reindex builds a new index for l, which must have no holes, in O(len(l.s)),
// with one map write per entry.
func (l *list[T]) reindex() {
	n := len(l.s)
	x := &index[T]{first: make(map[T]int32, n), dead: make([]uint64, (n+63)/64, (2*n+63)/64)}
	for i := n - 1; i >= 0; i-- {
		v := l.s[i]
		if j, ok := x.first[v]; ok {
			if x.next == nil {
				x.next = make([]int32, n, cap(l.s))
				for k := range x.next {
					x.next[k] = -1
				}
			}
			x.next[i] = j
		}
		x.first[v] = int32(i)
	}
	x.peak = len(x.first)
	l.ix = x
}

// removeFirst deletes the first element of *s equal to v, keeping the order
// of the others, and reports whether there was one. O(len(*s)).
func removeFirst[T comparable](s *[]T, v T) bool {
	i := slices.Index(*s, v)
	if i < 0 {
		return false
	}
	*s = slices.Delete(*s, i, i+1)
	if len(*s) == 0 {
		*s = nil
	}
	return true
}
