package acl

import "github.com/NoLagApp/kraken/pkg/topic"

// Rule is one grant rule of a token (an `allowedTopics[]` entry, wire-reference.md
// §4.1 and §4.2).
type Rule struct {
	// Pattern is the MQTT-style grant pattern matched against the client's
	// topic (wire-reference.md §4.4). A missing pattern is "".
	Pattern string
	// Topic is the internal broker topic. It is used only for an exact rule:
	// a client pattern byte-identical to Pattern and without wildcards
	// (wire-reference.md §4.6, OQ-38).
	Topic string
	// Permission is what the rule grants (wire-reference.md §4.3).
	Permission Permission
	// RoomID is the internal room id; RoomSlug the slug clients use for
	// presence; RoomName the optional webhook room name (wire-reference.md §4.1).
	RoomID, RoomSlug, RoomName string
	// AppID and AppName are the rule's own app. Rules of one token may name
	// different apps (OQ-39); an empty AppID resolves as "unscoped".
	AppID, AppName string
}

// Allows reports whether the rule's permission is adequate for op:
// OpSubscribe needs PermSubscribe or PermPubSub, OpPublish needs PermPublish
// or PermPubSub (wire-reference.md §4.3). It does not look at the pattern.
func (r Rule) Allows(op Op) bool {
	switch op {
	case OpSubscribe:
		return r.Permission == PermSubscribe || r.Permission == PermPubSub
	case OpPublish:
		return r.Permission == PermPublish || r.Permission == PermPubSub
	}
	return false
}

// grants reports whether the rule's pattern admits pattern: it must match
// every topic that pattern can match (D-2, OQ-38). For a pattern without
// wildcards this is topic.RuleMatches (wire-reference.md §4.4).
func (r Rule) grants(pattern string) bool {
	return topic.RuleCovers(r.Pattern, pattern)
}

// Rules is a token's ordered rule list. Order matters only for resolution
// (wire-reference.md §4.6). A nil Rules denies everything.
type Rules []Rule

// RoomBySlug returns the RoomID of the first rule whose RoomSlug equals slug
// (wire-reference.md §7.1). An empty slug never matches, since a rule without a
// room slug names no room (wire-reference.md §4.1).
func (rs Rules) RoomBySlug(slug string) (roomID string, ok bool) {
	if slug == "" {
		return "", false
	}
	for _, r := range rs {
		if r.RoomSlug == slug {
			return r.RoomID, true
		}
	}
	return "", false
}

// ResolveApps fills in the app of every rule and returns the token-level app,
// the same for every backend (OQ-39):
//
//   - token app id: appID, else the first non-empty rule app_id;
//   - a rule without app_id gets the token app id;
//   - app names are per app id: a rule's own app_name, else appName when the
//     rule belongs to the token app, else the first app_name given by a rule
//     of the same app.
func (rs Rules) ResolveApps(appID, appName string) (string, string) {
	for _, r := range rs {
		if appID == "" && r.AppID != "" {
			appID = r.AppID
		}
	}
	for i := range rs {
		if rs[i].AppID == "" {
			rs[i].AppID = appID
		}
	}
	names := map[string]string{}
	for _, r := range rs {
		if _, ok := names[r.AppID]; !ok && r.AppName != "" {
			names[r.AppID] = r.AppName
		}
	}
	if appName == "" {
		appName = names[appID]
	}
	for i := range rs {
		switch {
		case rs[i].AppName != "":
		case rs[i].AppID == appID:
			rs[i].AppName = appName
		default:
			rs[i].AppName = names[rs[i].AppID]
		}
	}
	return appID, appName
}
