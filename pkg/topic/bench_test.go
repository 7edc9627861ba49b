package topic

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// benchTrie returns a trie shaped like one hub worker's table: many exact
// app/room/topic subscriptions plus some wildcard ones.
func benchTrie() *Trie[int] {
	tr := NewTrie[int]()
	for i := range 10000 {
		app := "app" + strconv.Itoa(i%10)
		room := "room" + strconv.Itoa(i%100)
		tr.Insert(app+"/"+room+"/chat/messages/"+strconv.Itoa(i), i)
		switch i % 100 {
		case 0:
			tr.Insert(app+"/"+room+"/#", i)
		case 1:
			tr.Insert(app+"/+/chat/+/"+strconv.Itoa(i), i)
		}
	}
	return tr
}

// benchTopic has five levels and matches one exact and one '+' entry.
const benchTopic = "app1/room1/chat/messages/101"

func TestTrieMatchAllocatesNothing(t *testing.T) {
	tr := benchTrie()
	n := 0
	fn := func(int) { n++ }
	allocs := testing.AllocsPerRun(100, func() { tr.Match(benchTopic, fn) })
	if allocs != 0 {
		t.Fatalf("Trie.Match allocated %v times per run, want 0", allocs)
	}
	if got := collect(tr, benchTopic); len(got) != 2 {
		t.Fatalf("benchTopic matched %v, want 2 entries", got)
	}
}

func BenchmarkTrieMatch(b *testing.B) {
	tr := benchTrie()
	n := 0
	fn := func(int) { n++ }
	b.ReportAllocs()
	for b.Loop() {
		tr.Match(benchTopic, fn)
	}
}

func BenchmarkRuleCovers(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		RuleCovers("demo/general/#", "demo/general/+/x")
	}
}

// removeManyN is the number of values BenchmarkRemoveManyOfOnePattern
// stores under one pattern.
const removeManyN = 100_000

// BenchmarkRemoveManyOfOnePattern inserts removeManyN values under one
// wildcard pattern, untimed, and times removing them all: in insertion order
// (subscribers leaving in the order they came), in reverse, and in a fixed
// random order. "plus" stores them under "a/+/c" (a node's vals), "hash"
// under "a/#" (a node's hash list). One op is the removal of all removeManyN
// values; ns/remove is the time per Remove call.
func BenchmarkRemoveManyOfOnePattern(b *testing.B) {
	inorder := make([]int, removeManyN)
	for i := range inorder {
		inorder[i] = i
	}
	reverse := slices.Clone(inorder)
	slices.Reverse(reverse)
	random := rand.New(rand.NewPCG(1, 2)).Perm(removeManyN)
	for _, p := range []struct{ name, pattern string }{{"plus", "a/+/c"}, {"hash", "a/#"}} {
		for _, o := range []struct {
			name  string
			order []int
		}{{"inorder", inorder}, {"reverse", reverse}, {"random", random}} {
			b.Run(p.name+"/"+o.name, func(b *testing.B) {
				tr := NewTrie[int]()
				for b.Loop() {
					b.StopTimer()
					for i := range removeManyN {
						tr.Insert(p.pattern, i)
					}
					b.StartTimer()
					for _, v := range o.order {
						if !tr.Remove(p.pattern, v) {
							b.Fatalf("Remove(%q, %d) returned false", p.pattern, v)
						}
					}
				}
				if tr.Len() != 0 {
					b.Fatalf("Len = %d after removing everything", tr.Len())
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*removeManyN), "ns/remove")
			})
		}
	}
}
