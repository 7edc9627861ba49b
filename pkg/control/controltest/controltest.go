package controltest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/control"
)

// UsageAnswer scripts the control plane's answer to usage reports.
type UsageAnswer struct {
	// Blocked is the blocked set to answer with (replace=true); nil and
	// empty both mean an empty set.
	Blocked []string
	// Omit answers without a blocked set (no blockedProjects key): the
	// caller's set stays as it is. It wins over Blocked.
	Omit bool
	// Raw, when set, is sent verbatim as the /usage body (Server only); it
	// wins over Omit and Blocked.
	Raw string
}

// Recorder is the control plane behind a backend under test: it records
// what the backend delivered and scripts the answers. A backend's test
// provides one with its factory; Server is the Recorder of HTTP backends.
// Implementations are safe for concurrent use.
type Recorder interface {
	// Usage returns the entries of each usage report received, in order;
	// an empty report gives an empty, non-nil batch.
	Usage() [][]control.UsageEntry
	// Subscriptions returns the changes of each subscription report, in
	// order.
	Subscriptions() [][]control.SubscriptionChange
	// Failures returns the JSON of each webhook failure report as
	// received, in order.
	Failures() []json.RawMessage
	// SetUsageAnswer sets the answer to usage reports from now on.
	SetUsageAnswer(UsageAnswer)
	// SetFailing makes every report fail (true) or succeed (false).
	SetFailing(bool)
	// SetHanging makes every report wait, without answering, until the
	// caller gives up (true), or answer at once (false).
	SetHanging(bool)
}

// Run runs the conformance suite for a control.Controller backend as
// subtests of t. newController must return a fresh backend talking to a
// fresh Recorder, stopped with t.Cleanup (a control.Closer is also closed by
// the suite). The suite checks that reports arrive intact and in order,
// that usage answers are passed through with the replace/unchanged
// distinction of wire-reference.md §5.2, that failures are errors, that header
// values of webhook failures never leave the node (OQ-63), that every
// method returns promptly once its context ends while the control plane
// hangs, and concurrent use (meaningful under -race).
func Run(t *testing.T, newController func(t *testing.T) (control.Controller, Recorder)) {
	t.Helper()
	s := suite{newController: newController}
	t.Run("UsageRoundTrip", s.usageRoundTrip)
	t.Run("UsageEmpty", s.usageEmpty)
	t.Run("BlockedReplaced", s.blockedReplaced)
	t.Run("BlockedEmptied", s.blockedEmptied)
	t.Run("BlockedUnchanged", s.blockedUnchanged)
	t.Run("UsageFailure", s.usageFailure)
	t.Run("Subscriptions", s.subscriptions)
	t.Run("SubscriptionFailure", s.subscriptionFailure)
	t.Run("WebhookFailure", s.webhookFailure)
	t.Run("ContextEnds", s.contextEnds)
	t.Run("Concurrent", s.concurrent)
}

type suite struct {
	newController func(t *testing.T) (control.Controller, Recorder)
}

// start returns a backend, closing it when t ends.
func (s suite) start(t *testing.T) (control.Controller, Recorder) {
	t.Helper()
	c, rec := s.newController(t)
	if cl, ok := c.(control.Closer); ok {
		t.Cleanup(func() { _ = cl.Close() })
	}
	return c, rec
}

// ctx returns a context that ends with the test or after ten seconds.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func (s suite) usageRoundTrip(t *testing.T) {
	c, rec := s.start(t)
	rec.SetUsageAnswer(UsageAnswer{Omit: true})
	want := []control.UsageEntry{
		{ProjectID: "proj-a", Count: 100, TotalBytes: 2800},
		{ProjectID: "proj-b", Count: 1, TotalBytes: 0},
	}
	if _, _, err := c.ReportUsage(ctx(t), want); err != nil {
		t.Fatalf("ReportUsage = %v", err)
	}
	if got := rec.Usage(); len(got) != 1 || !slices.Equal(got[0], want) {
		t.Fatalf("control plane received %+v, want one report %+v", got, want)
	}
}

func (s suite) usageEmpty(t *testing.T) {
	c, rec := s.start(t)
	for _, entries := range [][]control.UsageEntry{nil, {}} {
		if _, _, err := c.ReportUsage(ctx(t), entries); err != nil {
			t.Fatalf("ReportUsage(%#v) = %v", entries, err)
		}
	}
	got := rec.Usage()
	if len(got) != 2 {
		t.Fatalf("control plane received %d usage reports, want 2", len(got))
	}
	for i, batch := range got {
		if batch == nil || len(batch) != 0 {
			t.Fatalf("report %d = %#v, want an empty entries list", i, batch)
		}
	}
}

func (s suite) blockedReplaced(t *testing.T) {
	c, rec := s.start(t)
	rec.SetUsageAnswer(UsageAnswer{Blocked: []string{"p1", "p2"}})
	blocked, replace, err := c.ReportUsage(ctx(t), []control.UsageEntry{{ProjectID: "p1", Count: 1}})
	if err != nil || !replace {
		t.Fatalf("ReportUsage = %v, replace %v, %v; want the blocked set", blocked, replace, err)
	}
	if got := slices.Sorted(slices.Values(blocked)); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("blocked = %q, want [p1 p2]", blocked)
	}
}

func (s suite) blockedEmptied(t *testing.T) {
	c, rec := s.start(t)
	rec.SetUsageAnswer(UsageAnswer{Blocked: []string{}})
	blocked, replace, err := c.ReportUsage(ctx(t), nil)
	if err != nil || !replace || len(blocked) != 0 {
		t.Fatalf("ReportUsage = %q, replace %v, %v; want an empty set with replace", blocked, replace, err)
	}
}

func (s suite) blockedUnchanged(t *testing.T) {
	c, rec := s.start(t)
	rec.SetUsageAnswer(UsageAnswer{Omit: true})
	_, replace, err := c.ReportUsage(ctx(t), []control.UsageEntry{{ProjectID: "p", Count: 1}})
	if err != nil || replace {
		t.Fatalf("ReportUsage: replace %v, err %v; want no replace, nil", replace, err)
	}
}

func (s suite) usageFailure(t *testing.T) {
	c, rec := s.start(t)
	rec.SetFailing(true)
	if _, _, err := c.ReportUsage(ctx(t), []control.UsageEntry{{ProjectID: "p", Count: 1}}); err == nil {
		t.Fatal("ReportUsage to a failing control plane = nil, want an error")
	}
	rec.SetFailing(false)
	if _, _, err := c.ReportUsage(ctx(t), []control.UsageEntry{{ProjectID: "p", Count: 1}}); err != nil {
		t.Fatalf("ReportUsage after recovery = %v", err)
	}
}

// SampleChanges are subscription changes covering every optional field.
func SampleChanges() []control.SubscriptionChange {
	return []control.SubscriptionChange{
		{ActorTokenID: "alice", Topic: "demo/general/messages", Action: control.ActionSubscribe},
		{ActorTokenID: "bob", Topic: "demo/+/jobs", Action: control.ActionSubscribe, LoadBalance: true,
			LoadBalanceGroup: "proj_app_workers", Filters: json.RawMessage(`["urgent",["eu","paid"]]`)},
		{ActorTokenID: "carol", Topic: "demo/general/messages", Action: control.ActionSubscribe, Filters: json.RawMessage(`["a"]`)},
		{ActorTokenID: "alice", Topic: "demo/general/messages", Action: control.ActionUnsubscribe},
	}
}

func (s suite) subscriptions(t *testing.T) {
	c, rec := s.start(t)
	want := SampleChanges()
	if err := c.ReportSubscriptions(ctx(t), want); err != nil {
		t.Fatalf("ReportSubscriptions = %v", err)
	}
	got := rec.Subscriptions()
	if len(got) != 1 || len(got[0]) != len(want) {
		t.Fatalf("control plane received %+v, want one batch of %d", got, len(want))
	}
	for i := range want {
		if err := sameChange(got[0][i], want[i]); err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
	}
}

// sameChange compares changes, Filters as JSON values.
func sameChange(got, want control.SubscriptionChange) error {
	gf, wf := got.Filters, want.Filters
	got.Filters, want.Filters = nil, nil
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("got %+v, want %+v", got, want)
	}
	var gv, wv any
	_ = json.Unmarshal(gf, &gv)
	_ = json.Unmarshal(wf, &wv)
	if !reflect.DeepEqual(gv, wv) {
		return fmt.Errorf("filters %s, want %s", gf, wf)
	}
	return nil
}

func (s suite) subscriptionFailure(t *testing.T) {
	c, rec := s.start(t)
	rec.SetFailing(true)
	if err := c.ReportSubscriptions(ctx(t), SampleChanges()[:1]); err == nil {
		t.Fatal("ReportSubscriptions to a failing control plane = nil, want an error")
	}
}

// SampleFailure is a webhook failure with every field set; its header
// values are secrets that must never be delivered.
func SampleFailure() control.WebhookFailure {
	return control.WebhookFailure{
		OrganizationID: "org-1",
		ProjectID:      "proj-1",
		AppID:          "app-1",
		Type:           control.FailureTypeTrigger,
		WebhookURL:     "https://hooks.example.com/kraken",
		RequestHeaders: []string{"Authorization", "X-Api-Key"},
		RequestBody:    json.RawMessage(`{"roomName":"general","topicName":"messages","actorId":"alice","data":{"text":"hi"},"scope":null}`),
		ResponseStatus: 0,
		ErrorMessage:   "max_retries_exceeded",
		Node:           "kraken@node-1",
		Timestamp:      time.UnixMilli(1_700_000_000_123),
	}
}

func (s suite) webhookFailure(t *testing.T) {
	c, rec := s.start(t)
	if err := c.ReportWebhookFailure(ctx(t), SampleFailure()); err != nil {
		t.Fatalf("ReportWebhookFailure = %v", err)
	}
	got := rec.Failures()
	if len(got) != 1 {
		t.Fatalf("control plane received %d failure reports, want 1", len(got))
	}
	if err := CheckFailureJSON(got[0], SampleFailure()); err != nil {
		t.Fatal(err)
	}
}

// CheckFailureJSON checks that js is the §5.2 rendering of f: every field
// present with its value, appId and roomId null when empty, the header names
// kept and every header value control.RedactedHeaderValue.
func CheckFailureJSON(js []byte, f control.WebhookFailure) error {
	var got map[string]any
	if err := json.Unmarshal(js, &got); err != nil {
		return fmt.Errorf("failure report %s: %v", js, err)
	}
	headers := map[string]any{}
	for _, name := range f.RequestHeaders {
		headers[name] = control.RedactedHeaderValue
	}
	var body any
	if err := json.Unmarshal(f.RequestBody, &body); err != nil {
		return fmt.Errorf("want body %s: %v", f.RequestBody, err)
	}
	nullable := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	want := map[string]any{
		"organizationId": f.OrganizationID,
		"projectId":      f.ProjectID,
		"appId":          nullable(f.AppID),
		"roomId":         nullable(f.RoomID),
		"type":           f.Type,
		"webhookUrl":     f.WebhookURL,
		"requestHeaders": headers,
		"requestBody":    body,
		"responseStatus": float64(f.ResponseStatus),
		"errorMessage":   f.ErrorMessage,
		"node":           f.Node,
		"timestamp":      float64(f.Timestamp.UnixMilli()),
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("failure report\n got %s\nwant %v", js, want)
	}
	return nil
}

func (s suite) contextEnds(t *testing.T) {
	c, rec := s.start(t)
	rec.SetHanging(true)
	calls := map[string]func(context.Context) error{
		"ReportUsage": func(ctx context.Context) error {
			_, _, err := c.ReportUsage(ctx, []control.UsageEntry{{ProjectID: "p", Count: 1}})
			return err
		},
		"ReportSubscriptions": func(ctx context.Context) error {
			return c.ReportSubscriptions(ctx, SampleChanges())
		},
		"ReportWebhookFailure": func(ctx context.Context) error {
			return c.ReportWebhookFailure(ctx, SampleFailure())
		},
	}
	for name, call := range calls {
		cctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		start := time.Now()
		err := call(cctx)
		cancel()
		if err == nil {
			t.Fatalf("%s to a hanging control plane = nil, want an error", name)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s returned %v after its context ended, want promptly", name, d)
		}
	}
	rec.SetHanging(false)
}

func (s suite) concurrent(t *testing.T) {
	c, rec := s.start(t)
	const goroutines, each = 8, 5
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*each*2)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("p%d-%d", g, i)
				if _, _, err := c.ReportUsage(ctx(t), []control.UsageEntry{{ProjectID: id, Count: 1}}); err != nil {
					errs <- err
				}
				if err := c.ReportSubscriptions(ctx(t), SampleChanges()[:1]); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent report: %v", err)
	}
	if n := len(rec.Usage()); n != goroutines*each {
		t.Fatalf("control plane received %d usage reports, want %d", n, goroutines*each)
	}
	if n := len(rec.Subscriptions()); n != goroutines*each {
		t.Fatalf("control plane received %d subscription reports, want %d", n, goroutines*each)
	}
}

// Eventually polls cond every few milliseconds until it holds, failing t
// with msg if it does not within timeout.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: "+msg, append([]any{timeout}, args...)...)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
