package topic

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// FuzzMatchAgainstNaive checks Trie.Match against a brute-force Match over the
// inserted patterns. patterns holds up to 64 patterns separated by '\n'; the
// ones whose bit is set in remove are removed again before matching.
func FuzzMatchAgainstNaive(f *testing.F) {
	f.Add("demo/general/#\ndemo/+/x\n#\n+/#", "demo/general/x", uint64(0))
	f.Add("a/+/c\na//c\na/#/c\n+\n\n/", "a//c", uint64(0b10))
	f.Add("a/#\na\na/+\na/b/#", "a", uint64(0b1001))
	f.Add("$SYS/#\n+/x\n#/x", "$SYS/x", uint64(0))
	f.Add("x/y\nx/y\nx/+", "x/y", uint64(1))
	f.Fuzz(func(t *testing.T, patterns, topic string, remove uint64) {
		list := strings.Split(patterns, "\n")
		if len(list) > 64 {
			list = list[:64]
		}
		tr := NewTrie[int]()
		for i, p := range list {
			tr.Insert(p, i)
		}
		var kept []int
		for i, p := range list {
			if remove&(1<<i) == 0 {
				kept = append(kept, i)
			} else if !tr.Remove(p, i) {
				t.Fatalf("Remove(%q, %d) returned false", p, i)
			}
		}
		checkTrieMatch(t, tr, list, kept, topic)
		for _, i := range kept {
			if !tr.Remove(list[i], i) {
				t.Fatalf("Remove(%q, %d) returned false", list[i], i)
			}
		}
		if n := countNodes(&tr.root); n != 0 || tr.Len() != 0 {
			t.Fatalf("after removing everything: %d nodes, Len %d", n, tr.Len())
		}
	})
}

// checkTrieMatch compares the trie's answer for topic with brute force over
// the kept indexes of list.
func checkTrieMatch(t *testing.T, tr *Trie[int], list []string, kept []int, topic string) {
	t.Helper()
	if tr.Len() != len(kept) {
		t.Fatalf("Len = %d, want %d", tr.Len(), len(kept))
	}
	var want []int
	for _, i := range kept {
		if Match(list[i], topic) {
			want = append(want, i)
		}
	}
	got := collect(tr, topic)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Trie.Match(%q) = %v, want %v (patterns %q)", topic, got, want, list)
	}
}

// FuzzValidate checks that validation never panics, returns only the
// package's errors, and agrees with the matchers.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		"", "#", "+", "/", "a/+/c", "a/#/c", "demo/general/#", "a\x00b",
		"a/b+", "$SYS/+", strings.Repeat("a/", MaxTopicLevels), "\xff/+",
	} {
		f.Add(s)
	}
	known := []error{nil, ErrEmpty, ErrTooLong, ErrTooManyLevels, ErrBadWildcard, ErrWildcardInPublish, ErrNullByte, ErrNotUTF8}
	f.Fuzz(func(t *testing.T, s string) {
		sub, pub := ValidateSubscribe(s), ValidatePublish(s)
		if !slices.Contains(known, sub) || !slices.Contains(known, pub) || errors.Is(sub, ErrWildcardInPublish) {
			t.Fatalf("unexpected errors for %q: subscribe %v, publish %v", s, sub, pub)
		}
		if pub == nil && (sub != nil || HasWildcard(s)) {
			t.Fatalf("%q: publish valid but subscribe %v, HasWildcard %v", s, sub, HasWildcard(s))
		}
		if !RuleMatches(s, s) || !Match(s, s) || !RuleCovers(s, s) {
			t.Fatalf("%q does not match or cover itself", s)
		}
		if !RuleCovers("#", s) {
			t.Fatalf("rule # does not cover %q", s)
		}
	})
}
