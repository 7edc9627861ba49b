package acl

import "github.com/NoLagApp/kraken/pkg/topic"

// unscopedApp is the app of a rule without an AppID (wire-reference.md §4.6).
const unscopedApp = "unscoped"

// Resolution is where a pattern lives in the broker (wire-reference.md §4.6).
type Resolution struct {
	// Key is the routing key (the broker base topic): the exact rule's Topic,
	// or "<appId>/<pattern>".
	Key string
	// AppID is the app of the rule used, "unscoped" if it has none.
	AppID string
	// RoomID is the exact rule's RoomID; empty for wildcard resolutions.
	RoomID string
	// Exact reports an exact-rule resolution.
	Exact bool
	// Rule is the index in Rules of the rule used.
	Rule int
}

// Resolve maps pattern (the effective pattern, after scope injection) to its
// broker location: wire-reference.md §4.6 with the D-2 / OQ-38 fix.
//
// An exact mapping applies only when pattern has no wildcard levels and some
// rule has Pattern == pattern byte-exactly and a non-empty Topic; the first
// such rule wins over any wildcard rule, whatever the order, and gives Key =
// rule.Topic, RoomID = rule.RoomID, Exact = true. Otherwise the first rule in
// list order whose Pattern matches pattern (covers it, for a wildcard
// pattern) gives Key = appid + "/" + pattern, where appid is the rule's AppID
// or "unscoped". Permissions are not considered. ok is false when no rule
// matches.
func (rs Rules) Resolve(pattern string) (res Resolution, ok bool) {
	if !topic.HasWildcard(pattern) {
		if i := rs.exactRule(pattern); i >= 0 {
			r := rs[i]
			return Resolution{Key: r.Topic, AppID: appID(r), RoomID: r.RoomID, Exact: true, Rule: i}, true
		}
	}
	for i, r := range rs {
		if r.grants(pattern) {
			app := appID(r)
			return Resolution{Key: app + "/" + pattern, AppID: app, Rule: i}, true
		}
	}
	return Resolution{}, false
}

// exactRule returns the index of the first rule with Pattern == pattern and a
// Topic, or -1.
func (rs Rules) exactRule(pattern string) int {
	for i, r := range rs {
		if r.Pattern == pattern && r.Topic != "" {
			return i
		}
	}
	return -1
}

// appID returns the rule's app id, "unscoped" if it has none.
func appID(r Rule) string {
	if r.AppID == "" {
		return unscopedApp
	}
	return r.AppID
}
