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
	vals     []T                 // entries whose pattern ends at this node
	hash     []T                 // entries whose pattern ends with "/#" below this node
}

// NewTrie returns an empty Trie.
func NewTrie[T comparable]() *Trie[T] {
	return &Trie[T]{}
}

// Len returns the number of (pattern, value) entries in the trie.
func (t *Trie[T]) Len() int {
	return t.n
}

// Insert adds the entry (pattern, v).
func (t *Trie[T]) Insert(pattern string, v T) {
	n := &t.root
	for {
		level, rest, more := cut(pattern)
		if level == "#" && !more {
			n.hash = append(n.hash, v)
			break
		}
		n = n.childOrNew(level)
		if !more {
			n.vals = append(n.vals, v)
			break
		}
		pattern = rest
	}
	t.n++
}

// Remove deletes the first entry equal to (pattern, v) and reports whether
// there was one. Nodes left without entries or children are pruned.
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
// nothing for topics of up to 32 levels.
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
