package natssubject

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/NoLagApp/kraken/pkg/topic"
)

func TestKeyEscapesWhatNATSReserves(t *testing.T) {
	tests := []struct{ give, want string }{
		{"demo-app/demo/general/messages", "k.demo-app.demo.general.messages"},
		{"a.b/c d/*/>", "k.a%2Eb.c%20d.%2A.%3E"},
		{"a//b/", "k.a.%.b.%"},
		{"100%/x", "k.100%25.x"},
		{"é/ü", "k.é.ü"},
		{"+/#", "k.+.#"},
	}
	for _, tt := range tests {
		got := Key("k", tt.give)
		if got != tt.want {
			t.Errorf("Key(%q) = %q, want %q", tt.give, got, tt.want)
		}
		if back, err := KeyOf("k", got); err != nil || back != tt.give {
			t.Errorf("KeyOf(%q) = %q, %v, want %q", got, back, err, tt.give)
		}
	}
}

func TestKeyOfRejectsForeignSubjects(t *testing.T) {
	for _, s := range []string{"k", "k.", "kx.a", "j.a", "k.a%2", "k.a%zz", "k.%2e"} {
		if got, err := KeyOf("k", s); err == nil {
			t.Errorf("KeyOf(%q) = %q, want an error", s, got)
		}
	}
}

func TestKeyOfRoundTripsRandomKeys(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	alphabet := []string{"a", "", ".", "*", ">", "%", " ", "\x00", "\x7f", "é", "+", "#", "%25"}
	for i := 0; i < 5000; i++ {
		levels := make([]string, 1+r.Intn(4))
		for j := range levels {
			levels[j] = alphabet[r.Intn(len(alphabet))] + alphabet[r.Intn(len(alphabet))]
		}
		key := strings.Join(levels, "/")
		if back, err := KeyOf("p.h", Key("p.h", key)); err != nil || back != key {
			t.Fatalf("KeyOf(Key(%q)) = %q, %v", key, back, err)
		}
	}
}

func TestPatterns(t *testing.T) {
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
		if got := Patterns("k", tt.give); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("Patterns(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// The mapping keeps topic.Match: a pattern's subjects match a key's
// subject exactly when the pattern matches the key, checked with the NATS
// server's own subject matcher over random levels with reserved bytes.
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
		for _, s := range Patterns("k", pattern) {
			if server.SubjectsCollide(s, Key("k", key)) {
				got = true
			}
		}
		if got != want {
			t.Fatalf("pattern %q key %q: subjects match = %v, topic.Match = %v (%v vs %q)", pattern, key, got, want,
				Patterns("k", pattern), Key("k", key))
		}
	}
}

// StoreName is the one naming rule of kraken's JetStream streams and
// buckets: the default prefix gives KRAKEN_<kind>; others are made safe.
func TestStoreName(t *testing.T) {
	for _, tt := range []struct{ prefix, kind, want string }{
		{"", "HISTORY", "KRAKEN_HISTORY"},
		{"kraken", "SESSIONS", "KRAKEN_SESSIONS"},
		{"acme.eu-1", "RETAINED", "acme_eu-1_RETAINED"},
		{"a b*>", "HISTORY", "a_b___HISTORY"},
	} {
		if got := StoreName(tt.prefix, tt.kind); got != tt.want {
			t.Errorf("StoreName(%q, %q) = %q, want %q", tt.prefix, tt.kind, got, tt.want)
		}
	}
}
