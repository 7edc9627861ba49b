package acl

import (
	"slices"
	"strings"
)

// PatternOf returns the client pattern that rs resolves to the routing key
// key (Resolve), and whether there is one: the pattern of an exact rule
// whose Topic is key, or, for key "<app id>/<rest>", rest when rs resolves
// rest to key. It answers "would a client of this grant that subscribes to
// some pattern be reached by a publish to key?".
func (rs Rules) PatternOf(key string) (string, bool) {
	for _, r := range rs {
		if r.Topic == key && r.Pattern != "" {
			if res, ok := rs.Resolve(r.Pattern); ok && res.Key == key {
				return r.Pattern, true
			}
		}
	}
	if _, rest, ok := strings.Cut(key, "/"); ok && rest != "" {
		if res, ok := rs.Resolve(rest); ok && res.Key == key {
			return rest, true
		}
	}
	return "", false
}

// Placement is how Place read a topic.
type Placement uint8

// The placements.
const (
	// PlacedNowhere: no rule list routes the topic, as a key or as a
	// client's topic.
	PlacedNowhere Placement = iota
	// PlacedAsKey: the topic is a routing key some rule list resolves a
	// client pattern to.
	PlacedAsKey
	// PlacedAsTopic: the topic is a client's topic, and every rule list
	// that resolves it resolves it to the same key.
	PlacedAsTopic
	// PlacedAmbiguous: the topic is a client's topic that rule lists
	// resolve to different keys.
	PlacedAmbiguous
)

// Place reads t, the topic of a publish made without a grant (POST
// /internal/publish), with sets, the rule lists of every grant that can be
// handed out (a token file's):
//
//   - when some list resolves a client pattern to t (PatternOf), t is a
//     routing key: PlacedAsKey, with key t and that pattern;
//   - otherwise t is read as a client's topic and resolved as each list's
//     client resolves it (Resolve, scope injection aside): when the lists
//     that resolve it agree, PlacedAsTopic with that key and pattern t;
//     when they do not, PlacedAmbiguous with the distinct keys, sorted, in
//     keys;
//   - when none resolves it, PlacedNowhere.
//
// The routing-key reading goes first: it is what the topic of an internal
// publish always meant.
func Place(sets []Rules, t string) (key, pattern string, how Placement, keys []string) {
	for _, rs := range sets {
		if p, ok := rs.PatternOf(t); ok {
			return t, p, PlacedAsKey, nil
		}
	}
	for _, rs := range sets {
		if res, ok := rs.Resolve(t); ok && !slices.Contains(keys, res.Key) {
			keys = append(keys, res.Key)
		}
	}
	switch len(keys) {
	case 0:
		return "", "", PlacedNowhere, nil
	case 1:
		return keys[0], t, PlacedAsTopic, nil
	}
	slices.Sort(keys)
	return "", "", PlacedAmbiguous, keys
}
