package topic

import (
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
