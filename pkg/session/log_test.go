package session

import "testing"

// TestLogBits: every refusal the reader logs has a bit of its own in
// State.logged, publishes apart from subscribes; only
// RefuseTooManySubscriptions, which the worker logs, is left out.
func TestLogBits(t *testing.T) {
	seen := map[uint16]string{}
	check := func(r Refusal, subscribe bool) {
		bit := logBit(r, subscribe)
		what := "publish " + r.String()
		if subscribe {
			what = "subscribe " + r.String()
		}
		if bit == 0 {
			t.Errorf("%s has no bit in State.logged", what)
			return
		}
		if other, ok := seen[bit]; ok {
			t.Errorf("%s shares its bit with %s", what, other)
		}
		seen[bit] = what
	}
	for _, r := range PublishRefusals {
		check(r, false)
	}
	for _, r := range SubscribeRefusals {
		if r != RefuseTooManySubscriptions {
			check(r, true)
		}
	}
}
