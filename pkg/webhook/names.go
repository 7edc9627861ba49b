package webhook

import (
	"strings"

	"github.com/NoLagApp/kraken/pkg/acl"
)

// RoomName returns the roomName of hydration and trigger bodies
// (wire-reference.md §5.3) with the fix of decisions.md OQ-22, for a
// topic whose effective pattern (after scope injection, acl.EffectivePattern)
// is pattern and which resolved to res in rules (acl.Rules.Resolve); scopeSlug
// is the actor's (auth.Grant.ScopeSlug).
//
// In order, it returns:
//
//  1. the RoomSlug of the rule res names, when non-empty;
//  2. else that rule's RoomName, when non-empty;
//  3. else the level of pattern that follows the app and the scope: the
//     third level when scopeSlug is non-empty, the pattern has at least four
//     levels and its second level is scopeSlug (app/scope/room/topic, where
//     v0.4.0 wrongly gave the scope slug), else the second level;
//  4. else, for a pattern of one level, the whole pattern.
//
// A zero res (Key == "", no resolution) or a res.Rule outside rules skips
// steps 1 and 2. It does not allocate.
func RoomName(rules acl.Rules, res acl.Resolution, pattern, scopeSlug string) string {
	if res.Key != "" && res.Rule >= 0 && res.Rule < len(rules) {
		r := &rules[res.Rule]
		if r.RoomSlug != "" {
			return r.RoomSlug
		}
		if r.RoomName != "" {
			return r.RoomName
		}
	}
	_, rest, ok := strings.Cut(pattern, "/")
	if !ok {
		return pattern
	}
	second, rest, more := strings.Cut(rest, "/")
	if scopeSlug != "" && more && second == scopeSlug && strings.Contains(rest, "/") {
		room, _, _ := strings.Cut(rest, "/")
		return room
	}
	return second
}

// TopicName returns the topicName of webhook bodies and the key of
// auth.App.TopicWebhooks (wire-reference.md §5.3): the last level of pattern, the
// topic as the client sent it (the whole pattern when it has no '/'). It
// does not allocate.
func TopicName(pattern string) string {
	return pattern[strings.LastIndexByte(pattern, '/')+1:]
}
