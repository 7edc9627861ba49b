package topic

// splitStack is the number of levels Trie.Match splits into a stack array;
// longer topics spill to the heap (as nats-server sublist does).
const splitStack = 32

// Trie is a subscription index from patterns to values of type T, in the
// style of the nats-server generic sublist. Patterns follow Match semantics
// and are not validated: an invalid pattern is indexed and matched as Match
// would treat it.
//
// A Trie is not safe for concurrent use: it is owned by one goroutine (a hub
// worker). Several values may share a pattern; they are kept, and reported by
// Match, in insertion order. Inserting an equal (pattern, value) pair twice
// stores two entries. The zero value is an empty Trie ready to use.
type Trie[T comparable] struct {
	root node[T]
	n    int
}

// node is one level of the trie.
type node[T comparable] struct {
	children map[string]*node[T] // literal levels, including a non-final "#"
	plus     *node[T]            // the "+" level
	vals     list[T]             // entries whose pattern ends at this node
	hash     list[T]             // entries whose pattern ends with "/#" below this node
}

// NewTrie returns an empty Trie.
func NewTrie[T comparable]() *Trie[T] {
	return &Trie[T]{}
}

// Len returns the number of (pattern, value) entries in the trie.
func (t *Trie[T]) Len() int {
	return t.n
}

// Insert adds the entry (pattern, v). It is O(levels of pattern) plus O(1)
// amortized for the value; when (pattern, v) is already stored k times it
// also walks those k entries.
func (t *Trie[T]) Insert(pattern string, v T) {
	n := &t.root
	for {
		level, rest, more := cut(pattern)
		if level == "#" && !more {
			n.hash.add(v)
			break
		}
		n = n.childOrNew(level)
		if !more {
			n.vals.add(v)
			break
		}
		pattern = rest
	}
	t.n++
}

// Remove deletes the first entry equal to (pattern, v), the one inserted
// first, and reports whether there was one. Nodes left without entries or
// children are pruned.
//
// Remove is O(levels of pattern) plus O(1) amortized for the value, however
// many values share the pattern: a pattern with more than 8 values keeps an
// index of their positions, and a removal leaves a hole that Match skips,
// until the holes outnumber the values and are squeezed out at once in time
// linear in the pattern's values (so one Remove in a while takes that long).
func (t *Trie[T]) Remove(pattern string, v T) bool {
	if !t.root.remove(pattern, v) {
		return false
	}
	t.n--
	return true
}

// Match calls fn once for every entry (pattern, v) whose pattern Match()es
// topic. Entries of one pattern come in insertion order; the order across
// patterns is unspecified. fn must not modify the trie. Match allocates
// nothing for topics of up to 32 levels. For each matching pattern with n
// values it steps over at most 2n slots: the values and the holes Remove
// may have left among them.
func (t *Trie[T]) Match(topic string, fn func(T)) {
	var buf [splitStack]string
	t.root.match(split(topic, buf[:0]), fn)
}

// split appends the levels of s to dst.
func split(s string, dst []string) []string {
	for {
		level, rest, more := cut(s)
		dst = append(dst, level)
		if !more {
			return dst
		}
		s = rest
	}
}
