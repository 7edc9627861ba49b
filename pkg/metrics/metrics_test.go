package metrics_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/node/nodetest"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// netpoll's pollers and the goroutine pool they hand reads to live for the
// whole process by design.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*manager).Run.func1"),
		goleak.IgnoreAnyFunction("github.com/bytedance/gopkg/util/gopool.(*worker).run.func1"),
	)
}

// tokenFile has a fast publisher, a subscriber and a publisher limited to
// one publish a second, all on demo/#.
const tokenFile = `{"tokens": {
  "tok-fast": {"actorTokenId": "fast", "rateLimit": 1000000, "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]},
  "tok-sub": {"actorTokenId": "sub", "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]},
  "tok-slow": {"actorTokenId": "slow", "rateLimit": 1, "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]}
}}`

// broker is a server on a token file with its /metrics endpoint.
type broker struct {
	srv     *server.Server
	st      *static.Static
	path    string
	metrics string // URL of /metrics
}

func start(t *testing.T) *broker { t.Helper(); return startWith(t, nil) }

// startWith is start with the server's Config changed by edit first.
func startWith(t *testing.T, edit func(*node.Config)) *broker {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := static.New(static.Config{Path: path, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cache := auth.NewCache(st, 30*time.Second, 1000, nil)
	cfg := node.Config{Session: session.Config{Auth: cache, RecordMessages: true},
		Hub: hub.Config{Workers: 2, Tick: 50 * time.Millisecond, OutboundMaxBytes: 64 << 10}}
	if edit != nil {
		edit(&cfg)
	}
	n, err := node.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(n, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	n.AddReadyCheck("token_file", st.Ready)
	nodetest.Start(t, n, srv)
	reg := metrics.NewRegistry(metrics.Sources{Components: []metrics.Component{n.Metrics("static", "local"), srv, st, cache},
		Version: "test"})
	hs := httptest.NewServer(metrics.Handler(reg))
	t.Cleanup(hs.Close)
	return &broker{srv: srv, st: st, path: path, metrics: hs.URL}
}

// scrape GETs /metrics and parses it with the Prometheus text parser.
func (b *broker) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(b.metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %s\n%s", resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value returns the value of the sample of name whose labels include the
// given name/value pairs; the test fails when there is none.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no sample of %s with %v", name, labels)
	return 0
}

// waitValue scrapes until the sample reaches want.
func (b *broker) waitValue(t *testing.T, want float64, name string, labels ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := value(t, b.scrape(t), name, labels...)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v = %v, want %v", name, labels, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRefusedTokenIsCounted: an unknown token moves
// kraken_auth_results_total{outcome="denied"} by one, an accepted one
// {outcome="ok"}, and the auth latency histogram counts both.
func TestRefusedTokenIsCounted(t *testing.T) {
	b := start(t)
	before := b.scrape(t)
	p := testpeer.Dial(t, b.srv.Addr().String())
	p.Send("type", "auth", "token", "no-such-token")
	p.ExpectFields("type", "auth", "success", false, "error", "access_denied")
	testpeer.Dial(t, b.srv.Addr().String()).Auth("tok-sub")
	after := b.scrape(t)
	for _, c := range []struct {
		outcome string
		delta   float64
	}{{"denied", 1}, {"ok", 1}, {"unavailable", 0}, {"error", 0}, {"org_limit", 0}} {
		got := value(t, after, "kraken_auth_results_total", "backend", "static", "type", "auth", "outcome", c.outcome) -
			value(t, before, "kraken_auth_results_total", "backend", "static", "type", "auth", "outcome", c.outcome)
		if got != c.delta {
			t.Errorf("auth_results_total{outcome=%q} moved by %v, want %v", c.outcome, got, c.delta)
		}
	}
	if d := value(t, after, "kraken_auth_duration_seconds") - value(t, before, "kraken_auth_duration_seconds"); d != 2 {
		t.Errorf("auth_duration_seconds counted %v validations, want 2", d)
	}
	if v := value(t, after, "kraken_connections_authenticated"); v != 1 {
		t.Errorf("connections_authenticated = %v, want 1", v)
	}
}

// TestReauthIsCounted: reauth frames move
// kraken_auth_results_total{type="reauth"} by outcome (a token of the same
// actor ok, another actor's mismatch, an unknown one denied), and leave
// the auth frames' series alone.
func TestReauthIsCounted(t *testing.T) {
	b := start(t)
	p := testpeer.Dial(t, b.srv.Addr().String())
	p.Auth("tok-sub")
	before := b.scrape(t)
	for _, c := range []struct{ token, error string }{{"tok-sub", ""}, {"tok-fast", "actor_mismatch"}, {"no-such-token", "access_denied"}} {
		p.Send("type", "reauth", "token", c.token)
		if c.error == "" {
			p.ExpectFields("type", "reauth", "success", true)
		} else {
			p.ExpectFields("type", "reauth", "success", false, "error", c.error)
		}
	}
	after := b.scrape(t)
	for _, c := range []struct {
		typ, outcome string
		delta        float64
	}{{"reauth", "ok", 1}, {"reauth", "mismatch", 1}, {"reauth", "denied", 1}, {"reauth", "unavailable", 0},
		{"reauth", "error", 0}, {"auth", "ok", 0}, {"auth", "denied", 0}} {
		got := value(t, after, "kraken_auth_results_total", "backend", "static", "type", c.typ, "outcome", c.outcome) -
			value(t, before, "kraken_auth_results_total", "backend", "static", "type", c.typ, "outcome", c.outcome)
		if got != c.delta {
			t.Errorf("auth_results_total{type=%q,outcome=%q} moved by %v, want %v", c.typ, c.outcome, got, c.delta)
		}
	}
}

// TestRateLimitedPublishIsCounted: every 42910 a publisher limited to one
// publish a second gets moves kraken_publish_refused_total{reason="rate"}
// by one, and the accepted publish moves kraken_messages_in_total.
func TestRateLimitedPublishIsCounted(t *testing.T) {
	b := start(t)
	p := testpeer.Dial(t, b.srv.Addr().String())
	p.Auth("tok-slow")
	before := b.scrape(t)
	const n = 5
	for i := 0; i < n; i++ {
		p.Send("type", "publish", "topic", "demo/general/x", "data", "hi", "msgRef", "m")
	}
	refused, accepted := 0, 0
	for i := 0; i < n; i++ {
		switch f := p.Expect(); f.Type() {
		case "published":
			accepted++
		case "error":
			if f.Map["error"] != "rate_limit_exceeded" {
				t.Fatalf("error frame %v, want rate_limit_exceeded", f)
			}
			refused++
		default:
			t.Fatalf("unexpected frame %v", f)
		}
	}
	if refused == 0 {
		t.Fatal("no publish was rate limited")
	}
	after := b.scrape(t)
	if d := value(t, after, "kraken_publish_refused_total", "reason", "rate") -
		value(t, before, "kraken_publish_refused_total", "reason", "rate"); d != float64(refused) {
		t.Errorf("publish_refused_total{reason=rate} moved by %v, want %d", d, refused)
	}
	if d := value(t, after, "kraken_messages_in_total", "source", "client") -
		value(t, before, "kraken_messages_in_total", "source", "client"); d != float64(accepted) {
		t.Errorf("messages_in_total{source=client} moved by %v, want %d", d, accepted)
	}
	if d := value(t, after, "kraken_publish_refused_total", "reason", "grant") -
		value(t, before, "kraken_publish_refused_total", "reason", "grant"); d != 0 {
		t.Errorf("publish_refused_total{reason=grant} moved by %v, want 0", d)
	}
}

// TestSubscriptionCapIsCounted: a subscribe the connection's worker refuses
// because the connection holds MaxSubscriptions moves
// kraken_subscribe_refused_total{reason="too_many_subscriptions"}, once per
// refusal; each metric carries its own reasons and no other.
func TestSubscriptionCapIsCounted(t *testing.T) {
	b := startWith(t, func(c *node.Config) { c.Hub.MaxSubscriptions = 2 })
	p := testpeer.Dial(t, b.srv.Addr().String())
	p.Auth("tok-sub")
	for _, topic := range []string{"demo/a", "demo/b"} {
		p.Send("type", "subscribe", "topic", topic)
		p.ExpectFields("type", "subscribed", "topic", topic)
	}
	const n = 3
	for i := 0; i < n; i++ {
		p.Send("type", "subscribe", "topic", "demo/over")
		p.ExpectFields("type", "error", "error", "too_many_subscriptions", "topic", "demo/over")
	}
	fams := b.scrape(t)
	if v := value(t, fams, "kraken_subscribe_refused_total", "reason", "too_many_subscriptions"); v != n {
		t.Errorf("subscribe_refused_total{reason=too_many_subscriptions} = %v, want %d", v, n)
	}
	for name, want := range map[string][]string{
		"kraken_publish_refused_total":   {"rate", "size", "grant", "busy", "quota", "invalid_topic", "invalid_filter", "bad_request"},
		"kraken_subscribe_refused_total": {"grant", "invalid_topic", "invalid_filter", "bad_request", "too_many_subscriptions"},
	} {
		var got []string
		for _, m := range fams[name].Metric {
			for _, l := range m.Label {
				if l.GetName() == "reason" {
					got = append(got, l.GetValue())
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s reasons = %v, want %v (docs/operations.md)", name, got, want)
		}
	}
}

// TestSlowConsumerIsCounted: a subscriber that stops reading while 8 KiB
// messages flood its topic is closed as a slow consumer: that moves
// kraken_slow_consumers_total and, once the socket is released,
// kraken_connections_closed_total{reason="slow_consumer"}.
func TestSlowConsumerIsCounted(t *testing.T) {
	b := start(t)
	slow := testpeer.Dial(t, b.srv.Addr().String())
	slow.Auth("tok-sub")
	slow.Send("type", "subscribe", "topic", "demo/general/flood")
	slow.ExpectType("subscribed")
	pub := testpeer.Dial(t, b.srv.Addr().String())
	pub.Auth("tok-fast")
	before := b.scrape(t)
	if v := value(t, before, "kraken_slow_consumers_total"); v != 0 {
		t.Fatalf("slow_consumers_total = %v before the flood", v)
	}
	payload := make([]byte, 8<<10)
	for i := 0; b.srv.Node().Hub().Stats().SlowConsumers == 0; i++ {
		if i == 5000 {
			t.Fatal("no slow consumer after 5000 messages of 8 KiB")
		}
		pub.Send("type", "publish", "topic", "demo/general/flood", "data", payload, "msgRef", "m")
		pub.ExpectType("published")
	}
	after := b.scrape(t)
	if v := value(t, after, "kraken_slow_consumers_total", "reason", "outbound_bytes"); v != 1 {
		t.Errorf("slow_consumers_total{reason=outbound_bytes} = %v, want 1", v)
	}
	if v := value(t, after, "kraken_slow_consumers_total", "reason", "write_timeout"); v != 0 {
		t.Errorf("slow_consumers_total{reason=write_timeout} = %v, want 0", v)
	}
	if v := value(t, after, "kraken_deliveries_total"); v == 0 {
		t.Error("deliveries_total did not move")
	}
	if v := value(t, after, "kraken_delivered_bytes_total"); v < 64<<10 {
		t.Errorf("delivered_bytes_total = %v, want at least the 64 KiB queue bound", v)
	}
	b.waitValue(t, 1, "kraken_connections_closed_total", "transport", "websocket", "reason", "slow_consumer")
}

// TestFailedReloadIsCounted: a reload of a broken token file, or of one
// with an error check-config reports (here an unknown permission), moves
// kraken_token_file_reloads_total{result="failed"}, sets
// kraken_token_file_load_failing and clears kraken_ready, with the tokens
// kept; a good reload moves {result="ok"} and restores both.
func TestFailedReloadIsCounted(t *testing.T) {
	for _, tt := range []struct{ name, give string }{
		{"unparsable", "{\n  \"tokens\": {,\n}"},
		{"refused", strings.Replace(tokenFile, `"permission": "pubSub"`, `"permission": "publishSubscribe"`, 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := start(t)
			before := b.scrape(t)
			if value(t, before, "kraken_ready") != 1 || value(t, before, "kraken_token_file_load_failing") != 0 {
				t.Fatal("not ready before the reload")
			}
			if err := os.WriteFile(b.path, []byte(tt.give), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := b.st.ReloadFor("sighup"); err == nil {
				t.Fatal("the file reloaded")
			}
			failed := b.scrape(t)
			if d := value(t, failed, "kraken_token_file_reloads_total", "result", "failed") -
				value(t, before, "kraken_token_file_reloads_total", "result", "failed"); d != 1 {
				t.Errorf("reloads_total{result=failed} moved by %v, want 1", d)
			}
			if value(t, failed, "kraken_token_file_load_failing") != 1 || value(t, failed, "kraken_ready") != 0 {
				t.Error("a failed reload left the node ready")
			}
			if v := value(t, failed, "kraken_token_file_tokens"); v != 3 {
				t.Errorf("token_file_tokens = %v after the failed reload, want the 3 kept", v)
			}
			if err := os.WriteFile(b.path, []byte(tokenFile), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := b.st.ReloadFor("sighup"); err != nil {
				t.Fatal(err)
			}
			fixed := b.scrape(t)
			if d := value(t, fixed, "kraken_token_file_reloads_total", "result", "ok") -
				value(t, before, "kraken_token_file_reloads_total", "result", "ok"); d != 1 {
				t.Errorf("reloads_total{result=ok} moved by %v, want 1", d)
			}
			if value(t, fixed, "kraken_token_file_load_failing") != 0 || value(t, fixed, "kraken_ready") != 1 {
				t.Error("a good reload did not make the node ready again")
			}
		})
	}
}

// TestLabelsAreBounded: after traffic on a topic, no label value of any
// metric carries a topic, a token or an actor, and every documented
// family is present.
func TestLabelsAreBounded(t *testing.T) {
	b := start(t)
	sub := testpeer.Dial(t, b.srv.Addr().String())
	sub.Auth("tok-sub")
	sub.Send("type", "subscribe", "topic", "demo/secret-room/x")
	sub.ExpectType("subscribed")
	sub.Send("type", "subscribe", "topic", "other/denied")
	sub.ExpectType("error")
	sub.Send("type", "publish", "topic", "demo/secret-room/x", "data", 1, "msgRef", "m")
	sub.ExpectType("published")
	sub.ExpectType("message")
	fams := b.scrape(t)
	for name, f := range fams {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				v := l.GetValue()
				if strings.Contains(v, "/") && l.GetName() != "version" || strings.Contains(v, "tok-") ||
					strings.Contains(v, "secret") || v == "sub" || v == "fast" {
					t.Errorf("%s has label %s=%q", name, l.GetName(), v)
				}
			}
		}
	}
	for _, name := range []string{
		"kraken_build_info", "kraken_ready", "kraken_draining", "kraken_connections", "kraken_connections_authenticated",
		"kraken_connections_accepted_total", "kraken_connections_closed_total", "kraken_handshakes_total",
		"kraken_slow_consumers_total", "kraken_input_overflows_total", "kraken_received_bytes_total",
		"kraken_auth_results_total", "kraken_auth_duration_seconds", "kraken_token_cache_entries",
		"kraken_token_file_reloads_total", "kraken_token_file_tokens", "kraken_token_file_load_failing",
		"kraken_messages_in_total", "kraken_message_bytes_in_total", "kraken_publications_total",
		"kraken_deliveries_total", "kraken_delivered_bytes_total", "kraken_publish_refused_total",
		"kraken_subscribe_refused_total", "kraken_subscriptions", "kraken_groups", "kraken_topics",
		"kraken_worker_inbox_ops", "kraken_worker_inbox_publications", "kraken_worker_busy", "kraken_busy",
		"kraken_workers_unresponsive", "kraken_outbound_queued_bytes", "kraken_outbound_queued_max_bytes",
		"kraken_retained_messages", "kraken_presence_rooms", "kraken_presence_members", "kraken_lobby_watches",
		"kraken_broker_up", "kraken_broker_dropped_total", "go_goroutines", "process_resident_memory_bytes",
	} {
		if _, ok := fams[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
	if v := value(t, fams, "kraken_subscribe_refused_total", "reason", "grant"); v != 1 {
		t.Errorf("subscribe_refused_total{reason=grant} = %v, want 1", v)
	}
	if v := value(t, fams, "kraken_topics"); v != 1 {
		t.Errorf("topics = %v, want 1", v)
	}
	if v := value(t, fams, "kraken_handshakes_total", "outcome", "websocket"); v != 1 {
		t.Errorf("handshakes_total{outcome=websocket} = %v, want 1", v)
	}
}

// TestParkedSessionsAreCountedApart: a resumable session kept after its
// connection dropped shows in kraken_resume_sessions_parked and in no
// kraken_connections series (it holds no socket); resuming it counts a
// complete replay and empties the gauge.
func TestParkedSessionsAreCountedApart(t *testing.T) {
	b := startWith(t, func(c *node.Config) {
		c.Session.Resume = session.ResumeConfig{Enabled: true, Expiry: time.Minute}
	})
	p := testpeer.Dial(t, b.srv.Addr().String())
	p.Auth("tok-sub")
	p.Send("type", "subscribe", "topic", "demo/a/b", "qos", 1)
	p.ExpectFields("type", "subscribed")
	_ = p.Conn.Close()
	b.waitValue(t, 1, "kraken_resume_sessions_parked")
	b.waitValue(t, 0, "kraken_connections", "transport", "websocket")
	fams := b.scrape(t)
	if v := value(t, fams, "kraken_connections", "transport", "http"); v != 0 {
		t.Errorf("kraken_connections{transport=http} = %v with only a parked session, want 0", v)
	}

	p2 := testpeer.Dial(t, b.srv.Addr().String())
	p2.Auth("tok-sub", "reconnect", true)
	p2.ExpectFields("type", "replayStart", "count", int64(0))
	p2.ExpectFields("type", "replayEnd", "complete", true)
	b.waitValue(t, 1, "kraken_resume_replays_total", "result", "complete")
	b.waitValue(t, 0, "kraken_resume_sessions_parked")
	if v := value(t, b.scrape(t), "kraken_resume_replays_total", "result", "session_expired"); v != 0 {
		t.Errorf("resume_replays_total{result=session_expired} = %v, want 0", v)
	}
}

// TestBrokerCountersLandOnTheirLabels: each counter a broker backend
// reports (Sources.BrokerStats) is exported under its own metric and label.
func TestBrokerCountersLandOnTheirLabels(t *testing.T) {
	b := start(t)
	bs := metrics.BrokerStats{Published: 1, Dropped: 2, Received: 3, Duplicates: 4, Malformed: 5, Reconnects: 6,
		StateWrites: 7, StateDropped: 8, StateErrors: 9, StateMalformed: 10, StatePurged: 11, StateRejoins: 12,
		NodesDown: 13, RetainedRecaptured: 14, RetainedUnkept: 15}
	reg := metrics.NewRegistry(metrics.Sources{Components: []metrics.Component{b.srv.Node().Metrics("", "nats"), b.srv}, Version: "test",
		BrokerStats: func() metrics.BrokerStats { return bs }})
	hs := httptest.NewServer(metrics.Handler(reg))
	t.Cleanup(hs.Close)
	fams := (&broker{metrics: hs.URL}).scrape(t)
	for _, c := range []struct {
		name  string
		label []string
		want  float64
	}{
		{"kraken_broker_messages_total", []string{"direction", "out"}, 1},
		{"kraken_broker_dropped_total", []string{"direction", "out"}, 2},
		{"kraken_broker_messages_total", []string{"direction", "in"}, 3},
		{"kraken_broker_discarded_total", []string{"kind", "duplicate"}, 4},
		{"kraken_broker_discarded_total", []string{"kind", "malformed"}, 5},
		{"kraken_broker_reconnects_total", nil, 6},
		{"kraken_broker_state_total", []string{"kind", "write"}, 7},
		{"kraken_broker_state_total", []string{"kind", "dropped"}, 8},
		{"kraken_broker_state_total", []string{"kind", "error"}, 9},
		{"kraken_broker_state_total", []string{"kind", "malformed"}, 10},
		{"kraken_broker_state_total", []string{"kind", "purged"}, 11},
		{"kraken_broker_state_total", []string{"kind", "rejoin"}, 12},
		{"kraken_broker_nodes_down_total", nil, 13},
		{"kraken_broker_retained_total", []string{"kind", "recaptured"}, 14},
		{"kraken_broker_retained_total", []string{"kind", "unkept"}, 15},
	} {
		if got := value(t, fams, c.name, c.label...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.label, got, c.want)
		}
	}
}

// stateBroker is a single-node broker whose shared state fails on demand,
// as natsbroker's does while the NATS server holding its bucket is down.
type stateBroker struct {
	local.Broker
	failing atomic.Bool
}

func (b *stateBroker) StateReady() error {
	if b.failing.Load() {
		return errors.New("cluster state failing")
	}
	return nil
}

// TestStateFailingClearsReady: a broker whose shared state fails, while
// connected, sets kraken_broker_state_failing and clears kraken_ready, and
// leaves kraken_broker_up at 1; both turn back with it.
func TestStateFailingClearsReady(t *testing.T) {
	sb := &stateBroker{}
	b := startWith(t, func(c *node.Config) { c.Session.Broker = sb })
	fams := b.scrape(t)
	if value(t, fams, "kraken_broker_state_failing") != 0 || value(t, fams, "kraken_ready") != 1 {
		t.Fatal("failing or not ready before the state fails")
	}
	sb.failing.Store(true)
	fams = b.scrape(t)
	if value(t, fams, "kraken_broker_state_failing") != 1 || value(t, fams, "kraken_ready") != 0 ||
		value(t, fams, "kraken_broker_up") != 1 {
		t.Errorf("state failing: state_failing %v, ready %v, up %v; want 1, 0, 1",
			value(t, fams, "kraken_broker_state_failing"), value(t, fams, "kraken_ready"), value(t, fams, "kraken_broker_up"))
	}
	sb.failing.Store(false)
	fams = b.scrape(t)
	if value(t, fams, "kraken_broker_state_failing") != 0 || value(t, fams, "kraken_ready") != 1 {
		t.Error("still failing once the state works again")
	}
}
