package httpauth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
)

func readFixture(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "client_attrs.json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// fixtureGrant is testdata/client_attrs.json written out by hand
// (wire-reference.md §4.2, §5.1, OQ-6, OQ-19, OQ-39, OQ-40).
var fixtureGrant = &auth.Grant{
	ActorTokenID:   "7d2f4c1e-2b7a-4c55-9a0e-5f3b8d1c0a91",
	OrganizationID: "org_01HZX3K9QF",
	ProjectID:      "prj_01HZX3M2B7",
	ActorType:      "device",
	ScopeSlug:      "eu-west",
	ScopeID:        "scp_5e1d",
	ScopeName:      "EU West",
	AppID:          "app_support",
	AppName:        "support",
	Rules: acl.Rules{
		{Pattern: "support/eu-west/tickets/updates", Topic: "scp_5e1d/room_tk7/updates", Permission: acl.PermPubSub,
			RoomID: "room_tk7", RoomSlug: "tickets", RoomName: "Tickets", AppID: "app_support", AppName: "support"},
		{Pattern: "support/eu-west/tickets/#", Permission: acl.PermSubscribe,
			RoomID: "room_tk7", RoomSlug: "tickets", AppID: "app_support", AppName: "support"},
		{Pattern: "support/eu-west/agents/presence", Topic: "scp_5e1d/room_ag2/presence", Permission: acl.PermPublish,
			RoomID: "room_ag2", RoomSlug: "agents", AppID: "app_support", AppName: "support"},
		{Pattern: "billing/eu-west/invoices/+", Permission: acl.PermSubscribe,
			RoomID: "room_inv1", RoomSlug: "invoices", AppID: "app_billing", AppName: "billing"},
	},
	ActiveSubscriptions: []auth.Subscription{
		{Pattern: "support/eu-west/tickets/updates"},
		{Pattern: "support/eu-west/tickets/#", LoadBalance: true, LoadBalanceGroup: "ticket-workers",
			Filters: []string{"priority-high", "priority-urgent"}},
		{Pattern: "support/eu-west/agents/presence"},
		{Pattern: "billing/eu-west/invoices/paid", LoadBalance: true, LoadBalanceGroup: "ledger"},
	},
	Lobbies: []auth.Lobby{
		{Slug: "support-floor", ID: "lob_77a1", Rooms: []string{"room_tk7", "room_ag2"}},
		{Slug: "all-rooms", ID: "lob_0000"},
	},
	MaxConnections:    250,
	MaxMessageSize:    65536,
	RateLimit:         20,
	PersistentSession: true,
	SessionExpiry:     time.Hour,
	ExpiresAt:         time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC),
	Apps: []auth.App{
		{
			ID: "app_support", Name: "support",
			Hydration: &auth.Webhook{URL: "https://hooks.acme.example/kraken/hydrate",
				Headers: map[string]string{"X-Acme-Signature": "sig-hydrate"}},
			TopicWebhooks: map[string]auth.TopicWebhooks{
				"updates": {
					OnSubscribe: &auth.Webhook{URL: "https://hooks.acme.example/kraken/updates/hydrate"},
					OnPublish: &auth.Webhook{URL: "https://hooks.acme.example/kraken/updates/trigger",
						Headers: map[string]string{"Authorization": "Bearer hook-secret"}},
				},
			},
		},
		{
			ID: "app_billing", Name: "billing",
			Trigger: &auth.Webhook{URL: "https://billing.acme.example/kraken/trigger"},
		},
	},
}

func TestClientAttrsFixture(t *testing.T) {
	attrs := readFixture(t)
	s := newAuthServer(t, plainHTTP, reply(200, `{"result":"allow","client_attrs":`+attrs+`}`))
	b := newBackend(t, s, Config{})
	g, err := b.Validate(bg, "tok")
	if err != nil {
		t.Fatal(err)
	}
	diffGrant(t, g, fixtureGrant)

	// Webhook lookup works on the mapped apps (§5.3).
	app := g.App("app_support")
	if w := app.HydrationFor("updates"); w == nil || w.URL != "https://hooks.acme.example/kraken/updates/hydrate" {
		t.Errorf("HydrationFor(updates) = %+v", w)
	}
	if w := app.HydrationFor("presence"); w == nil || w.URL != "https://hooks.acme.example/kraken/hydrate" {
		t.Errorf("HydrationFor(presence) = %+v, want the app-level webhook", w)
	}
	if w := app.TriggerFor("presence"); w != nil {
		t.Errorf("TriggerFor(presence) = %+v, want nil (trigger_webhook is null)", w)
	}
	if w := g.App("app_billing").TriggerFor("paid"); w == nil || w.URL != "https://billing.acme.example/kraken/trigger" {
		t.Errorf("billing TriggerFor = %+v", w)
	}

	// The same attributes at the top level of a revalidate answer give the
	// same Grant, but for the token's expiry: a revalidation is about the
	// actor, not a token.
	s.setHandler(reply(200, `{"valid":true,`+strings.TrimPrefix(strings.TrimSpace(attrs), "{")))
	g2, err := b.Revalidate(bg, fixtureGrant.ActorTokenID)
	if err != nil {
		t.Fatal(err)
	}
	noExpiry := *fixtureGrant
	noExpiry.ExpiresAt = time.Time{}
	diffGrant(t, g2, &noExpiry)
}

// TestAuthExpiresAt: /validate's auth_expires_at is the token's expiry, as
// unix seconds (nolag-core: a client token's JWT exp) or an RFC 3339
// string; absent, null or unusable is no expiry.
func TestAuthExpiresAt(t *testing.T) {
	tests := []struct {
		name string
		give string // the value of auth_expires_at; "" leaves it out
		want time.Time
	}{
		{"absent", "", time.Time{}},
		{"null", `null`, time.Time{}},
		{"unix seconds", `1924992000`, time.Unix(1924992000, 0)},
		{"fractional seconds", `1924992000.5`, time.Unix(1924992000, 5e8)},
		{"RFC 3339", `"2031-01-01T00:00:00.000Z"`, time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"zero", `0`, time.Time{}},
		{"negative", `-5`, time.Time{}},
		{"past year 9999", `1e12`, time.Time{}},
		{"not a time", `"tomorrow"`, time.Time{}},
		{"boolean", `true`, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs := `"actor_token_id":"a"`
			if tt.give != "" {
				attrs += `,"auth_expires_at":` + tt.give
			}
			s := newAuthServer(t, plainHTTP, reply(200, `{"result":"allow","client_attrs":{`+attrs+`}}`))
			g, err := newBackend(t, s, Config{}).Validate(bg, "tok")
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !g.ExpiresAt.Equal(tt.want) {
				t.Fatalf("ExpiresAt = %v, want %v", g.ExpiresAt, tt.want)
			}
		})
	}
}

// diffGrant reports every field of got that differs from want.
func diffGrant(t *testing.T, got, want *auth.Grant) {
	t.Helper()
	gv, wv := reflect.ValueOf(*got), reflect.ValueOf(*want)
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("%s:\n got  %s\n want %s", gv.Type().Field(i).Name, show(gv.Field(i).Interface()), show(wv.Field(i).Interface()))
		}
	}
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// TestSameGrantAsStatic: one app's worth of data through the token file and
// through client_attrs gives the same Grant (wire-reference.md §4.2).
func TestSameGrantAsStatic(t *testing.T) {
	file := `{"tokens":{"tok":{
		"actorTokenId":"alice","organizationId":"org","projectId":"prj","scopeSlug":"eu","rateLimit":7.9,
		"maxConnections":3,"maxMessageSizeBytes":1024,
		"allowedTopics":[
			{"pattern":"demo/general/#","topic":"demo-general","permission":"pubSub","room_id":"room-general","room_slug":"general","app_id":"demo-app","app_name":"demo"},
			{"pattern":"demo/ro/+","permission":"subscribe","roomName":"Read only"},
			{"pattern":"x/#","permission":"bogus"}],
		"activeSubscriptions":["demo/general/a",{"name":"demo/general/b","loadBalance":true,"filters":["f",1]},{"pattern":""}],
		"allowedLobbies":[{"lobby_slug":"l","lobby_id":"L","rooms":[]},{"lobby_slug":"m","lobby_id":"M"},{"lobby_slug":"n"}]}}}`
	attrs := `{"actor_token_id":"alice","organization_id":"org","project_id":"prj","scope_slug":"eu","rate_limit":7.9,
		"max_connections":3,"max_message_size_bytes":1024,
		"apps":[{"app_id":"demo-app","app_name":"demo",
			"allowed_topics":[
				{"pattern":"demo/general/#","topic":"demo-general","permission":"pubSub","room_id":"room-general","room_slug":"general"},
				{"pattern":"demo/ro/+","permission":"subscribe","roomName":"Read only"},
				{"pattern":"x/#","permission":"bogus"}],
			"active_subscriptions":["demo/general/a",{"name":"demo/general/b","loadBalance":true,"filters":["f",1]},{"pattern":""}],
			"allowed_lobbies":[{"lobby_slug":"l","lobby_id":"L","room_ids":[]},{"lobby_slug":"m","lobby_id":"M"},{"lobby_slug":"n"}]}]}`

	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := static.New(static.Config{Path: path, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want, err := st.Validate(bg, "tok")
	if err != nil {
		t.Fatal(err)
	}
	s := newAuthServer(t, plainHTTP, reply(200, `{"result":"allow","client_attrs":`+attrs+`}`))
	got, err := newBackend(t, s, Config{}).Validate(bg, "tok")
	if err != nil {
		t.Fatal(err)
	}
	// Apps exist only in the HTTP shape (the static file has no apps yet).
	got.Apps = nil
	diffGrant(t, got, want)
}

// TestWrongTypedAttributes: a wrong-typed optional attribute is ignored with
// a debug line and the validation still succeeds (OQ-29).
func TestWrongTypedAttributes(t *testing.T) {
	tests := []struct {
		name  string
		attrs string // inside client_attrs, after actor_token_id
		check func(*auth.Grant) bool
	}{
		{"organization_id number", `"organization_id":5`, func(g *auth.Grant) bool { return g.OrganizationID == "" }},
		{"actor_type object", `"actor_type":{}`, func(g *auth.Grant) bool { return g.ActorType == "user" }},
		{"max_connections string", `"max_connections":"10"`, func(g *auth.Grant) bool { return g.MaxConnections == 0 }},
		{"max_connections float", `"max_connections":2.5`, func(g *auth.Grant) bool { return g.MaxConnections == 0 }},
		{"max_connections negative", `"max_connections":-1`, func(g *auth.Grant) bool { return g.MaxConnections == 0 }},
		{"max_message_size_bytes zero", `"max_message_size_bytes":0`, func(g *auth.Grant) bool { return g.MaxMessageSize == 0 }},
		{"rate_limit below one rounds up", `"rate_limit":0.5`, func(g *auth.Grant) bool { return g.RateLimit == 1 }},
		{"rate_limit huge", `"rate_limit":1e300`, func(g *auth.Grant) bool { return g.RateLimit == 0 }},
		{"persistent_session string", `"persistent_session":"true"`, func(g *auth.Grant) bool { return !g.PersistentSession }},
		{"session_expiry_seconds negative", `"session_expiry_seconds":-5`, func(g *auth.Grant) bool { return g.SessionExpiry == 0 }},
		{"session_expiry_seconds huge", `"session_expiry_seconds":1e30`, func(g *auth.Grant) bool { return g.SessionExpiry == 0 }},
		{"apps object", `"apps":{"app_id":"a"}`, func(g *auth.Grant) bool { return g.Apps == nil && g.Rules == nil }},
		{"app not an object", `"apps":["a",{"app_id":"b"}]`, func(g *auth.Grant) bool { return len(g.Apps) == 1 && g.AppID == "b" }},
		{"allowed_topics string", `"apps":[{"app_id":"a","allowed_topics":"x"}]`, func(g *auth.Grant) bool { return g.Rules == nil }},
		{"rule not an object", `"apps":[{"app_id":"a","allowed_topics":[1,{"pattern":"p"}]}]`,
			func(g *auth.Grant) bool {
				return len(g.Rules) == 1 && g.Rules[0].Pattern == "p" && g.Rules[0].AppID == "a"
			}},
		{"rule permission number", `"apps":[{"app_id":"a","allowed_topics":[{"pattern":"p","permission":3}]}]`,
			func(g *auth.Grant) bool { return len(g.Rules) == 1 && g.Rules[0].Permission == acl.PermNone }},
		{"subscription number", `"apps":[{"active_subscriptions":[1,"p"]}]`,
			func(g *auth.Grant) bool { return len(g.ActiveSubscriptions) == 1 }},
		{"subscription filters string", `"apps":[{"active_subscriptions":[{"pattern":"p","filters":"f"}]}]`,
			func(g *auth.Grant) bool {
				return len(g.ActiveSubscriptions) == 1 && g.ActiveSubscriptions[0].Filters == nil
			}},
		{"subscription load_balance string", `"apps":[{"active_subscriptions":[{"pattern":"p","load_balance":"yes","loadBalance":true}]}]`,
			func(g *auth.Grant) bool { return g.ActiveSubscriptions[0].LoadBalance }},
		{"lobby room_ids string", `"apps":[{"allowed_lobbies":[{"lobby_slug":"l","lobby_id":"L","room_ids":"r"}]}]`,
			func(g *auth.Grant) bool { return len(g.Lobbies) == 1 && g.Lobbies[0].Rooms == nil }},
		{"webhook string", `"apps":[{"app_id":"a","hydration_webhook":"https://x"}]`,
			func(g *auth.Grant) bool { return g.Apps[0].Hydration == nil }},
		{"webhook without url", `"apps":[{"app_id":"a","trigger_webhook":{"headers":{}}}]`,
			func(g *auth.Grant) bool { return g.Apps[0].Trigger == nil }},
		{"webhook header number", `"apps":[{"app_id":"a","trigger_webhook":{"url":"u","headers":{"a":"1","b":2}}}]`,
			func(g *auth.Grant) bool {
				return reflect.DeepEqual(g.Apps[0].Trigger.Headers, map[string]string{"a": "1"})
			}},
		{"webhook headers array", `"apps":[{"app_id":"a","trigger_webhook":{"url":"u","headers":["a"]}}]`,
			func(g *auth.Grant) bool { return g.Apps[0].Trigger.URL == "u" && g.Apps[0].Trigger.Headers == nil }},
		{"topic_webhooks array", `"apps":[{"app_id":"a","topic_webhooks":[]}]`,
			func(g *auth.Grant) bool { return g.Apps[0].TopicWebhooks == nil }},
		{"topic webhook string", `"apps":[{"app_id":"a","topic_webhooks":{"t":"u","v":{"on_publish":{"url":"w"}}}}]`,
			func(g *auth.Grant) bool {
				return len(g.Apps[0].TopicWebhooks) == 1 && g.Apps[0].TopicWebhooks["v"].OnPublish.URL == "w"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log, logs := observed()
			s := newAuthServer(t, plainHTTP, reply(200, `{"result":"allow","client_attrs":{"actor_token_id":"a",`+tt.attrs+`}}`))
			g, err := newBackend(t, s, Config{Logger: log}).Validate(bg, "tok")
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !tt.check(g) {
				t.Fatalf("grant = %s", show(g))
			}
			if tt.name != "rate_limit below one rounds up" && logs.FilterMessage("auth backend attribute of the wrong type ignored").Len() == 0 {
				t.Fatal("no debug line for the ignored attribute")
			}
		})
	}
}

// TestRevalidateNarrowsRules: a valid revalidation replaces the grant, so a
// rule the backend no longer lists stops granting (wire-reference.md §4.9).
func TestRevalidateNarrowsRules(t *testing.T) {
	s := newAuthServer(t, plainHTTP, reply(200, `{"result":"allow","client_attrs":`+readFixture(t)+`}`))
	b := newBackend(t, s, Config{})
	g, err := b.Validate(bg, "tok")
	if err != nil {
		t.Fatal(err)
	}
	const billing = "billing/eu-west/invoices/paid"
	if d := g.Rules.Check(billing, acl.OpSubscribe); d != acl.Allowed {
		t.Fatalf("before: %v", d)
	}
	s.setHandler(reply(200, `{"valid":true,"actor_token_id":"7d2f4c1e-2b7a-4c55-9a0e-5f3b8d1c0a91","project_id":"prj_01HZX3M2B7",
		"apps":[{"app_id":"app_support","app_name":"support","allowed_topics":[
			{"pattern":"support/eu-west/tickets/#","permission":"subscribe","room_id":"room_tk7","room_slug":"tickets"}]}]}`))
	g2, err := b.Revalidate(bg, g.ActorTokenID)
	if err != nil {
		t.Fatal(err)
	}
	want := acl.Rules{{Pattern: "support/eu-west/tickets/#", Permission: acl.PermSubscribe, RoomID: "room_tk7",
		RoomSlug: "tickets", AppID: "app_support", AppName: "support"}}
	if !reflect.DeepEqual(g2.Rules, want) {
		t.Fatalf("rules = %s", show(g2.Rules))
	}
	if d := g2.Rules.Check(billing, acl.OpSubscribe); d != acl.DeniedNoRule {
		t.Fatalf("after: %v, want denied", d)
	}
	if g2.MaxConnections != 0 || g2.Lobbies != nil || len(g2.Apps) != 1 {
		t.Fatalf("the whole grant is replaced, not merged: %s", show(g2))
	}
}

func TestRulesAppResolution(t *testing.T) {
	// A rule takes its enclosing app; an app without app_id lets the rule's
	// own app_id through, else the token-level app (OQ-39).
	attrs := `{"actor_token_id":"a","apps":[
		{"app_id":"A","app_name":"alpha","allowed_topics":[{"pattern":"1","app_id":"other","app_name":"o"}]},
		{"allowed_topics":[{"pattern":"2","app_id":"B","app_name":"beta"},{"pattern":"3"}]}]}`
	s := newAuthServer(t, plainHTTP, reply(200, `{"result":"allow","client_attrs":`+attrs+`}`))
	g, err := newBackend(t, s, Config{}).Validate(bg, "tok")
	if err != nil {
		t.Fatal(err)
	}
	type app struct{ id, name string }
	var got []app
	for _, r := range g.Rules {
		got = append(got, app{r.AppID, r.AppName})
	}
	want := []app{{"A", "alpha"}, {"B", "beta"}, {"A", "alpha"}}
	if !reflect.DeepEqual(got, want) || g.AppID != "A" || g.AppName != "alpha" {
		t.Fatalf("rule apps = %v, token app %q/%q", got, g.AppID, g.AppName)
	}
}
