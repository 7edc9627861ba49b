package static

import (
	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

// rules decodes allowedTopics (wire-reference.md §4.1). Rules that are not objects
// are dropped with a warning; wrongly typed keys are ignored with a warning.
func (d entryDecoder) rules(m map[string]any) acl.Rules {
	items := d.array(m, "allowedTopics")
	if len(items) == 0 {
		return nil
	}
	out := make(acl.Rules, 0, len(items))
	for i, it := range items {
		r, ok := it.(map[string]any)
		if !ok {
			d.warn("allowedTopics[%d] is %s, want an object; dropped", i, jsonType(it))
			continue
		}
		rule := acl.Rule{
			Pattern:  d.str(r, "pattern"),
			Topic:    d.str(r, "topic"),
			RoomID:   d.str(r, "room_id"),
			RoomSlug: d.str(r, "room_slug"),
			RoomName: d.str(r, "roomName"),
			AppID:    d.str(r, "app_id"),
			AppName:  d.str(r, "app_name"),
			// Any other value grants nothing (wire-reference.md §4.1).
			Permission: acl.ParsePermission(d.str(r, "permission")),
		}
		if p, _ := r["permission"].(string); p != "" && rule.Permission == acl.PermNone {
			d.warn("allowedTopics[%d] permission %q is not subscribe, publish or pubSub; the rule grants nothing", i, p)
		}
		out = append(out, rule)
	}
	return out
}

// subscriptions decodes activeSubscriptions (wire-reference.md §2.6): strings are
// patterns; objects carry pattern|name, load_balance|loadBalance,
// load_balance_group|loadBalanceGroup and filters (strings only). The
// snake_case key wins when both spellings are present. Entries without a
// pattern are dropped with a warning.
func (d entryDecoder) subscriptions(m map[string]any) []auth.Subscription {
	items := d.array(m, "activeSubscriptions")
	if len(items) == 0 {
		return nil
	}
	out := make([]auth.Subscription, 0, len(items))
	for i, it := range items {
		var s auth.Subscription
		switch v := it.(type) {
		case string:
			s.Pattern = v
		case map[string]any:
			s.Pattern = d.firstStr(v, "pattern", "name")
			s.LoadBalance = d.firstBool(v, "load_balance", "loadBalance")
			s.LoadBalanceGroup = d.firstStr(v, "load_balance_group", "loadBalanceGroup")
			s.Filters = d.strings(v, "filters", "activeSubscriptions filter")
		default:
			d.warn("activeSubscriptions[%d] is %s, want a string or an object; dropped", i, jsonType(it))
			continue
		}
		if s.Pattern == "" {
			d.warn("activeSubscriptions[%d] has no pattern; dropped", i)
			continue
		}
		out = append(out, s)
	}
	return out
}

// lobbies decodes allowedLobbies (wire-reference.md §4.1, OQ-19): objects with
// lobby_slug, lobby_id and an optional rooms list of strings. Entries missing
// the slug or the id are dropped with a warning.
func (d entryDecoder) lobbies(m map[string]any) []auth.Lobby {
	items := d.array(m, "allowedLobbies")
	if len(items) == 0 {
		return nil
	}
	out := make([]auth.Lobby, 0, len(items))
	for i, it := range items {
		v, ok := it.(map[string]any)
		if !ok {
			d.warn("allowedLobbies[%d] is %s, want an object; dropped", i, jsonType(it))
			continue
		}
		l := auth.Lobby{Slug: d.str(v, "lobby_slug"), ID: d.str(v, "lobby_id")}
		if l.Slug == "" || l.ID == "" {
			d.warn("allowedLobbies[%d] needs both lobby_slug and lobby_id; dropped", i)
			continue
		}
		if _, explicit := v["rooms"].([]any); explicit {
			l.Rooms = d.strings(v, "rooms", "allowedLobbies room")
			if l.Rooms == nil {
				l.Rooms = []string{}
			}
		} else {
			d.array(v, "rooms") // warns about a wrong type
		}
		out = append(out, l)
	}
	return out
}

// strings returns the string elements of the array m[key]; other elements
// are dropped with a warning naming what.
func (d entryDecoder) strings(m map[string]any, key, what string) []string {
	items := d.array(m, key)
	var out []string
	for _, it := range items {
		s, ok := it.(string)
		if !ok {
			d.warn("%s is %s, want a string; dropped", what, jsonType(it))
			continue
		}
		out = append(out, s)
	}
	return out
}

// firstStr returns the first of keys present with a non-empty string.
func (d entryDecoder) firstStr(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s := d.str(m, k); s != "" {
			return s
		}
	}
	return ""
}

// firstBool returns the value of the first of keys present as a boolean;
// other types are ignored with a warning.
func (d entryDecoder) firstBool(m map[string]any, keys ...string) bool {
	for _, k := range keys {
		switch v := m[k].(type) {
		case nil:
		case bool:
			return v
		default:
			d.warn("%q is %s, want a boolean; ignored", k, jsonType(v))
		}
	}
	return false
}
