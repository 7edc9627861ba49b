package static

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

// tokenSet is one parsed token file. It is never modified once built.
type tokenSet struct {
	byToken map[string]*auth.Grant // byte-exact token -> grant (wire-reference.md §4.1)
	byActor map[string]*auth.Grant // actorTokenId -> grant of its first entry (§4.9)
	rules   []acl.Rules            // the distinct rule lists of the grants, in file order (RuleSets)
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// parseTokenFile parses the token file of wire-reference.md §4.1. The error, if
// any, is the reason only (the caller adds the path); syntax errors carry
// the line and column. Problems inside a token entry are logged as warnings
// and never fail the file (OQ-29).
func parseTokenFile(data []byte, path string, log *zap.Logger) (*tokenSet, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	var top json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, errors.New(describeJSONError(data, err))
	}
	if t := rawType(top); t != "an object" {
		return nil, fmt.Errorf("%s: the top-level value is %s, want an object with a \"tokens\" object",
			position(data, len(data)-len(bytes.TrimLeft(data, " \t\r\n"))), t)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(top, &fields); err != nil {
		return nil, errors.New(describeJSONError(data, err))
	}

	set := &tokenSet{byToken: map[string]*auth.Grant{}, byActor: map[string]*auth.Grant{}}
	for k := range fields {
		if k != "tokens" && !strings.HasPrefix(k, "_") {
			log.Warn("unknown top-level key in auth file ignored (keys starting with _ are comments)",
				zap.String("path", path), zap.String("key", k))
		}
	}
	raw, ok := fields["tokens"]
	if !ok || rawType(raw) == "null" {
		log.Warn("auth file has no \"tokens\" object: no token is accepted", zap.String("path", path))
		return set, nil
	}
	if t := rawType(raw); t != "an object" {
		at := newJSONParser(data).value().get("tokens").off
		return nil, fmt.Errorf("%s: \"tokens\" is %s, want an object", position(data, at), t)
	}
	members, err := orderedObject(raw)
	if err != nil {
		return nil, errors.New(describeJSONError(data, err))
	}
	for i, m := range members {
		d := entryDecoder{log: log, path: path, entry: i + 1}
		g := d.grant(m.Value)
		if g == nil {
			continue
		}
		set.byToken[m.Key] = g
		if _, dup := set.byActor[g.ActorTokenID]; !dup {
			set.byActor[g.ActorTokenID] = g
		}
	}
	set.rules = distinctRules(members, set.byToken)
	return set, nil
}

// distinctRules lists the rule lists of the grants in force, in file order,
// once for each distinct routing they give (their rules' patterns, topics
// and apps): tokens of one app usually share theirs, and POST
// /internal/publish reads its topic against every list (acl.Place).
func distinctRules(members []orderedMember, byToken map[string]*auth.Grant) []acl.Rules {
	var out []acl.Rules
	seen := map[string]bool{}
	var key strings.Builder
	for _, m := range members {
		g := byToken[m.Key]
		if g == nil || len(g.Rules) == 0 {
			continue
		}
		key.Reset()
		for _, r := range g.Rules {
			for _, f := range [...]string{r.Pattern, r.Topic, r.AppID} { // what routing reads
				key.WriteString(strconv.Quote(f))
			}
		}
		if !seen[key.String()] {
			seen[key.String()] = true
			out = append(out, g.Rules)
		}
	}
	return out
}

// entryDecoder decodes one token entry, logging what it has to ignore. Token
// strings are secrets, so warnings name the entry by its 1-based position.
type entryDecoder struct {
	log   *zap.Logger
	path  string
	entry int
}

func (d entryDecoder) warn(format string, args ...any) {
	d.log.Warn(fmt.Sprintf("Auth file %s: token entry %d: %s", d.path, d.entry, fmt.Sprintf(format, args...)),
		zap.String("path", d.path), zap.Int("entry", d.entry))
}

// grant builds the Grant for one entry, or nil when the entry is unusable:
// not an object, or without a string actorTokenId (OQ-29).
func (d entryDecoder) grant(raw json.RawMessage) *auth.Grant {
	var m map[string]any
	if err := decodeNumbers(raw, &m); err != nil || m == nil {
		d.warn("the entry is %s, want an object; the token is refused", rawType(raw))
		return nil
	}
	actor := d.str(m, "actorTokenId")
	if actor == "" {
		d.warn("no actorTokenId string; the token is refused")
		return nil
	}
	g := &auth.Grant{
		ActorTokenID:        actor,
		OrganizationID:      d.str(m, "organizationId"),
		ProjectID:           d.str(m, "projectId"),
		ActorType:           d.str(m, "actorType"),
		ScopeSlug:           d.str(m, "scopeSlug"),
		AppID:               d.str(m, "appId"),
		AppName:             d.str(m, "appName"),
		Rules:               d.rules(m),
		ActiveSubscriptions: d.subscriptions(m),
		Lobbies:             d.lobbies(m),
		MaxConnections:      d.positiveInt(m, "maxConnections"),
		MaxMessageSize:      d.positiveInt(m, "maxMessageSizeBytes"),
		RateLimit:           d.rate(m, "rateLimit"),
		PersistentSession:   d.firstBool(m, "persistentSession"),
		SessionExpiry:       time.Duration(d.positiveInt(m, "sessionExpirySeconds")) * time.Second,
	}
	if g.ActorType == "" {
		g.ActorType = "user"
	}
	g.AppID, g.AppName = g.Rules.ResolveApps(g.AppID, g.AppName)
	return g
}

// str returns m[key] when it is a string. An absent or null key is "";
// another type is ignored with a warning.
func (d entryDecoder) str(m map[string]any, key string) string {
	switch v := m[key].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		d.warn("%q is %s, want a string; ignored", key, jsonType(v))
		return ""
	}
}

// array returns m[key] when it is an array; null or absent is nil, another
// type is ignored with a warning.
func (d entryDecoder) array(m map[string]any, key string) []any {
	switch v := m[key].(type) {
	case nil:
		return nil
	case []any:
		return v
	default:
		d.warn("%q is %s, want an array; ignored", key, jsonType(v))
		return nil
	}
}

// positiveInt returns m[key] when it is an integer > 0; otherwise 0, with a
// warning unless the key is absent or null (wire-reference.md §4.1, §4.11).
func (d entryDecoder) positiveInt(m map[string]any, key string) int {
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil && i > 0 && int64(int(i)) == i {
			return int(i)
		}
	}
	d.warn("%q is %s, want an integer > 0; ignored", key, describe(v))
	return 0
}

// rate returns m[key] when it is a number > 0, rounded down but at least 1
// (OQ-6); otherwise 0, with a warning unless the key is absent or null.
func (d entryDecoder) rate(m map[string]any, key string) int {
	v, ok := m[key]
	if !ok || v == nil {
		return 0
	}
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil && f > 0 && f <= maxRate {
			return max(int(f), 1)
		}
	}
	d.warn("%q is %s, want a number > 0; ignored", key, describe(v))
	return 0
}

// maxRate bounds a per-token rate limit so the conversion to int is exact.
const maxRate = 1 << 30

// describe renders a value for a warning: numbers as themselves, other
// values by JSON type.
func describe(v any) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return jsonType(v)
}
