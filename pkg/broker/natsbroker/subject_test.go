package natsbroker

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/NoLagApp/kraken/pkg/topic"
)

func TestKeySubjectEscapesWhatNATSReserves(t *testing.T) {
	tests := []struct{ give, want string }{
		{"demo-app/demo/general/messages", "k.demo-app.demo.general.messages"},
		{"a.b/c d/*/>", "k.a%2Eb.c%20d.%2A.%3E"},
		{"a//b/", "k.a.%.b.%"},
		{"100%/x", "k.100%25.x"},
		{"é/ü", "k.é.ü"},
		{"+/#", "k.+.#"},
	}
	for _, tt := range tests {
		if got := keySubject("k", tt.give); got != tt.want {
			t.Errorf("keySubject(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestPatternSubjects(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"app/+/x", []string{"k.app.*.x"}},
		{"app/deep/#", []string{"k.app.deep", "k.app.deep.>"}},
		{"#", []string{"k.>"}},
		{"+/a.b", []string{"k.*.a%2Eb"}},
	}
	for _, tt := range tests {
		if got := patternSubjects("k", tt.give); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("patternSubjects(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// The subject mapping keeps topic.Match: a pattern's subjects match a
// key's subject exactly when the pattern matches the key, checked with the
// NATS server's own subject matcher over random levels with reserved bytes.
func TestSubjectMatchingAgreesWithTopicMatch(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "b", "", ".", "*", ">", "%", " ", "a.b", "+", "#"}
	randomLevels := func(n int, wild bool) string {
		levels := make([]string, n)
		for i := range levels {
			levels[i] = alphabet[r.Intn(len(alphabet))]
			if wild && r.Intn(4) == 0 {
				levels[i] = "+"
			}
		}
		if wild && r.Intn(3) == 0 {
			levels[n-1] = "#"
		}
		return strings.Join(levels, "/")
	}
	for i := 0; i < 20000; i++ {
		key := randomLevels(1+r.Intn(4), false)
		if topic.HasWildcard(key) {
			continue
		}
		pattern := randomLevels(1+r.Intn(4), true)
		if topic.ValidateSubscribe(pattern) != nil {
			continue
		}
		want := topic.Match(pattern, key)
		got := false
		for _, s := range patternSubjects("k", pattern) {
			if server.SubjectsCollide(s, keySubject("k", key)) {
				got = true
			}
		}
		if got != want {
			t.Fatalf("pattern %q key %q: subjects match = %v, topic.Match = %v (%v vs %q)", pattern, key, got, want,
				patternSubjects("k", pattern), keySubject("k", key))
		}
	}
}
