package topic

import (
	"slices"
	"testing"
)

// collect returns the values Match reports for topic, in call order.
func collect[T comparable](tr *Trie[T], topic string) []T {
	var got []T
	tr.Match(topic, func(v T) { got = append(got, v) })
	return got
}

// countNodes returns the number of nodes below n.
func countNodes[T comparable](n *node[T]) int {
	c := 0
	for _, child := range n.children {
		c += 1 + countNodes(child)
	}
	if n.plus != nil {
		c += 1 + countNodes(n.plus)
	}
	return c
}

// entry is one (pattern, value) pair of a trie test.
type entry struct {
	pattern string
	v       int
}

var trieEntries = []entry{
	{"demo/general/#", 1},
	{"demo/general/messages", 2},
	{"demo/+/messages", 3},
	{"#", 4},
	{"demo/general", 5},
	{"a/+/c", 6},
	{"a//c", 7},
	{"+", 8},
	{"a/#/c", 9},
	{"", 10},
	{"/", 11},
	{"$SYS/#", 12},
	{"a/b/", 13},
	{"+/#", 14},
}

func TestTrieMatch(t *testing.T) {
	tr := NewTrie[int]()
	for _, e := range trieEntries {
		tr.Insert(e.pattern, e.v)
	}
	tests := []struct {
		give string
		want []int
	}{
		{"demo/general/messages", []int{1, 2, 3, 4, 14}},
		{"demo/general", []int{1, 4, 5, 14}},
		{"demo/general/", []int{1, 4, 14}},
		{"demo/other/messages", []int{3, 4, 14}},
		{"a/b/c", []int{4, 6, 14}},
		{"a//c", []int{4, 6, 7, 14}},
		{"a/#/c", []int{4, 6, 9, 14}},
		{"x", []int{4, 8, 14}},
		{"", []int{4, 8, 10, 14}},
		{"/", []int{4, 11, 14}},
		{"$SYS/broker", []int{4, 12, 14}},
		{"$SYS", []int{4, 8, 12, 14}},
		{"a/b/", []int{4, 13, 14}},
		{"a/b", []int{4, 14}},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got := collect(tr, tt.give)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Match(%q) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
}

func TestTrieSamePatternKeepsInsertionOrder(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"literal", "a/b"},
		{"plus", "a/+"},
		{"hash", "a/#"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTrie[int]()
			for _, v := range []int{3, 1, 2, 1} {
				tr.Insert(tt.give, v)
			}
			if got, want := collect(tr, "a/b"), []int{3, 1, 2, 1}; !slices.Equal(got, want) {
				t.Fatalf("Match = %v, want %v", got, want)
			}
			if !tr.Remove(tt.give, 1) {
				t.Fatal("Remove returned false")
			}
			if got, want := collect(tr, "a/b"), []int{3, 2, 1}; !slices.Equal(got, want) {
				t.Fatalf("after Remove, Match = %v, want %v", got, want)
			}
		})
	}
}

func TestTrieRemovePrunes(t *testing.T) {
	tr := NewTrie[int]()
	for _, e := range trieEntries {
		tr.Insert(e.pattern, e.v)
	}
	if got := tr.Len(); got != len(trieEntries) {
		t.Fatalf("Len = %d, want %d", got, len(trieEntries))
	}
	if countNodes(&tr.root) == 0 {
		t.Fatal("no nodes after inserts")
	}
	for i, e := range trieEntries {
		if tr.Remove(e.pattern, e.v+100) {
			t.Fatalf("Remove(%q, %d) of an absent value returned true", e.pattern, e.v+100)
		}
		if !tr.Remove(e.pattern, e.v) {
			t.Fatalf("Remove(%q, %d) returned false", e.pattern, e.v)
		}
		if tr.Remove(e.pattern, e.v) {
			t.Fatalf("second Remove(%q, %d) returned true", e.pattern, e.v)
		}
		if got, want := tr.Len(), len(trieEntries)-i-1; got != want {
			t.Fatalf("Len = %d, want %d", got, want)
		}
	}
	if n := countNodes(&tr.root); n != 0 {
		t.Fatalf("%d nodes left after removing every entry", n)
	}
	if !tr.root.empty() {
		t.Fatalf("root not empty: %+v", tr.root)
	}
	if got := collect(tr, "demo/general/messages"); len(got) != 0 {
		t.Fatalf("Match on an empty trie = %v", got)
	}
}

func TestTrieRemoveAbsent(t *testing.T) {
	tests := []struct {
		name string
		give string
	}{
		{"unknown literal", "x/y"},
		{"prefix of a pattern", "a"},
		{"longer than a pattern", "a/b/c/d"},
		{"plus instead of literal", "+/b/c"},
		{"hash instead of literal", "a/#"},
		{"empty", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTrie[int]()
			tr.Insert("a/b/c", 1)
			if tr.Remove(tt.give, 1) {
				t.Fatalf("Remove(%q) returned true", tt.give)
			}
			if tr.Len() != 1 || countNodes(&tr.root) != 3 {
				t.Fatalf("trie changed: Len %d, nodes %d", tr.Len(), countNodes(&tr.root))
			}
		})
	}
}

func TestTrieZeroValue(t *testing.T) {
	var tr Trie[string]
	tr.Insert("a/+", "x")
	if got := collect(&tr, "a/b"); !slices.Equal(got, []string{"x"}) {
		t.Fatalf("Match = %v", got)
	}
}

func TestTrieDeepTopic(t *testing.T) {
	deep := "l"
	for range 100 {
		deep += "/l"
	}
	tr := NewTrie[int]()
	tr.Insert("#", 1)
	tr.Insert("l/#", 2)
	tr.Insert(deep, 3)
	got := collect(tr, deep)
	slices.Sort(got)
	if want := []int{1, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("Match = %v, want %v", got, want)
	}
}
