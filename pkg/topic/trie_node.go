package topic

// match reports the entries below n that match the remaining topic levels.
func (n *node[T]) match(levels []string, fn func(T)) {
	// list.each is too big to be inlined: no call for the usual empty list.
	if len(n.hash.s) > 0 {
		n.hash.each(fn)
	}
	if len(levels) == 0 {
		if len(n.vals.s) > 0 {
			n.vals.each(fn)
		}
		return
	}
	if c := n.children[levels[0]]; c != nil {
		c.match(levels[1:], fn)
	}
	if n.plus != nil {
		n.plus.match(levels[1:], fn)
	}
}

// remove deletes the first entry (pattern, v) below n and prunes the child it
// went through if that child is left empty. O(levels of pattern) plus the
// O(1) amortized of list.remove.
func (n *node[T]) remove(pattern string, v T) bool {
	level, rest, more := cut(pattern)
	if level == "#" && !more {
		return n.hash.remove(v)
	}
	c := n.child(level)
	if c == nil {
		return false
	}
	var ok bool
	if more {
		ok = c.remove(rest, v)
	} else {
		ok = c.vals.remove(v)
	}
	if ok && c.empty() {
		n.drop(level)
	}
	return ok
}

// child returns the child for level, or nil.
func (n *node[T]) child(level string) *node[T] {
	if level == "+" {
		return n.plus
	}
	return n.children[level]
}

// childOrNew returns the child for level, creating it if needed.
func (n *node[T]) childOrNew(level string) *node[T] {
	if c := n.child(level); c != nil {
		return c
	}
	c := &node[T]{}
	if level == "+" {
		n.plus = c
		return c
	}
	if n.children == nil {
		n.children = make(map[string]*node[T])
	}
	n.children[level] = c
	return c
}

// drop unlinks the child for level.
func (n *node[T]) drop(level string) {
	if level == "+" {
		n.plus = nil
		return
	}
	delete(n.children, level)
	if len(n.children) == 0 {
		n.children = nil
	}
}

// empty reports whether n holds no entries and has no children.
func (n *node[T]) empty() bool {
	return n.vals.size() == 0 && n.hash.size() == 0 && n.plus == nil && len(n.children) == 0
}
