package topic

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// checkList returns an error when l breaks an invariant of list.
func checkList[T comparable](l *list[T]) error {
	if len(l.s) == 0 {
		if l.s != nil || l.ix != nil {
			return fmt.Errorf("empty list keeps s %v (cap %d), index %v", l.s, cap(l.s), l.ix != nil)
		}
		return nil
	}
	var zero T
	for i, v := range l.s[len(l.s):cap(l.s)] {
		if v != zero {
			return fmt.Errorf("slot %d past the end holds %v", len(l.s)+i, v)
		}
	}
	x := l.ix
	if x == nil {
		if len(l.s) > indexMin {
			return fmt.Errorf("%d entries and no index", len(l.s))
		}
		return nil
	}
	n := len(l.s)
	if len(x.dead)*64 < n {
		return fmt.Errorf("bitset of %d words for %d slots", len(x.dead), n)
	}
	dead := func(i int) bool { return x.dead[i>>6]&(1<<(uint(i)&63)) != 0 }
	for i := n; i < 64*len(x.dead); i++ {
		if dead(i) {
			return fmt.Errorf("bit %d set past the %d slots", i, n)
		}
	}
	holes := 0
	for _, word := range x.dead {
		holes += bits.OnesCount64(word)
	}
	if holes != x.holes {
		return fmt.Errorf("holes = %d, bitset has %d", x.holes, holes)
	}
	live := n - holes
	if live <= indexDrop {
		return fmt.Errorf("index kept with %d entries", live)
	}
	if holes > live {
		return fmt.Errorf("%d holes for %d entries", holes, live)
	}
	if 8*live <= cap(l.s) || 8*live <= x.peak {
		return fmt.Errorf("%d entries with a slice of capacity %d and an index that held %d values", live, cap(l.s), x.peak)
	}
	if x.peak < len(x.first) {
		return fmt.Errorf("peak %d under the %d values held", x.peak, len(x.first))
	}
	if dead(n - 1) {
		return fmt.Errorf("hole at the end (slot %d)", n-1)
	}
	if x.next != nil && len(x.next) != n {
		return fmt.Errorf("next has %d slots, s %d", len(x.next), n)
	}
	// want[v] lists the positions of v's entries in order.
	want := make(map[T][]int32)
	for i, v := range l.s {
		if dead(i) {
			if v != zero {
				return fmt.Errorf("hole %d holds %v", i, v)
			}
			continue
		}
		want[v] = append(want[v], int32(i))
	}
	if len(x.first) != len(want) {
		return fmt.Errorf("index has %d values, list %d", len(x.first), len(want))
	}
	for v, pos := range want {
		if len(pos) > 1 && x.next == nil {
			return fmt.Errorf("%v stored %d times and next is nil", v, len(pos))
		}
		var got []int32
		for i, ok := x.first[v]; ok && i >= 0; {
			got = append(got, i)
			if len(got) > len(pos) || x.next == nil {
				break
			}
			i = x.next[i]
		}
		if !slices.Equal(got, pos) {
			return fmt.Errorf("index chain of %v = %v, want %v", v, got, pos)
		}
	}
	return nil
}

// checkTrie returns an error when a node below (or at) n breaks an invariant.
func checkTrie[T comparable](n *node[T], path string) error {
	for _, l := range []*list[T]{&n.vals, &n.hash} {
		if err := checkList(l); err != nil {
			return fmt.Errorf("node %q: %w", path, err)
		}
	}
	if n.children != nil && len(n.children) == 0 {
		return fmt.Errorf("node %q: empty children map", path)
	}
	for level, c := range n.children {
		if c.empty() {
			return fmt.Errorf("node %q: empty child %q kept", path, level)
		}
		if err := checkTrie(c, path+"/"+level); err != nil {
			return err
		}
	}
	if n.plus != nil {
		if n.plus.empty() {
			return fmt.Errorf("node %q: empty + child kept", path)
		}
		return checkTrie(n.plus, path+"/+")
	}
	return nil
}

// TestTrieAgainstModel runs random Inserts and Removes of random patterns
// and values, with many values per pattern and repeated values, and checks
// Len, the node invariants and Match (entries of one pattern in insertion
// order) against a model that keeps each pattern's values in a slice.
func TestTrieAgainstModel(t *testing.T) {
	const (
		ops      = 12000
		phase    = 1500 // ops between switches from growing to shrinking
		patterns = 14
		perPat   = 1000 // a value is pattern index*perPat + a number below perPat
	)
	levels := []string{"a", "b", "+", "#", ""}
	topicLevels := []string{"a", "b", "c", "", "+", "#"}
	randPath := func(rng *rand.Rand, from []string, maxLevels int) string {
		parts := make([]string, 1+rng.IntN(maxLevels))
		for i := range parts {
			parts[i] = from[rng.IntN(len(from))]
		}
		return strings.Join(parts, "/")
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			pats := []string{"a/+/c", "a/#"}
			for len(pats) < patterns {
				if p := randPath(rng, levels, 3); !slices.Contains(pats, p) {
					pats = append(pats, p)
				}
			}
			model := make([][]int, len(pats))
			size := 0
			tr := NewTrie[int]()
			check := func(op int) {
				t.Helper()
				if tr.Len() != size {
					t.Fatalf("op %d: Len = %d, want %d", op, tr.Len(), size)
				}
				if err := checkTrie(&tr.root, ""); err != nil {
					t.Fatalf("op %d: %v", op, err)
				}
				for range 4 {
					topic := randPath(rng, topicLevels, 4)
					got := collect(tr, topic)
					n := 0
					for pi, p := range pats {
						var mine []int
						for _, v := range got {
							if v/perPat == pi {
								mine = append(mine, v)
							}
						}
						want := model[pi]
						if !Match(p, topic) {
							want = nil
						}
						if !slices.Equal(mine, want) {
							t.Fatalf("op %d: Match(%q) gives %q %v, want %v", op, topic, p, mine, want)
						}
						n += len(mine)
					}
					if n != len(got) {
						t.Fatalf("op %d: Match(%q) = %v, has values of no pattern", op, topic, got)
					}
				}
			}
			for op := range ops {
				grow := op/phase%2 == 0
				// A narrow range of values makes repeats common, a wide one rare.
				spread := []int{3, 40, perPat}[op/(2*phase)%3]
				pi := rng.IntN(len(pats))
				insert := rng.IntN(100) < 25
				if grow {
					insert = rng.IntN(100) < 75
				}
				switch {
				case insert || len(model[pi]) == 0 && rng.IntN(2) == 0:
					v := pi*perPat + rng.IntN(spread)
					tr.Insert(pats[pi], v)
					model[pi] = append(model[pi], v)
					size++
				case len(model[pi]) == 0 || rng.IntN(20) == 0:
					v := pi*perPat + perPat - 1 - rng.IntN(perPat/2)
					if slices.Contains(model[pi], v) {
						break
					}
					if tr.Remove(pats[pi], v) {
						t.Fatalf("op %d: Remove(%q, %d) of an absent value returned true", op, pats[pi], v)
					}
				default:
					v := model[pi][rng.IntN(len(model[pi]))]
					if !tr.Remove(pats[pi], v) {
						t.Fatalf("op %d: Remove(%q, %d) returned false", op, pats[pi], v)
					}
					i := slices.Index(model[pi], v)
					model[pi] = slices.Delete(model[pi], i, i+1)
					size--
				}
				if op%25 == 0 {
					check(op)
				}
			}
			check(ops)
			for size > 0 {
				pi := rng.IntN(len(pats))
				if len(model[pi]) == 0 {
					continue
				}
				v := model[pi][rng.IntN(len(model[pi]))]
				if !tr.Remove(pats[pi], v) {
					t.Fatalf("draining: Remove(%q, %d) returned false", pats[pi], v)
				}
				i := slices.Index(model[pi], v)
				model[pi] = slices.Delete(model[pi], i, i+1)
				size--
				if size%50 == 0 {
					check(-1)
				}
			}
			if n := countNodes(&tr.root); n != 0 || !tr.root.empty() || tr.Len() != 0 {
				t.Fatalf("after removing everything: %d nodes, Len %d, root %+v", n, tr.Len(), tr.root)
			}
		})
	}
}

// TestTrieRemoveManyOfOnePattern removes 100,000 values stored under one
// wildcard pattern, in several orders, and checks that the trie is left
// empty and pruned, and that the pattern's neighbours are untouched.
func TestTrieRemoveManyOfOnePattern(t *testing.T) {
	const n = 100_000
	inorder := make([]int, n)
	for i := range inorder {
		inorder[i] = i
	}
	reverse := slices.Clone(inorder)
	slices.Reverse(reverse)
	random := rand.New(rand.NewPCG(3, 4)).Perm(n)
	for _, pattern := range []string{"a/+/c", "a/#"} {
		for _, o := range []struct {
			name  string
			order []int
		}{{"inorder", inorder}, {"reverse", reverse}, {"random", random}} {
			t.Run(strings.ReplaceAll(pattern, "/", "_")+"/"+o.name, func(t *testing.T) {
				tr := NewTrie[int]()
				for i := range n {
					tr.Insert(pattern, i)
				}
				for i, v := range o.order {
					if !tr.Remove(pattern, v) {
						t.Fatalf("Remove(%q, %d) returned false", pattern, v)
					}
					if i == n/2 {
						if err := checkTrie(&tr.root, ""); err != nil {
							t.Fatal(err)
						}
						got := collect(tr, "a/b/c")
						want := slices.Clone(o.order[i+1:])
						slices.Sort(want)
						if !slices.Equal(got, want) {
							t.Fatalf("halfway, Match gives %d values, want %d in insertion order", len(got), len(want))
						}
					}
				}
				if tr.Remove(pattern, 0) {
					t.Fatal("Remove from an emptied pattern returned true")
				}
				if c := countNodes(&tr.root); c != 0 || !tr.root.empty() || tr.Len() != 0 {
					t.Fatalf("after removing everything: %d nodes, Len %d, root %+v", c, tr.Len(), tr.root)
				}
				if got := collect(tr, "a/b/c"); len(got) != 0 {
					t.Fatalf("Match on the emptied trie = %v", got)
				}
			})
		}
	}
}

func TestTrieLargeListKeepsOrderAndRepeats(t *testing.T) {
	for _, pattern := range []string{"a/b", "a/+", "a/#"} {
		t.Run(strings.ReplaceAll(pattern, "/", "_"), func(t *testing.T) {
			tr := NewTrie[int]()
			var want []int
			for i := range 40 {
				v := i % 7 // every value stored several times
				tr.Insert(pattern, v)
				want = append(want, v)
			}
			for _, v := range []int{3, 3, 0, 6, 3, 1, 1, 1, 1} {
				if !tr.Remove(pattern, v) {
					t.Fatalf("Remove(%d) returned false", v)
				}
				i := slices.Index(want, v)
				want = slices.Delete(want, i, i+1)
				if err := checkTrie(&tr.root, ""); err != nil {
					t.Fatal(err)
				}
				if got := collect(tr, "a/b"); !slices.Equal(got, want) {
					t.Fatalf("after Remove(%d), Match = %v, want %v", v, got, want)
				}
			}
			tr.Insert(pattern, 3)
			want = append(want, 3)
			if got := collect(tr, "a/b"); !slices.Equal(got, want) {
				t.Fatalf("after Insert(3), Match = %v, want %v", got, want)
			}
		})
	}
}

func TestTrieMatchWithHolesAllocatesNothing(t *testing.T) {
	tr := NewTrie[int]()
	for i := range 1000 {
		tr.Insert("a/+", i)
	}
	for i := 0; i < 1000; i += 3 {
		tr.Remove("a/+", i)
	}
	if tr.root.children["a"].plus.vals.ix.holes == 0 {
		t.Fatal("no holes to skip")
	}
	n := 0
	fn := func(int) { n++ }
	if allocs := testing.AllocsPerRun(100, func() { tr.Match("a/b", fn) }); allocs != 0 {
		t.Fatalf("Match allocated %v times per run, want 0", allocs)
	}
	if got := len(collect(tr, "a/b")); got != 666 {
		t.Fatalf("Match gave %d values, want 666", got)
	}
}
