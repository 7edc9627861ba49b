package webhook_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinylib/msgp/msgp"
	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/control/controltest"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// wait bounds every Eventually; quiet is how long a test waits to see that
// nothing more happens.
const (
	wait  = 5 * time.Second
	quiet = 100 * time.Millisecond
)

// fast is a retry schedule for tests: three attempts.
var fast = []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}

// hookRequest is one request a hookServer received.
type hookRequest struct {
	header http.Header
	body   string
	at     time.Time
}

// hookServer is a customer webhook endpoint: it records requests and
// answers with respond (n counts requests from 1). When hang is set it
// never answers until the client gives up or the server closes.
type hookServer struct {
	srv     *httptest.Server
	url     string
	mu      sync.Mutex
	reqs    []hookRequest
	respond func(n int) (status int, body string)
	hang    bool
	release chan struct{}
	once    sync.Once
}

func newHookServer(t *testing.T, useTLS bool, respond func(n int) (int, string)) *hookServer {
	t.Helper()
	h := &hookServer{respond: respond, release: make(chan struct{})}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(h.serve))
	h.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	if useTLS {
		h.srv.StartTLS()
	} else {
		h.srv.Start()
	}
	h.url = h.srv.URL + "/hook"
	t.Cleanup(h.close)
	return h
}

// always answers every request with status and body.
func always(status int, body string) func(int) (int, string) {
	return func(int) (int, string) { return status, body }
}

func (h *hookServer) close() {
	h.once.Do(func() {
		close(h.release)
		h.srv.Close()
	})
}

func (h *hookServer) setHang(hang bool) {
	h.mu.Lock()
	h.hang = hang
	h.mu.Unlock()
}

func (h *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	h.mu.Lock()
	h.reqs = append(h.reqs, hookRequest{header: r.Header.Clone(), body: string(body), at: time.Now()})
	n, hang, respond := len(h.reqs), h.hang, h.respond
	h.mu.Unlock()
	if hang {
		select {
		case <-r.Context().Done():
		case <-h.release:
		}
		return
	}
	status, answer := respond(n)
	if status == http.StatusFound {
		http.Redirect(w, r, "/elsewhere", status)
		return
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func (h *hookServer) requests() []hookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.reqs)
}

// newDispatcher returns a Dispatcher for cfg, closed when the test ends.
func newDispatcher(t *testing.T, cfg webhook.Config) *webhook.Dispatcher {
	t.Helper()
	d := webhook.New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return d
}

// failures collects OnFailure calls.
type failures struct {
	mu  sync.Mutex
	got []control.WebhookFailure
}

func (f *failures) record(x control.WebhookFailure) {
	f.mu.Lock()
	f.got = append(f.got, x)
	f.mu.Unlock()
}

func (f *failures) all() []control.WebhookFailure {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.got)
}

// hook returns a webhook configuration for url with two secret headers.
func hook(url string) *auth.Webhook {
	return &auth.Webhook{URL: url, Headers: map[string]string{"X-Api-Key": "secret-key", "Authorization": "Bearer secret-token"}}
}

// settled waits until every accepted webhook is sent, failed or dropped.
func settled(t *testing.T, d *webhook.Dispatcher, n uint64) webhook.Stats {
	t.Helper()
	controltest.Eventually(t, wait, func() bool {
		s := d.Stats()
		return s.Sent+s.Failed+s.Dropped == n
	}, "webhooks did not settle: %+v", d.Stats())
	return d.Stats()
}

func TestHydrateDelivers(t *testing.T) {
	srv := newHookServer(t, false, always(200, `{"items":[1,2],"title":"hello"}`))
	d := newDispatcher(t, webhook.Config{})
	got := make(chan json.RawMessage, 1)
	d.Hydrate(webhook.HydrateRequest{Webhook: hook(srv.url), ActorID: "alice", RoomName: "general", TopicName: "messages"},
		func(data json.RawMessage) { got <- data })
	select {
	case data := <-got:
		if string(data) != `{"items":[1,2],"title":"hello"}` {
			t.Fatalf("delivered %s", data)
		}
	case <-time.After(wait):
		t.Fatal("nothing delivered")
	}
	req := srv.requests()[0]
	if req.body != `{"actorId":"alice","roomName":"general","topicName":"messages","scope":null}` {
		t.Fatalf("hydration body = %s", req.body)
	}
	for name, want := range map[string]string{"Content-Type": "application/json", "X-Api-Key": "secret-key", "Authorization": "Bearer secret-token"} {
		if got := req.header.Get(name); got != want {
			t.Fatalf("header %s = %q, want %q", name, got, want)
		}
	}
	if s := settled(t, d, 1); s.Sent != 1 {
		t.Fatalf("Stats = %+v", s)
	}
}

func TestHydrateScope(t *testing.T) {
	tests := []struct {
		name string
		give webhook.Scope
		want string
	}{
		{name: "unscoped", give: webhook.Scope{}, want: `null`},
		{name: "unscoped with an id", give: webhook.Scope{ID: "s1"}, want: `null`},
		{name: "full", give: webhook.Scope{ID: "s1", Slug: "eu", Name: "Europe <EU>"}, want: `{"accessScopeId":"s1","slug":"eu","name":"Europe <EU>"}`},
		{name: "slug only", give: webhook.Scope{Slug: "eu"}, want: `{"accessScopeId":null,"slug":"eu","name":null}`},
	}
	srv := newHookServer(t, false, always(200, `{}`))
	d := newDispatcher(t, webhook.Config{Workers: 1})
	for _, tt := range tests {
		d.Hydrate(webhook.HydrateRequest{Webhook: hook(srv.url), ActorID: "a", RoomName: "r", TopicName: "t", Scope: tt.give}, nil)
	}
	settled(t, d, uint64(len(tests)))
	for i, tt := range tests {
		want := `{"actorId":"a","roomName":"r","topicName":"t","scope":` + tt.want + `}`
		if got := srv.requests()[i].body; got != want {
			t.Errorf("%s: body = %s, want %s", tt.name, got, want)
		}
	}
}

func TestHydrateNoDelivery(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
	}{
		{name: "invalid JSON", status: 200, body: `{"items":[`},
		{name: "empty body", status: 200, body: ``},
		{name: "too long", status: 200, body: `{"x":"` + strings.Repeat("a", 100) + `"}`},
		{name: "4xx", status: 404, body: `{}`},
		{name: "redirect", status: http.StatusFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newHookServer(t, false, always(tt.status, tt.body))
			d := newDispatcher(t, webhook.Config{MaxResponseBytes: 64, Backoff: fast})
			calls := 0
			d.Hydrate(webhook.HydrateRequest{Webhook: hook(srv.url)}, func(json.RawMessage) { calls++ })
			if s := settled(t, d, 1); s.Failed != 1 || s.Retried != 0 {
				t.Fatalf("Stats = %+v, want one failure without retries", s)
			}
			if calls != 0 {
				t.Fatalf("deliver called %d times", calls)
			}
			if n := len(srv.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
}

func TestTLS(t *testing.T) {
	srv := newHookServer(t, true, always(200, `[true]`))

	// A client that trusts the server's certificate.
	d := newDispatcher(t, webhook.Config{Client: srv.srv.Client()})
	got := make(chan json.RawMessage, 1)
	d.Hydrate(webhook.HydrateRequest{Webhook: hook(srv.url)}, func(data json.RawMessage) { got <- data })
	select {
	case data := <-got:
		if string(data) != `[true]` {
			t.Fatalf("delivered %s", data)
		}
	case <-time.After(wait):
		t.Fatal("nothing delivered over TLS")
	}

	// The default client verifies certificates: a self-signed server fails,
	// as a transport error, retried.
	var fails failures
	strict := newDispatcher(t, webhook.Config{Backoff: fast, OnFailure: fails.record})
	strict.Trigger(webhook.TriggerRequest{Webhook: hook(srv.url), Data: []byte{0xc0}})
	if s := settled(t, strict, 1); s.Failed != 1 || s.Retried != 2 {
		t.Fatalf("Stats = %+v, want a failure after two retries", s)
	}
	if f := fails.all(); len(f) != 1 || f[0].ErrorMessage != webhook.MessageMaxRetries {
		t.Fatalf("failures = %+v", f)
	}
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("the server answered %d requests, want only the trusted client's", n)
	}
}

// triggerData is a msgpack map exercising the JSON rendering of OQ-1.
func triggerData() []byte {
	b := msgp.AppendMapHeader(nil, 7)
	b = msgp.AppendString(b, "text")
	b = msgp.AppendString(b, "hi <b>")
	b = msgp.AppendString(b, "bin")
	b = msgp.AppendBytes(b, []byte("utf8 ☃"))
	b = msgp.AppendString(b, "raw")
	b = msgp.AppendBytes(b, []byte{0xff, 0x00})
	b = msgp.AppendString(b, "at")
	b = append(b, 0xd6, 0xff, 0x65, 0x53, 0xf1, 0x00) // timestamp 32: 1700000000
	b = msgp.AppendString(b, "ext")
	b = append(b, 0xd4, 0x05, 0x01) // fixext1 of type 5
	b = msgp.AppendInt(b, 7)
	b = msgp.AppendString(b, "seven")
	b = msgp.AppendString(b, "f")
	return msgp.AppendFloat64(b, math.NaN())
}

const triggerDataJSON = `{"text":"hi <b>","bin":"utf8 ☃","raw":"/wA=","at":"2023-11-14T22:13:20Z","ext":"AQ==","7":"seven","f":null}`

func TestTriggerBody(t *testing.T) {
	srv := newHookServer(t, false, always(200, `ignored`))
	d := newDispatcher(t, webhook.Config{})
	data := triggerData()
	d.Trigger(webhook.TriggerRequest{
		Webhook: hook(srv.url), ActorID: "alice", RoomName: "general", TopicName: "messages",
		Scope: webhook.Scope{ID: "s1", Slug: "eu", Name: "Europe"}, Data: data,
	})
	clear(data) // Trigger copied it
	if s := settled(t, d, 1); s.Sent != 1 {
		t.Fatalf("Stats = %+v", s)
	}
	want := `{"roomName":"general","topicName":"messages","actorId":"alice","data":` + triggerDataJSON +
		`,"scope":{"accessScopeId":"s1","slug":"eu","name":"Europe"}}`
	req := srv.requests()[0]
	if req.body != want {
		t.Fatalf("trigger body\n got %s\nwant %s", req.body, want)
	}
	if req.header.Get("Content-Type") != "application/json" || req.header.Get("X-Api-Key") != "secret-key" {
		t.Fatalf("headers = %v", req.header)
	}
}

func TestTriggerData(t *testing.T) {
	tests := []struct {
		name     string
		data     []byte
		dataJSON string
		want     string
	}{
		{name: "msgpack", data: triggerData(), want: triggerDataJSON},
		{name: "pre-rendered", data: []byte{0xc0}, dataJSON: `{"pre":true}`, want: `{"pre":true}`},
		{name: "invalid pre-rendered falls back", data: []byte{0x2a}, dataJSON: `{"pre":`, want: `42`},
		{name: "no data", data: nil, want: `null`},
		{name: "invalid msgpack", data: []byte{0xc1}, want: `null`},
	}
	srv := newHookServer(t, false, always(204, ""))
	d := newDispatcher(t, webhook.Config{Workers: 1})
	for _, tt := range tests {
		d.Trigger(webhook.TriggerRequest{Webhook: hook(srv.url), Data: tt.data, DataJSON: json.RawMessage(tt.dataJSON)})
	}
	settled(t, d, uint64(len(tests)))
	for i, tt := range tests {
		want := `{"roomName":"","topicName":"","actorId":"","data":` + tt.want + `,"scope":null}`
		if got := srv.requests()[i].body; got != want {
			t.Errorf("%s: body = %s, want %s", tt.name, got, want)
		}
	}
}

// triggerRequest is a trigger with every failure-report field set.
func triggerRequest(url string) webhook.TriggerRequest {
	return webhook.TriggerRequest{
		Webhook:        hook(url),
		OrganizationID: "org-1", ProjectID: "proj-1", AppID: "app-1",
		ActorID: "alice", RoomName: "general", TopicName: "messages",
		Data: msgp.AppendString(nil, "hello"),
	}
}

func TestRetriesRunOut(t *testing.T) {
	srv := newHookServer(t, false, always(500, "boom"))
	var fails failures
	d := newDispatcher(t, webhook.Config{Backoff: fast, OnFailure: fails.record, Node: "kraken@test"})
	d.Trigger(triggerRequest(srv.url))
	s := settled(t, d, 1)
	if s.Failed != 1 || s.Retried != 2 || s.Sent != 0 {
		t.Fatalf("Stats = %+v, want one failure after two retries", s)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d attempts, want 3", len(reqs))
	}
	for i, pause := range fast {
		if gap := reqs[i+1].at.Sub(reqs[i].at); gap < pause {
			t.Fatalf("attempt %d came %v after the previous one, want at least %v", i+2, gap, pause)
		}
	}
	time.Sleep(quiet) // nothing more comes
	f := fails.all()
	if len(f) != 1 || len(srv.requests()) != 3 {
		t.Fatalf("OnFailure called %d times after %d attempts, want once after 3", len(f), len(srv.requests()))
	}
	got := f[0]
	if got.ResponseStatus != 0 || got.ErrorMessage != webhook.MessageMaxRetries {
		t.Fatalf("failure status %d %q, want 0 %q", got.ResponseStatus, got.ErrorMessage, webhook.MessageMaxRetries)
	}
	if !slices.Equal(got.RequestHeaders, []string{"Authorization", "X-Api-Key"}) {
		t.Fatalf("RequestHeaders = %q, want the sorted names", got.RequestHeaders)
	}
	if string(got.RequestBody) != reqs[0].body {
		t.Fatalf("RequestBody = %s, want the body sent, %s", got.RequestBody, reqs[0].body)
	}
	want := control.WebhookFailure{
		OrganizationID: "org-1", ProjectID: "proj-1", AppID: "app-1",
		Type: control.FailureTypeTrigger, WebhookURL: srv.url,
		RequestHeaders: []string{"Authorization", "X-Api-Key"}, RequestBody: json.RawMessage(reqs[0].body),
		ErrorMessage: webhook.MessageMaxRetries, Node: "kraken@test", Timestamp: got.Timestamp,
	}
	js, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if err := controltest.CheckFailureJSON(js, want); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), "secret") {
		t.Fatalf("the failure report carries a header value: %s", js)
	}
	if time.Since(got.Timestamp) > wait {
		t.Fatalf("Timestamp = %v", got.Timestamp)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	srv := newHookServer(t, false, func(n int) (int, string) {
		return map[int]int{1: 503, 2: 502}[n] + map[bool]int{true: 200}[n > 2], ""
	})
	var fails failures
	d := newDispatcher(t, webhook.Config{Backoff: fast, OnFailure: fails.record})
	d.Trigger(triggerRequest(srv.url))
	if s := settled(t, d, 1); s.Sent != 1 || s.Retried != 2 {
		t.Fatalf("Stats = %+v, want success after two retries", s)
	}
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	if f := fails.all(); len(f) != 0 {
		t.Fatalf("OnFailure called for a success: %+v", f)
	}
}

func TestFinalStatusNotRetried(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		wantMessage string
	}{
		{name: "404 with a body", status: 404, body: "  no such hook\n", wantMessage: "no such hook"},
		{name: "400 without a body", status: 400, wantMessage: "status 400"},
		{name: "long body cut", status: 422, body: strings.Repeat("x", 5000), wantMessage: strings.Repeat("x", 1024)},
		{name: "redirect not followed", status: http.StatusFound, wantMessage: "status 302"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newHookServer(t, false, always(tt.status, tt.body))
			var fails failures
			d := newDispatcher(t, webhook.Config{Backoff: fast, OnFailure: fails.record})
			d.Trigger(triggerRequest(srv.url))
			if s := settled(t, d, 1); s.Failed != 1 || s.Retried != 0 {
				t.Fatalf("Stats = %+v, want one failure without retries", s)
			}
			if n := len(srv.requests()); n != 1 {
				t.Fatalf("%d attempts, want 1", n)
			}
			f := fails.all()
			if len(f) != 1 || f[0].ResponseStatus != tt.status || f[0].ErrorMessage != tt.wantMessage {
				t.Fatalf("failures = %+v, want status %d %q", f, tt.status, tt.wantMessage)
			}
		})
	}
}

func TestTransportErrorsRetried(t *testing.T) {
	// Nothing listens at the address.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/hook"
	_ = l.Close()

	var fails failures
	d := newDispatcher(t, webhook.Config{Backoff: fast, OnFailure: fails.record})
	d.Trigger(triggerRequest(url))
	if s := settled(t, d, 1); s.Failed != 1 || s.Retried != 2 {
		t.Fatalf("connection refused: Stats = %+v, want a failure after two retries", s)
	}

	// An attempt that times out is retried too.
	srv := newHookServer(t, false, always(200, ""))
	srv.setHang(true)
	slow := newDispatcher(t, webhook.Config{Backoff: fast, AttemptTimeout: 50 * time.Millisecond, OnFailure: fails.record})
	slow.Trigger(triggerRequest(srv.url))
	if s := settled(t, slow, 1); s.Failed != 1 || s.Retried != 2 {
		t.Fatalf("timeouts: Stats = %+v, want a failure after two retries", s)
	}
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	f := fails.all()
	if len(f) != 2 || f[0].ErrorMessage != webhook.MessageMaxRetries || f[1].ResponseStatus != 0 {
		t.Fatalf("failures = %+v", f)
	}
}

func TestInvalidURL(t *testing.T) {
	var fails failures
	d := newDispatcher(t, webhook.Config{Backoff: fast, OnFailure: fails.record})
	for _, u := range []string{"ftp://host/x", "/relative", "http://[::1"} {
		d.Trigger(triggerRequest(u))
	}
	if s := settled(t, d, 3); s.Failed != 3 || s.Retried != 0 {
		t.Fatalf("Stats = %+v", s)
	}
	for _, f := range fails.all() {
		if f.ErrorMessage != "invalid webhook url" || f.ResponseStatus != 0 {
			t.Fatalf("failure = %+v", f)
		}
	}
}

func TestNoWebhookIsNoop(t *testing.T) {
	d := newDispatcher(t, webhook.Config{})
	d.Hydrate(webhook.HydrateRequest{}, func(json.RawMessage) { t.Error("delivered") })
	d.Trigger(webhook.TriggerRequest{Webhook: &auth.Webhook{}})
	if s := d.Stats(); s != (webhook.Stats{}) {
		t.Fatalf("Stats = %+v, want zero", s)
	}
}

// TestQueueFull checks that Hydrate and Trigger return at once when the
// receiving server hangs, drop what does not fit and count it, and that
// Close then returns within its context with no goroutine left.
func TestQueueFull(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	srv := newHookServer(t, false, always(200, "{}"))
	srv.setHang(true)
	var fails failures
	d := webhook.New(webhook.Config{Workers: 1, QueueSize: 2, OnFailure: fails.record})

	d.Trigger(triggerRequest(srv.url))
	controltest.Eventually(t, wait, func() bool { return len(srv.requests()) == 1 }, "the first webhook was not sent")
	start := time.Now()
	for range 500 {
		d.Trigger(triggerRequest(srv.url))
		d.Hydrate(webhook.HydrateRequest{Webhook: hook(srv.url)}, func(json.RawMessage) {})
	}
	if elapsed := time.Since(start); elapsed > time.Second {
		t.Fatalf("1000 calls took %v against a hanging server", elapsed)
	}
	if s := d.Stats(); s.Dropped != 998 {
		t.Fatalf("Dropped = %d, want 998 (one in flight, two queued)", s.Dropped)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start = time.Now()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want context.DeadlineExceeded", err)
	}
	if elapsed := time.Since(start); elapsed > 2*time.Second {
		t.Fatalf("Close took %v with a 100 ms context", elapsed)
	}
	if s := d.Stats(); s.Dropped != 1001 || s.Failed != 0 {
		t.Fatalf("Stats after Close = %+v, want all 1001 dropped", s)
	}
	if f := fails.all(); len(f) != 0 {
		t.Fatalf("OnFailure called for abandoned webhooks: %+v", f)
	}
	d.Trigger(triggerRequest(srv.url))
	if s := d.Stats(); s.Dropped != 1002 {
		t.Fatalf("a Trigger after Close was not dropped: %+v", s)
	}
	srv.close()
	goleak.VerifyNone(t, ignore)
}

func TestCloseDrains(t *testing.T) {
	srv := newHookServer(t, false, func(int) (int, string) {
		time.Sleep(5 * time.Millisecond)
		return 200, "{}"
	})
	d := webhook.New(webhook.Config{Workers: 2})
	for range 20 {
		d.Trigger(triggerRequest(srv.url))
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := d.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if s := d.Stats(); s.Sent != 20 {
		t.Fatalf("Stats = %+v, want all 20 sent before Close returned", s)
	}
	if err := d.Close(ctx); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestCloseDuringBackoff(t *testing.T) {
	srv := newHookServer(t, false, always(500, ""))
	var fails failures
	d := webhook.New(webhook.Config{Backoff: []time.Duration{time.Hour}, OnFailure: fails.record})
	d.Trigger(triggerRequest(srv.url))
	controltest.Eventually(t, wait, func() bool { return len(srv.requests()) == 1 }, "no first attempt")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v", err)
	}
	if s := d.Stats(); s.Dropped != 1 || s.Failed != 0 {
		t.Fatalf("Stats = %+v, want the webhook dropped", s)
	}
	if f := fails.all(); len(f) != 0 {
		t.Fatalf("OnFailure called: %+v", f)
	}
}

func TestSingleAttempt(t *testing.T) {
	srv := newHookServer(t, false, always(503, ""))
	var fails failures
	d := newDispatcher(t, webhook.Config{Backoff: []time.Duration{}, OnFailure: fails.record})
	d.Trigger(triggerRequest(srv.url))
	if s := settled(t, d, 1); s.Failed != 1 || s.Retried != 0 {
		t.Fatalf("Stats = %+v", s)
	}
	if f := fails.all(); len(f) != 1 || f[0].ErrorMessage != webhook.MessageMaxRetries {
		t.Fatalf("failures = %+v", f)
	}
}

// TestConcurrent calls everything at once; meaningful under -race.
func TestConcurrent(t *testing.T) {
	srv := newHookServer(t, false, func(n int) (int, string) {
		if n%3 == 0 {
			return 400, ""
		}
		return 200, `{"n":1}`
	})
	var fails failures
	d := newDispatcher(t, webhook.Config{Workers: 4, Backoff: fast, OnFailure: fails.record})
	var wg sync.WaitGroup
	var mu sync.Mutex
	delivered := 0
	for range 4 {
		wg.Go(func() {
			for range 25 {
				d.Trigger(triggerRequest(srv.url))
				d.Hydrate(webhook.HydrateRequest{Webhook: hook(srv.url)}, func(json.RawMessage) {
					mu.Lock()
					delivered++
					mu.Unlock()
				})
				_ = d.Stats()
			}
		})
	}
	wg.Wait()
	s := settled(t, d, 200)
	mu.Lock()
	defer mu.Unlock()
	// Every call answered 200 or 400; failed triggers are reported, failed
	// hydrations are not, and every successful hydration was delivered.
	// One request in three was answered 400.
	reported := uint64(len(fails.all()))
	if s.Sent != 134 || s.Failed != 66 || s.Dropped != 0 || s.Retried != 0 {
		t.Fatalf("Stats = %+v, want 134 sent and 66 failed", s)
	}
	if hydrationFailures := s.Failed - reported; uint64(delivered)+hydrationFailures != 100 {
		t.Fatalf("%d hydrations delivered and %d failed, want 100 in all", delivered, hydrationFailures)
	}
}

func TestDefaults(t *testing.T) {
	d := webhook.New(webhook.Config{})
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(webhook.DefaultBackoff, []time.Duration{time.Second, 2 * time.Second}) {
		t.Fatalf("DefaultBackoff = %v", webhook.DefaultBackoff)
	}
}

// Cancelling Config.Context (the node's base context) abandons the request
// in flight at once, counted as dropped; Close then has nothing to wait for.
func TestBaseContextAbandonsTheRequestInFlight(t *testing.T) {
	srv := newHookServer(t, false, always(200, "{}"))
	srv.setHang(true)
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	d := newDispatcher(t, webhook.Config{Context: base, AttemptTimeout: time.Minute})
	d.Trigger(triggerRequest(srv.url))
	controltest.Eventually(t, wait, func() bool { return len(srv.requests()) == 1 }, "no request")
	cancelBase()
	controltest.Eventually(t, wait, func() bool { return d.Stats().Dropped == 1 }, "the request was not abandoned")
	if s := d.Stats(); s.Sent != 0 || s.Failed != 0 || s.Retried != 0 {
		t.Fatalf("Stats = %+v, want only the one dropped", s)
	}
}
