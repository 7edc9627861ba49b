package topic

import (
	"strings"
	"testing"
)

func TestRuleCovers(t *testing.T) {
	tests := []struct {
		name string
		give pair // pair.topic is the subscription pattern
		want bool
	}{
		// OQ-38 examples.
		{"demo plus", pair{"demo/general/#", "demo/general/+"}, true},
		{"demo hash", pair{"demo/general/#", "demo/general/#"}, true},
		{"demo plus deeper", pair{"demo/general/#", "demo/general/+/x"}, true},
		{"demo concrete", pair{"demo/general/#", "demo/general/messages"}, true},
		{"demo parent", pair{"demo/general/#", "demo/general"}, true},
		{"demo room plus", pair{"demo/general/#", "demo/+/x"}, false},
		{"demo whole", pair{"demo/general/#", "#"}, false},
		{"demo app hash", pair{"demo/general/#", "demo/#"}, false},
		{"demo other", pair{"demo/general/#", "demo/other/x"}, false},
		{"demo case", pair{"demo/general/#", "Demo/general/+"}, false},
		{"plus rule same", pair{"a/+/c", "a/+/c"}, true},
		{"plus rule concrete", pair{"a/+/c", "a/b/c"}, true},
		{"plus rule hash", pair{"a/+/c", "a/#"}, false},
		{"plus rule hash last", pair{"a/+/c", "a/+/#"}, false},
		{"plus rule longer pattern", pair{"a/+/c", "a/+/c/d"}, false},
		// '#' alone, in the rule and in the pattern.
		{"hash rule covers hash", pair{"#", "#"}, true},
		{"hash rule covers plus", pair{"#", "+/+/#"}, true},
		{"hash rule covers empty", pair{"#", ""}, true},
		{"plus hash covers hash", pair{"+/#", "#"}, true},
		{"plus plus hash misses hash", pair{"+/+/#", "#"}, false},
		{"plus misses hash", pair{"+", "#"}, false},
		{"prefix hash covers prefix hash", pair{"a/#", "a/#"}, true},
		{"prefix plus hash misses prefix hash", pair{"a/+/#", "a/#"}, false},
		{"literal misses hash", pair{"a", "a/#"}, false},
		{"hash covers deeper hash", pair{"a/#", "a/b/#"}, true},
		// '+' at each level of the pattern.
		{"plus first covered", pair{"+/b", "+/b"}, true},
		{"plus first uncovered", pair{"a/b", "+/b"}, false},
		{"plus last covered", pair{"a/+", "a/+"}, true},
		{"plus last by hash", pair{"a/#", "a/+"}, true},
		{"plus last uncovered", pair{"a/b", "a/+"}, false},
		{"plus alone by plus", pair{"+", "+"}, true},
		{"plus alone by literal", pair{"a", "+"}, false},
		// Empty levels and slashes.
		{"empty pattern", pair{"", ""}, true},
		{"empty level plus", pair{"a//c", "a/+/c"}, false},
		{"plus covers empty level", pair{"a/+/c", "a//c"}, true},
		{"leading slash", pair{"/#", "/+"}, true},
		{"leading slash hash", pair{"/#", "#"}, false},
		{"trailing slash", pair{"a/+", "a/"}, true},
		{"trailing hash covers trailing slash", pair{"a/#", "a/"}, true},
		// A non-final '#' level and '$' are literal.
		{"literal hash level", pair{"a/#/c", "a/#/c"}, true},
		{"literal hash by plus", pair{"a/+/c", "a/#/c"}, true},
		{"literal hash vs literal", pair{"a/b/c", "a/#/c"}, false},
		{"dollar", pair{"$SYS/#", "$SYS/+"}, true},
		{"dollar by hash", pair{"#", "$SYS/+"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RuleCovers(tt.give.rule, tt.give.topic); got != tt.want {
				t.Fatalf("RuleCovers(%q, %q) = %v, want %v", tt.give.rule, tt.give.topic, got, tt.want)
			}
		})
	}
}

// TestRuleCoversExhaustive compares RuleCovers with its definition on every
// rule and pattern of up to 3 levels over a small alphabet, using every topic
// of up to 4 levels over that alphabet plus a fresh level "c" as the universe.
// Any pattern not covered has a counter-example in that universe.
func TestRuleCoversExhaustive(t *testing.T) {
	patterns := allStrings([]string{"a", "+", "#", ""}, 3)
	topics := allStrings([]string{"a", "c", "+", "#", ""}, 4)
	matched := func(p string) []bool {
		m := make([]bool, len(topics))
		for i, tp := range topics {
			m[i] = Match(p, tp)
		}
		return m
	}
	sets := make(map[string][]bool, len(patterns))
	for _, p := range patterns {
		sets[p] = matched(p)
	}
	for _, r := range patterns {
		for _, p := range patterns {
			want := subset(sets[p], sets[r])
			if got := RuleCovers(r, p); got != want {
				t.Errorf("RuleCovers(%q, %q) = %v, want %v", r, p, got, want)
			}
			if !HasWildcard(p) && RuleCovers(r, p) != RuleMatches(r, p) {
				t.Errorf("RuleCovers(%q, %q) != RuleMatches for a wildcard-free pattern", r, p)
			}
		}
	}
}

// allStrings returns every '/'-joined sequence of 1 to n levels over alphabet.
func allStrings(alphabet []string, n int) []string {
	var out, prev []string
	for _, a := range alphabet {
		prev = append(prev, a)
	}
	out = append(out, prev...)
	for i := 1; i < n; i++ {
		var next []string
		for _, p := range prev {
			for _, a := range alphabet {
				next = append(next, strings.Join([]string{p, a}, "/"))
			}
		}
		out = append(out, next...)
		prev = next
	}
	return out
}

// subset reports whether every true element of a is true in b.
func subset(a, b []bool) bool {
	for i := range a {
		if a[i] && !b[i] {
			return false
		}
	}
	return true
}
