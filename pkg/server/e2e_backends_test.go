package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/control/controltest"
	"github.com/NoLagApp/kraken/pkg/control/httpcontrol"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// The control plane (wire-reference.md §5.2) and customer webhooks (§5.3) behind
// a real server, against real HTTP servers.

// startWithControl runs a server whose publishes and subscriptions are
// reported to a fake control plane, flushing usage every interval.
func startWithControl(t *testing.T, interval time.Duration) (*Server, *controltest.Server, *control.Batcher) {
	t.Helper()
	cs := controltest.NewServer(t, "/v1/control")
	hc, err := httpcontrol.New(httpcontrol.Config{BaseURL: cs.URL, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	b := control.New(control.Config{Controller: hc, Node: "test", UsageInterval: interval,
		SubscriptionInterval: 20 * time.Millisecond})
	b.Start()
	t.Cleanup(func() { _ = b.Close(t.Context()); _ = hc.Close() })
	s := start(t, func(c *testConfig) { c.Control = b })
	return s, cs, b
}

func TestBlockedProjectsPublishesAreRefusedWith42920(t *testing.T) {
	s, cs, b := startWithControl(t, 50*time.Millisecond)
	cs.SetUsageAnswer(controltest.UsageAnswer{Blocked: []string{"demo-project"}})
	alice := authed(t, s, "dev-token-alice", "protocolVersion", 2)
	alice.Send("type", "publish", "topic", "demo/general/q", "data", map[string]any{"n": 1}, "msgRef", "1")
	alice.ExpectFields("type", "published", "msgRef", "1")
	waitFor(t, 5*time.Second, func() bool { return b.Blocked("demo-project") })
	// Before the grant check: blocked even on a forbidden topic (§6.12).
	for _, topic := range []string{"demo/general/q", "other/room/x"} {
		alice.Send("type", "publish", "topic", topic, "data", 2, "msgRef", "q")
		alice.ExpectFields("type", "error", "code", 42920, "error", "monthly_quota_exceeded", "topic", topic, "msgRef", "q")
	}
	usage := cs.Usage()
	if len(usage) == 0 || len(usage[0]) != 1 {
		t.Fatalf("usage reports %v", usage)
	}
	// One accepted publish; totalBytes is the JSON size of its data, {"n":1}.
	if e := usage[0][0]; e.ProjectID != "demo-project" || e.Count != 1 || e.TotalBytes != int64(len(`{"n":1}`)) {
		t.Fatalf("usage entry %+v", e)
	}
}

func TestSubscriptionChangesAreReported(t *testing.T) {
	s, cs, _ := startWithControl(t, time.Hour)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/jobs", "loadBalance", true, "loadBalanceGroup", "workers", "filters", []any{"red"})
	bob.Send("type", "setFilters", "topic", "demo/general/jobs", "filters", []any{"blue"})
	bob.ExpectType("filtersUpdated")
	bob.Send("type", "unsubscribe", "topic", "demo/general/jobs")
	bob.ExpectType("unsubscribed")
	var got []control.SubscriptionChange
	waitFor(t, 5*time.Second, func() bool {
		got = nil
		for _, batch := range cs.Subscriptions() {
			got = append(got, batch...)
		}
		return len(got) == 3
	})
	want := []string{
		`subscribe demo/general/jobs lb=true group=demo-project_demo-app_workers filters=["red"]`,
		`subscribe demo/general/jobs lb=false group= filters=["blue"]`,
		`unsubscribe demo/general/jobs lb=false group= filters=`,
	}
	for i, c := range got {
		line := fmt.Sprintf("%s %s lb=%v group=%s filters=%s", c.Action, c.Topic, c.LoadBalance, c.LoadBalanceGroup, c.Filters)
		if line != want[i] || c.ActorTokenID != "bob" {
			t.Errorf("change %d = %s (actor %s), want %s", i, line, c.ActorTokenID, want[i])
		}
	}
}

// hookSite is a customer's webhook server: /hydrate answers JSON, /publish
// records trigger bodies, /broken always fails with 503.
type hookSite struct {
	mu       sync.Mutex
	triggers []map[string]any
	hydrates []map[string]any
}

func (h *hookSite) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch r.URL.Path {
	case "/hydrate":
		h.hydrates = append(h.hydrates, m)
		_, _ = w.Write([]byte(`{"history":["one","two"]}`))
	case "/publish":
		h.triggers = append(h.triggers, m)
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
	}
}

// webhookAuth answers /validate with a grant whose app configures a
// trigger webhook for every topic and a hydration webhook for "history".
func webhookAuth(site string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			AccessToken string `json:"accessToken"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		trigger := site + "/publish"
		if req.AccessToken == "tok-carol" {
			trigger = site + "/broken"
		}
		fmt.Fprintf(w, `{"result":"allow","client_attrs":{"actor_token_id":%q,"organization_id":"org","project_id":"demo-project",
			"apps":[{"app_id":"demo-app","app_name":"demo",
			"allowed_topics":[{"pattern":"demo/general/#","topic":"demo-general","permission":"pubSub","room_id":"room-general","room_slug":"general"}],
			"trigger_webhook":{"url":%q,"headers":{"X-Customer-Key":"k-123"}},
			"topic_webhooks":{"history":{"on_subscribe":{"url":%q}}}}]}}`, req.AccessToken[4:], trigger, site+"/hydrate")
	})
}

func TestWebhooksHydrateAndTrigger(t *testing.T) {
	site := &hookSite{}
	hooks := httptest.NewServer(site)
	t.Cleanup(hooks.Close)
	authSrv := httptest.NewServer(webhookAuth(hooks.URL))
	t.Cleanup(authSrv.Close)
	hb, err := httpauth.New(httpauth.Config{BaseURL: authSrv.URL, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hb.Close() })
	cs := controltest.NewServer(t, "")
	hc, err := httpcontrol.New(httpcontrol.Config{BaseURL: cs.URL})
	if err != nil {
		t.Fatal(err)
	}
	b := control.New(control.Config{Controller: hc, Node: "test"})
	b.Start()
	d := webhook.New(webhook.Config{Backoff: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond},
		OnFailure: b.RecordWebhookFailure})
	t.Cleanup(func() { _ = d.Close(t.Context()); _ = b.Close(t.Context()); _ = hc.Close() })
	s := startWith(t, auth.NewCache(hb, 30*time.Second, 100, nil), func(c *testConfig) { c.Webhooks, c.Control = d, b })

	bob := authed(t, s, "tok-bob")
	subscribe(t, bob, "demo/general/history")
	bob.ExpectFields("type", "hydration", "topic", "history", "pattern", "demo/general/history",
		"data", map[string]any{"history": []any{"one", "two"}})

	alice := authed(t, s, "tok-alice")
	alice.Send("type", "publish", "topic", "demo/general/history", "data", map[string]any{"text": "hi", "raw": []byte("bytes")})
	bob.ExpectFields("type", "message", "topic", "demo/general/history")
	waitFor(t, 5*time.Second, func() bool { site.mu.Lock(); defer site.mu.Unlock(); return len(site.triggers) == 1 })
	site.mu.Lock()
	tr, hy := site.triggers[0], site.hydrates[0]
	site.mu.Unlock()
	wantTrigger := map[string]any{"roomName": "general", "topicName": "history", "actorId": "alice",
		"data": map[string]any{"text": "hi", "raw": "bytes"}, "scope": nil}
	if !sameJSON(tr, wantTrigger) {
		t.Errorf("trigger body %v, want %v", tr, wantTrigger)
	}
	wantHydrate := map[string]any{"actorId": "bob", "roomName": "general", "topicName": "history", "scope": nil}
	if !sameJSON(hy, wantHydrate) {
		t.Errorf("hydration body %v, want %v", hy, wantHydrate)
	}

	// A trigger that keeps failing is retried, then reported to the control
	// plane with its header values redacted (OQ-63).
	carol := authed(t, s, "tok-carol")
	carol.Send("type", "publish", "topic", "demo/general/x", "data", 1, "msgRef", "c")
	carol.ExpectFields("type", "published", "msgRef", "c")
	var failure map[string]any
	waitFor(t, 5*time.Second, func() bool {
		fs := cs.Failures()
		if len(fs) == 0 {
			return false
		}
		return json.Unmarshal(fs[0], &failure) == nil
	})
	if failure["errorMessage"] != "max_retries_exceeded" || failure["webhookUrl"] != hooks.URL+"/broken" ||
		!sameJSON(failure["requestHeaders"], map[string]any{"X-Customer-Key": "[redacted]"}) {
		t.Fatalf("failure report %v", failure)
	}
}
