package httpauth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

// object is a decoded JSON object whose values are still raw.
type object map[string]json.RawMessage

// parseObject decodes raw as a JSON object. ok is false for anything else,
// null included.
func parseObject(raw json.RawMessage) (o object, ok bool) {
	if err := json.Unmarshal(raw, &o); err != nil || o == nil {
		return nil, false
	}
	return o, true
}

// jsonKind names the JSON type of raw for log lines.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "empty"
	}
	switch c := raw[0]; {
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	default:
		return "a number"
	}
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// attrDecoder maps the attributes of wire-reference.md §5.1 (client_attrs, or the
// revalidate body) into a Grant. Wrongly typed optional attributes are
// ignored with a debug line; it never panics (OQ-29).
type attrDecoder struct {
	log      *zap.Logger
	endpoint string
}

func (d attrDecoder) ignore(key string, raw json.RawMessage, want string) {
	if ce := d.log.Check(zap.DebugLevel, "auth backend attribute of the wrong type ignored"); ce != nil {
		ce.Write(zap.String("endpoint", d.endpoint), zap.String("key", key),
			zap.String("got", jsonKind(raw)), zap.String("want", want))
	}
}

// grant builds the Grant of one attribute object. actor is the required
// actor_token_id; the caller checks it first with actorID.
func (d attrDecoder) grant(o object, actor string) *auth.Grant {
	g := &auth.Grant{
		ActorTokenID:      actor,
		OrganizationID:    d.str(o, "organization_id"),
		ProjectID:         d.str(o, "project_id"),
		ActorType:         d.str(o, "actor_type"),
		ScopeSlug:         d.str(o, "scope_slug"),
		ScopeID:           d.str(o, "scope_id"),
		ScopeName:         d.str(o, "scope_name"),
		MaxConnections:    d.positiveInt(o, "max_connections"),
		MaxMessageSize:    d.positiveInt(o, "max_message_size_bytes"),
		RateLimit:         d.rate(o, "rate_limit"),
		PersistentSession: d.boolean(o, "persistent_session"),
		SessionExpiry:     d.seconds(o, "session_expiry_seconds"),
	}
	if g.ActorType == "" {
		g.ActorType = "user"
	}
	var appID, appName string
	for i, raw := range d.array(o, "apps") {
		a, ok := parseObject(raw)
		if !ok {
			d.ignore(fmt.Sprintf("apps[%d]", i), raw, "an object")
			continue
		}
		app := auth.App{
			ID:            d.str(a, "app_id"),
			Name:          d.str(a, "app_name"),
			Hydration:     d.webhook(a, "hydration_webhook"),
			Trigger:       d.webhook(a, "trigger_webhook"),
			TopicWebhooks: d.topicWebhooks(a),
		}
		if len(g.Apps) == 0 {
			appID, appName = app.ID, app.Name
		}
		g.Apps = append(g.Apps, app)
		for _, r := range d.rules(a, "allowed_topics") {
			// Rules belong to their enclosing app (wire-reference.md §4.2); a
			// rule's own app_id counts only when the app names none.
			if app.ID != "" {
				r.AppID = app.ID
			}
			if app.Name != "" {
				r.AppName = app.Name
			}
			g.Rules = append(g.Rules, r)
		}
		g.ActiveSubscriptions = append(g.ActiveSubscriptions, d.subscriptions(a)...)
		g.Lobbies = append(g.Lobbies, d.lobbies(a)...)
	}
	g.AppID, g.AppName = g.Rules.ResolveApps(appID, appName)
	return g
}

// actorID returns the required actor_token_id: a non-empty string.
func (d attrDecoder) actorID(o object) (string, bool) {
	raw, ok := o["actor_token_id"]
	if !ok || isNull(raw) {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || s == "" {
		return "", false
	}
	return s, true
}

// str returns o[key] when it is a string; absent or null is "".
func (d attrDecoder) str(o object, key string) string {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		d.ignore(key, raw, "a string")
		return ""
	}
	return s
}

// firstStr returns the first of keys present with a non-empty string.
func (d attrDecoder) firstStr(o object, keys ...string) string {
	for _, k := range keys {
		if s := d.str(o, k); s != "" {
			return s
		}
	}
	return ""
}

// boolean returns o[key] when it is a boolean; otherwise false.
func (d attrDecoder) boolean(o object, key string) bool {
	v, _ := d.optBool(o, key)
	return v
}

// optBool returns o[key] and true when it is a boolean.
func (d attrDecoder) optBool(o object, key string) (v, ok bool) {
	raw, present := o[key]
	if !present || isNull(raw) {
		return false, false
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		d.ignore(key, raw, "a boolean")
		return false, false
	}
	return v, true
}

// firstBool returns the first of keys present as a boolean.
func (d attrDecoder) firstBool(o object, keys ...string) bool {
	for _, k := range keys {
		if v, ok := d.optBool(o, k); ok {
			return v
		}
	}
	return false
}

// number returns o[key] when it is a JSON number (a numeric string is not).
func (d attrDecoder) number(o object, key, want string) (json.Number, bool) {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return "", false
	}
	var n json.Number
	if jsonKind(raw) != "a number" || json.Unmarshal(raw, &n) != nil {
		d.ignore(key, raw, want)
		return "", false
	}
	return n, true
}

// positiveInt returns o[key] when it is an integer > 0, else 0 (§4.11,
// OQ-7: 0 means no per-token value).
func (d attrDecoder) positiveInt(o object, key string) int {
	n, ok := d.number(o, key, "an integer > 0")
	if !ok {
		return 0
	}
	if i, err := n.Int64(); err == nil && i > 0 && int64(int(i)) == i {
		return int(i)
	}
	d.ignore(key, json.RawMessage(n), "an integer > 0")
	return 0
}

// maxRate bounds a per-token rate limit so the conversion to int is exact.
const maxRate = 1 << 30

// rate returns o[key] when it is a number > 0, rounded down but at least 1
// (OQ-6, as the static backend reads rateLimit); otherwise 0.
func (d attrDecoder) rate(o object, key string) int {
	n, ok := d.number(o, key, "a number > 0")
	if !ok {
		return 0
	}
	if f, err := n.Float64(); err == nil && f > 0 && f <= maxRate {
		return max(int(f), 1)
	}
	d.ignore(key, json.RawMessage(n), "a number > 0")
	return 0
}

// maxExpirySeconds keeps a session expiry within time.Duration.
const maxExpirySeconds = math.MaxInt64 / int64(time.Second)

// seconds returns o[key], an integer >= 0, as a duration; otherwise 0.
func (d attrDecoder) seconds(o object, key string) time.Duration {
	n, ok := d.number(o, key, "an integer >= 0")
	if !ok {
		return 0
	}
	if i, err := n.Int64(); err == nil && i >= 0 && i <= maxExpirySeconds {
		return time.Duration(i) * time.Second
	}
	d.ignore(key, json.RawMessage(n), "an integer >= 0")
	return 0
}

// maxUnixSeconds is the last second of year 9999, the bound of RFC 3339.
const maxUnixSeconds = 253402300799

// expiry returns o[key] as a time: a JSON number of unix seconds > 0 (a
// client token's JWT exp, as nolag-core sends auth_expires_at) or an RFC
// 3339 string ("2031-01-01T00:00:00.000Z"). Absent or null is the zero time,
// no expiry; so is anything else, with a debug line.
func (d attrDecoder) expiry(o object, key string) time.Time {
	const want = "unix seconds > 0 or an RFC 3339 time"
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return time.Time{}
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return t
		}
		d.ignore(key, raw, want)
		return time.Time{}
	}
	n, ok := d.number(o, key, want)
	if !ok {
		return time.Time{}
	}
	if f, err := n.Float64(); err == nil && f > 0 && f <= maxUnixSeconds {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9))
	}
	d.ignore(key, json.RawMessage(n), want)
	return time.Time{}
}

// array returns the elements of o[key] when it is an array.
func (d attrDecoder) array(o object, key string) []json.RawMessage {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		d.ignore(key, raw, "an array")
		return nil
	}
	return items
}

// strings returns the string elements of the array o[key]; other elements
// are dropped.
func (d attrDecoder) strings(o object, key string) []string {
	var out []string
	for i, raw := range d.array(o, key) {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || isNull(raw) {
			d.ignore(fmt.Sprintf("%s[%d]", key, i), raw, "a string")
			continue
		}
		out = append(out, s)
	}
	return out
}

// rules decodes an allowed_topics array: {pattern, topic, permission,
// room_id, room_slug, roomName?, app_id?, app_name?} (§4.1, §5.1). Elements
// that are not objects are dropped; a missing pattern is "" and an unknown
// permission grants nothing but keeps the rule (§4.1).
func (d attrDecoder) rules(o object, key string) acl.Rules {
	items := d.array(o, key)
	if len(items) == 0 {
		return nil
	}
	out := make(acl.Rules, 0, len(items))
	for i, raw := range items {
		r, ok := parseObject(raw)
		if !ok {
			d.ignore(fmt.Sprintf("%s[%d]", key, i), raw, "an object")
			continue
		}
		out = append(out, acl.Rule{
			Pattern:    d.str(r, "pattern"),
			Topic:      d.str(r, "topic"),
			Permission: acl.ParsePermission(d.str(r, "permission")),
			RoomID:     d.str(r, "room_id"),
			RoomSlug:   d.str(r, "room_slug"),
			RoomName:   d.str(r, "roomName"),
			AppID:      d.str(r, "app_id"),
			AppName:    d.str(r, "app_name"),
		})
	}
	return out
}

// subscriptions decodes active_subscriptions (§2.6, OQ-53): strings are
// patterns; objects carry pattern|name, load_balance|loadBalance,
// load_balance_group|loadBalanceGroup and filters (strings only; `topic` is
// not kept, the server resolves the pattern itself). The snake_case key wins
// when both are present. Entries without a pattern are dropped.
func (d attrDecoder) subscriptions(o object) []auth.Subscription {
	var out []auth.Subscription
	for i, raw := range d.array(o, "active_subscriptions") {
		var s auth.Subscription
		if jsonKind(raw) == "a string" {
			_ = json.Unmarshal(raw, &s.Pattern)
		} else if v, ok := parseObject(raw); ok {
			s.Pattern = d.firstStr(v, "pattern", "name")
			s.LoadBalance = d.firstBool(v, "load_balance", "loadBalance")
			s.LoadBalanceGroup = d.firstStr(v, "load_balance_group", "loadBalanceGroup")
			s.Filters = d.strings(v, "filters")
		} else {
			d.ignore(fmt.Sprintf("active_subscriptions[%d]", i), raw, "a string or an object")
			continue
		}
		if s.Pattern == "" {
			d.ignore(fmt.Sprintf("active_subscriptions[%d]", i), raw, "an entry with a pattern")
			continue
		}
		out = append(out, s)
	}
	return out
}

// lobbies decodes allowed_lobbies: {lobby_slug, lobby_id, room_ids?}
// (§5.1, OQ-19). room_ids (or "rooms", the static file's key) is the
// explicit membership: absent means inferred (nil Rooms), an empty array an
// explicit empty lobby. Entries missing the slug or the id are dropped.
func (d attrDecoder) lobbies(o object) []auth.Lobby {
	var out []auth.Lobby
	for i, raw := range d.array(o, "allowed_lobbies") {
		v, ok := parseObject(raw)
		if !ok {
			d.ignore(fmt.Sprintf("allowed_lobbies[%d]", i), raw, "an object")
			continue
		}
		l := auth.Lobby{Slug: d.str(v, "lobby_slug"), ID: d.str(v, "lobby_id")}
		if l.Slug == "" || l.ID == "" {
			d.ignore(fmt.Sprintf("allowed_lobbies[%d]", i), raw, "an object with lobby_slug and lobby_id")
			continue
		}
		for _, key := range []string{"room_ids", "rooms"} {
			if jsonKind(v[key]) != "an array" {
				d.array(v, key) // logs a wrong type
				continue
			}
			l.Rooms = d.strings(v, key)
			if l.Rooms == nil {
				l.Rooms = []string{}
			}
			break
		}
		out = append(out, l)
	}
	return out
}

// webhook decodes {url, headers?} (§5.3); null, a missing or empty url, or
// another type is nil. Header values that are not strings are dropped.
func (d attrDecoder) webhook(o object, key string) *auth.Webhook {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil
	}
	v, ok := parseObject(raw)
	if !ok {
		d.ignore(key, raw, "an object")
		return nil
	}
	w := &auth.Webhook{URL: d.str(v, "url")}
	if w.URL == "" {
		d.ignore(key, raw, "an object with a url")
		return nil
	}
	if hraw, ok := v["headers"]; ok && !isNull(hraw) {
		h, ok := parseObject(hraw)
		if !ok {
			d.ignore(key+".headers", hraw, "an object")
		}
		for name, val := range h {
			var s string
			if err := json.Unmarshal(val, &s); err != nil || isNull(val) {
				d.ignore(key+".headers."+name, val, "a string")
				continue
			}
			if w.Headers == nil {
				w.Headers = make(map[string]string, len(h))
			}
			w.Headers[name] = s
		}
	}
	return w
}

// topicWebhooks decodes topic_webhooks: {"<topicName>": {on_subscribe?,
// on_publish?}} (§5.3). Topics with neither webhook are left out; nil when
// none is left.
func (d attrDecoder) topicWebhooks(o object) map[string]auth.TopicWebhooks {
	raw, ok := o["topic_webhooks"]
	if !ok || isNull(raw) {
		return nil
	}
	tw, ok := parseObject(raw)
	if !ok {
		d.ignore("topic_webhooks", raw, "an object")
		return nil
	}
	var out map[string]auth.TopicWebhooks
	for name, traw := range tw {
		t, ok := parseObject(traw)
		if !ok {
			d.ignore("topic_webhooks."+name, traw, "an object")
			continue
		}
		w := auth.TopicWebhooks{OnSubscribe: d.webhook(t, "on_subscribe"), OnPublish: d.webhook(t, "on_publish")}
		if w.OnSubscribe == nil && w.OnPublish == nil {
			continue
		}
		if out == nil {
			out = make(map[string]auth.TopicWebhooks, len(tw))
		}
		out[name] = w
	}
	return out
}
