package control_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/control/controltest"
	"github.com/NoLagApp/kraken/pkg/control/httpcontrol"
)

// never is an interval that does not elapse during a test.
const never = time.Hour

// wait bounds every Eventually.
const wait = 5 * time.Second

// quiet is how long a test waits to see that nothing is sent.
const quiet = 100 * time.Millisecond

// newBatcher starts a Batcher reporting through httpcontrol to a fake
// control plane; both are closed when the test ends.
func newBatcher(t *testing.T, cfg control.Config) (*control.Batcher, *controltest.Server) {
	t.Helper()
	b, srv := newIdleBatcher(t, cfg)
	b.Start()
	return b, srv
}

// newIdleBatcher is newBatcher without Start, for tests that record before
// the first tick.
func newIdleBatcher(t *testing.T, cfg control.Config) (*control.Batcher, *controltest.Server) {
	t.Helper()
	srv := controltest.NewServer(t, "/v1/kraken")
	ctrl, err := httpcontrol.New(httpcontrol.Config{BaseURL: srv.URL, Secret: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctrl.Close() })
	cfg.Controller = ctrl
	b := control.New(cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return b, srv
}

// record calls RecordPublish n times.
func record(b *control.Batcher, project string, n, bytes int) {
	for range n {
		b.RecordPublish(project, bytes)
	}
}

// usageReports returns how many /usage requests srv received.
func usageReports(srv *controltest.Server) int { return len(srv.Usage()) }

// lastUsage returns the entries of the last /usage request.
func lastUsage(t *testing.T, srv *controltest.Server) []control.UsageEntry {
	t.Helper()
	u := srv.Usage()
	if len(u) == 0 {
		t.Fatal("no usage report received")
	}
	return u[len(u)-1]
}

// stayAt checks that srv's count of usage reports stays n for a while.
func stayAt(t *testing.T, srv *controltest.Server, n int) {
	t.Helper()
	time.Sleep(quiet)
	if got := usageReports(srv); got != n {
		t.Fatalf("%d usage reports, want %d: %+v", got, n, srv.Usage())
	}
}

func TestThresholdReport(t *testing.T) {
	b, srv := newBatcher(t, control.Config{UsageInterval: never})
	record(b, "p1", 99, 10)
	record(b, "p2", 5, 1)
	stayAt(t, srv, 0)

	b.RecordPublish("p1", 10)
	controltest.Eventually(t, wait, func() bool { return b.Stats().UsageReports == 1 }, "no threshold report")
	want := []control.UsageEntry{{ProjectID: "p1", Count: 100, TotalBytes: 1000}}
	if got := lastUsage(t, srv); !slices.Equal(got, want) {
		t.Fatalf("threshold report = %+v, want %+v (that project only)", got, want)
	}
	req := srv.RequestsTo("/usage")[0]
	if got := string(req.Body); got != `{"entries":[{"projectId":"p1","count":100,"totalBytes":1000}]}` {
		t.Fatalf("usage body = %s", got)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer s3cret" {
		t.Fatalf("Authorization = %q", got)
	}
	if s := b.Stats(); s.PendingProjects != 1 || s.UsageReports != 1 {
		t.Fatalf("Stats = %+v; want p2 still pending and one report", s)
	}
	stayAt(t, srv, 1)
}

func TestIntervalReport(t *testing.T) {
	b, srv := newIdleBatcher(t, control.Config{UsageInterval: 30 * time.Millisecond})
	record(b, "p2", 2, 7)
	record(b, "p1", 3, 5)
	b.Start()
	controltest.Eventually(t, wait, func() bool { return usageReports(srv) >= 1 }, "no interval report")
	want := []control.UsageEntry{{ProjectID: "p1", Count: 3, TotalBytes: 15}, {ProjectID: "p2", Count: 2, TotalBytes: 14}}
	if got := srv.Usage()[0]; !slices.Equal(got, want) {
		t.Fatalf("interval report = %+v, want %+v", got, want)
	}
	// Nothing pending and nothing blocked: no report at all.
	stayAt(t, srv, 1)
	// New counts are reported at the next interval.
	b.RecordPublish("p3", 1)
	controltest.Eventually(t, wait, func() bool { return usageReports(srv) == 2 }, "no second interval report")
	if got := lastUsage(t, srv); !slices.Equal(got, []control.UsageEntry{{ProjectID: "p3", Count: 1, TotalBytes: 1}}) {
		t.Fatalf("second report = %+v", got)
	}
}

func TestBlockedSet(t *testing.T) {
	b, srv := newBatcher(t, control.Config{UsageInterval: never})
	blocked := func() []string {
		var out []string
		for _, p := range []string{"p1", "p2", "p3"} {
			if b.Blocked(p) {
				out = append(out, p)
			}
		}
		return out
	}
	if got := blocked(); got != nil {
		t.Fatalf("blocked before any answer = %q", got)
	}

	// An answer with blockedProjects replaces the set.
	srv.SetUsageAnswer(controltest.UsageAnswer{Blocked: []string{"p1", "p2"}})
	b.RecordPublish("p1", 1)
	b.FlushUsage()
	if got := blocked(); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("blocked = %q, want [p1 p2]", got)
	}

	// An answer without the key leaves it unchanged.
	srv.SetUsageAnswer(controltest.UsageAnswer{Omit: true})
	b.RecordPublish("p3", 1)
	b.FlushUsage()
	if got := blocked(); !slices.Equal(got, []string{"p1", "p2"}) {
		t.Fatalf("blocked after an answer without blockedProjects = %q, want [p1 p2]", got)
	}

	// Nothing pending, set non-empty: entries:[] refreshes it.
	srv.SetUsageAnswer(controltest.UsageAnswer{Blocked: []string{"p2"}})
	before := usageReports(srv)
	b.FlushUsage()
	if got := usageReports(srv); got != before+1 {
		t.Fatalf("%d usage reports after a refresh, want %d", got, before+1)
	}
	req := srv.RequestsTo("/usage")[before]
	if string(req.Body) != `{"entries":[]}` {
		t.Fatalf("refresh body = %s, want {\"entries\":[]}", req.Body)
	}
	if got := blocked(); !slices.Equal(got, []string{"p2"}) {
		t.Fatalf("blocked after refresh = %q, want [p2]", got)
	}

	// An empty list unblocks everyone; then nothing is pending and nothing
	// blocked, so no refresh is sent.
	srv.SetUsageAnswer(controltest.UsageAnswer{Blocked: []string{}})
	b.FlushUsage()
	if got := blocked(); got != nil {
		t.Fatalf("blocked after an empty list = %q", got)
	}
	n := usageReports(srv)
	b.FlushUsage()
	if got := usageReports(srv); got != n {
		t.Fatalf("a refresh was sent with nothing pending and nothing blocked")
	}
	if s := b.Stats(); s.BlockedProjects != 0 {
		t.Fatalf("Stats.BlockedProjects = %d", s.BlockedProjects)
	}
}

func TestCountsKeptAfterFailure(t *testing.T) {
	b, srv := newBatcher(t, control.Config{UsageInterval: never})
	srv.SetUsageAnswer(controltest.UsageAnswer{Blocked: []string{"p9"}})
	b.RecordPublish("p0", 1)
	b.FlushUsage() // p9 blocked

	record(b, "p1", 3, 5)
	srv.SetFailing(true)
	b.FlushUsage()
	if s := b.Stats(); s.UsageFailures != 1 || s.PendingProjects != 1 {
		t.Fatalf("after a 500: Stats = %+v; want one failure and p1 pending", s)
	}
	if !b.Blocked("p9") {
		t.Fatal("a failed report changed the blocked set")
	}
	record(b, "p1", 2, 7)
	b.RecordPublish("p2", 7)
	srv.SetFailing(false)
	b.FlushUsage()
	want := []control.UsageEntry{{ProjectID: "p1", Count: 5, TotalBytes: 29}, {ProjectID: "p2", Count: 1, TotalBytes: 7}}
	if got := lastUsage(t, srv); !slices.Equal(got, want) {
		t.Fatalf("report after recovery = %+v, want the merged counts %+v", got, want)
	}
	if s := b.Stats(); s.PendingProjects != 0 {
		t.Fatalf("Stats.PendingProjects = %d after a delivered report", s.PendingProjects)
	}
}

// TestThresholdPausedAfterFailure checks that a failing control plane is
// not called on every publish past the threshold.
func TestThresholdPausedAfterFailure(t *testing.T) {
	b, srv := newBatcher(t, control.Config{UsageInterval: never, UsageThreshold: 10})
	srv.SetFailing(true)
	record(b, "p1", 10, 1)
	controltest.Eventually(t, wait, func() bool { return b.Stats().UsageFailures == 1 }, "no failed threshold report")
	record(b, "p1", 20, 1)
	stayAt(t, srv, 1)

	srv.SetFailing(false)
	b.FlushUsage()
	if got := lastUsage(t, srv); !slices.Equal(got, []control.UsageEntry{{ProjectID: "p1", Count: 30, TotalBytes: 30}}) {
		t.Fatalf("report after recovery = %+v, want 30 publishes", got)
	}
	record(b, "p1", 10, 1)
	controltest.Eventually(t, wait, func() bool { return usageReports(srv) == 3 }, "threshold reports did not resume")
}

// change returns the i-th change of a sequence.
func change(i int) control.SubscriptionChange {
	return control.SubscriptionChange{ActorTokenID: fmt.Sprintf("actor-%d", i), Topic: "demo/general/messages", Action: control.ActionSubscribe}
}

// delivered returns every change received, in order, and the batch sizes.
func delivered(srv *controltest.Server) (changes []control.SubscriptionChange, sizes []int) {
	for _, batch := range srv.Subscriptions() {
		changes = append(changes, batch...)
		sizes = append(sizes, len(batch))
	}
	return changes, sizes
}

func TestSubscriptionBatchBySize(t *testing.T) {
	b, srv := newBatcher(t, control.Config{SubscriptionInterval: never})
	for i := range 50 {
		b.RecordSubscription(change(i))
	}
	controltest.Eventually(t, wait, func() bool { return len(srv.Subscriptions()) == 1 }, "no batch at 50 changes")
	for i := 50; i < 99; i++ {
		b.RecordSubscription(change(i))
	}
	time.Sleep(quiet)
	if n := len(srv.Subscriptions()); n != 1 {
		t.Fatalf("%d batches with 49 changes queued, want 1", n)
	}
	b.RecordSubscription(change(99))
	controltest.Eventually(t, wait, func() bool { return len(srv.Subscriptions()) == 2 }, "no batch at the next 50")
	changes, sizes := delivered(srv)
	if !slices.Equal(sizes, []int{50, 50}) {
		t.Fatalf("batch sizes = %v, want [50 50]", sizes)
	}
	for i, c := range changes {
		if !reflect.DeepEqual(c, change(i)) {
			t.Fatalf("change %d = %+v, want %+v (in order)", i, c, change(i))
		}
	}
}

func TestSubscriptionBatchByTime(t *testing.T) {
	b, srv := newIdleBatcher(t, control.Config{SubscriptionInterval: 30 * time.Millisecond})
	want := controltest.SampleChanges()
	for _, c := range want {
		b.RecordSubscription(c)
	}
	b.Start()
	controltest.Eventually(t, wait, func() bool { c, _ := delivered(srv); return len(c) == len(want) }, "changes not reported")
	got, _ := delivered(srv)
	for i := range want {
		g, w := got[i], want[i]
		if string(g.Filters) != string(w.Filters) {
			t.Fatalf("change %d filters = %s, want %s", i, g.Filters, w.Filters)
		}
		g.Filters, w.Filters = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("change %d = %+v, want %+v", i, g, w)
		}
	}
	// The JSON shape: optional keys only when set.
	body := string(srv.RequestsTo("/subscriptions")[0].Body)
	const first = `{"actorTokenId":"alice","topic":"demo/general/messages","action":"subscribe"}`
	const second = `{"actorTokenId":"bob","topic":"demo/+/jobs","action":"subscribe","loadBalance":true,"loadBalanceGroup":"proj_app_workers","filters":["urgent",["eu","paid"]]}`
	if want := `{"changes":[` + first + `,` + second; len(body) < len(want) || body[:len(want)] != want {
		t.Fatalf("subscriptions body = %s", body)
	}
}

func TestSubscriptionFilters(t *testing.T) {
	b, srv := newBatcher(t, control.Config{SubscriptionInterval: never, SubscriptionBatch: 4})
	buf := []byte(`["a"]`)
	b.RecordSubscription(control.SubscriptionChange{ActorTokenID: "copied", Action: control.ActionSubscribe, Filters: buf})
	copy(buf, `["b"]`) // the caller reuses its buffer
	b.RecordSubscription(control.SubscriptionChange{ActorTokenID: "invalid", Action: control.ActionSubscribe, Filters: json.RawMessage(`["a"`)})
	b.RecordSubscription(control.SubscriptionChange{ActorTokenID: "null", Action: control.ActionSubscribe, Filters: json.RawMessage(`null`)})
	b.RecordSubscription(control.SubscriptionChange{ActorTokenID: "group without lb", Action: control.ActionSubscribe, LoadBalanceGroup: "g"})
	controltest.Eventually(t, wait, func() bool { return len(srv.Subscriptions()) == 1 }, "no batch")
	want := `{"changes":[` +
		`{"actorTokenId":"copied","topic":"","action":"subscribe","filters":["a"]},` +
		`{"actorTokenId":"invalid","topic":"","action":"subscribe"},` +
		`{"actorTokenId":"null","topic":"","action":"subscribe"},` +
		`{"actorTokenId":"group without lb","topic":"","action":"subscribe"}]}`
	if got := string(srv.RequestsTo("/subscriptions")[0].Body); got != want {
		t.Fatalf("body\n got %s\nwant %s", got, want)
	}
}

func TestSubscriptionQueueFull(t *testing.T) {
	b, srv := newBatcher(t, control.Config{SubscriptionInterval: never, SubscriptionQueue: 10})
	for i := range 15 {
		b.RecordSubscription(change(i))
	}
	if s := b.Stats(); s.SubscriptionsDropped != 5 {
		t.Fatalf("SubscriptionsDropped = %d, want 5", s.SubscriptionsDropped)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatalf("Close = %v", err)
	}
	changes, _ := delivered(srv)
	if len(changes) != 10 || !reflect.DeepEqual(changes[9], change(9)) {
		t.Fatalf("final report = %d changes, want the first 10", len(changes))
	}
}

func TestSubscriptionFailureDropped(t *testing.T) {
	b, srv := newIdleBatcher(t, control.Config{SubscriptionInterval: 20 * time.Millisecond})
	srv.SetFailing(true)
	b.RecordSubscription(change(1))
	b.RecordSubscription(change(2))
	b.Start()
	controltest.Eventually(t, wait, func() bool { return b.Stats().SubscriptionFailures == 1 }, "no failed batch")
	srv.SetFailing(false)
	b.RecordSubscription(change(3))
	controltest.Eventually(t, wait, func() bool { return b.Stats().SubscriptionReports == 1 }, "no batch after recovery")
	got := srv.Subscriptions()
	if last := got[len(got)-1]; len(last) != 1 || !reflect.DeepEqual(last[0], change(3)) {
		t.Fatalf("batch after recovery = %+v, want only the new change (failed ones are dropped)", last)
	}
}

func TestWebhookFailureReported(t *testing.T) {
	b, srv := newBatcher(t, control.Config{Node: "kraken@test"})
	f := controltest.SampleFailure()
	f.Node, f.Type = "", ""
	b.RecordWebhookFailure(f)
	controltest.Eventually(t, wait, func() bool { return b.Stats().FailureReports == 1 }, "failure not reported")
	want := controltest.SampleFailure()
	want.Node = "kraken@test"
	if err := controltest.CheckFailureJSON(srv.Failures()[0], want); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Failures()); n != 1 {
		t.Fatalf("%d failure reports received, want 1", n)
	}
}

func TestWebhookFailureQueueFull(t *testing.T) {
	b, srv := newBatcher(t, control.Config{FailureQueue: 2, Timeout: 200 * time.Millisecond})
	srv.SetHanging(true)
	b.RecordWebhookFailure(controltest.SampleFailure()) // taken by the goroutine, which hangs
	controltest.Eventually(t, wait, func() bool { return len(srv.Failures()) == 1 }, "first failure not sent")
	for range 4 {
		b.RecordWebhookFailure(controltest.SampleFailure())
	}
	if s := b.Stats(); s.FailuresDropped != 2 {
		t.Fatalf("FailuresDropped = %d, want 2", s.FailuresDropped)
	}
	srv.SetHanging(false)
}

func TestCloseFlushes(t *testing.T) {
	b, srv := newBatcher(t, control.Config{UsageInterval: never, SubscriptionInterval: never})
	record(b, "p1", 2, 3)
	b.RecordSubscription(change(1))
	b.RecordWebhookFailure(controltest.SampleFailure())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := b.Close(ctx); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if got := srv.Usage(); len(got) != 1 || !slices.Equal(got[0], []control.UsageEntry{{ProjectID: "p1", Count: 2, TotalBytes: 6}}) {
		t.Fatalf("final usage = %+v", got)
	}
	if changes, _ := delivered(srv); len(changes) != 1 {
		t.Fatalf("final subscriptions = %+v", changes)
	}
	if n := len(srv.Failures()); n != 1 {
		t.Fatalf("final failures = %d", n)
	}
	// After Close nothing is accepted.
	b.RecordPublish("p1", 1)
	b.RecordSubscription(change(2))
	b.RecordWebhookFailure(controltest.SampleFailure())
	if s := b.Stats(); s.PendingProjects != 0 || s.SubscriptionsDropped != 1 || s.FailuresDropped != 1 {
		t.Fatalf("Stats after Close = %+v", s)
	}
	if err := b.Close(ctx); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

func TestCloseWithHangingControlPlane(t *testing.T) {
	b, srv := newBatcher(t, control.Config{UsageInterval: never, Timeout: time.Minute})
	srv.SetHanging(true)
	b.RecordPublish("p1", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := b.Close(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("Close took %v with a 100 ms context", d)
	}
	if n := usageReports(srv); n != 1 {
		t.Fatalf("%d usage reports attempted, want the final one", n)
	}
}

func TestNilControllerAndNoStart(t *testing.T) {
	b := control.New(control.Config{})
	b.Start()
	record(b, "p", 200, 1)
	b.RecordSubscription(change(1))
	if b.Blocked("p") {
		t.Fatal("Blocked with no controller")
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Never started: Close only stops accepting.
	b = control.New(control.Config{})
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.Start() // after Close: nothing starts
	b.RecordPublish("p", 1)
	if s := b.Stats(); s.PendingProjects != 0 {
		t.Fatalf("counted after Close: %+v", s)
	}
}

func TestRecordPublishDoesNotAllocate(t *testing.T) {
	b := control.New(control.Config{UsageThreshold: 1 << 30})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	b.RecordPublish("proj", 1)
	if allocs := testing.AllocsPerRun(1000, func() { b.RecordPublish("proj", 28) }); allocs != 0 {
		t.Fatalf("RecordPublish allocates %v times per call", allocs)
	}
	if allocs := testing.AllocsPerRun(1000, func() { _ = b.Blocked("proj") }); allocs != 0 {
		t.Fatalf("Blocked allocates %v times per call", allocs)
	}
}

// TestConcurrentUse runs every entry point at once; meaningful under -race.
func TestConcurrentUse(t *testing.T) {
	b, srv := newBatcher(t, control.Config{UsageInterval: 5 * time.Millisecond, UsageThreshold: 7, SubscriptionInterval: 5 * time.Millisecond})
	srv.SetUsageAnswer(controltest.UsageAnswer{Blocked: []string{"p1"}})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			project := fmt.Sprintf("p%d", g)
			for i := range 300 {
				b.RecordPublish(project, i)
				_ = b.Blocked(project)
				if i%10 == 0 {
					b.RecordSubscription(change(i))
				}
				if i%100 == 0 {
					b.RecordWebhookFailure(controltest.SampleFailure())
					_ = b.Stats()
				}
			}
		})
	}
	wg.Wait()
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var count int64
	for _, batch := range srv.Usage() {
		for _, e := range batch {
			count += e.Count
		}
	}
	if count != 4*300 {
		t.Fatalf("control plane counted %d publishes, want %d", count, 4*300)
	}
}

func BenchmarkRecordPublish(b *testing.B) {
	bt := control.New(control.Config{UsageThreshold: 1 << 30})
	defer bt.Close(context.Background())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			bt.RecordPublish("proj", 28)
		}
	})
}

func BenchmarkBlocked(b *testing.B) {
	bt := control.New(control.Config{})
	defer bt.Close(context.Background())
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = bt.Blocked("proj")
		}
	})
}

// BenchmarkRecordPublishParallel measures RecordPublish from GOMAXPROCS
// goroutines at once (run it with -cpu 1,2,4,8): each goroutine publishes to
// one of projects projects, never reaching the threshold (no_reports), or
// reaching it every 100 publishes of a project with the usage goroutine
// taking the counts meanwhile (threshold_reports, a Controller that accepts
// everything).
func BenchmarkRecordPublishParallel(b *testing.B) {
	for _, c := range []struct {
		name      string
		projects  int
		threshold int
	}{
		{name: "no_reports/1_project", projects: 1, threshold: 1 << 30},
		{name: "no_reports/16_projects", projects: 16, threshold: 1 << 30},
		{name: "threshold_reports/1_project", projects: 1, threshold: 100},
		{name: "threshold_reports/16_projects", projects: 16, threshold: 100},
	} {
		b.Run(c.name, func(b *testing.B) {
			bt := control.New(control.Config{UsageThreshold: c.threshold, UsageInterval: never})
			bt.Start()
			defer func() { _ = bt.Close(context.Background()) }()
			ids := make([]string, c.projects)
			for i := range ids {
				ids[i] = fmt.Sprintf("project-%02d", i)
				bt.RecordPublish(ids[i], 0)
			}
			var next atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1))
				for pb.Next() {
					bt.RecordPublish(ids[i%len(ids)], 28)
					i++
				}
			})
		})
	}
}

// Cancelling Config.Context (the node's base context) cancels the report
// in flight: the Batcher does not wait for Config.Timeout, and the counts
// are kept for the next report.
func TestBaseContextCancelsTheReportInFlight(t *testing.T) {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	b, srv := newBatcher(t, control.Config{UsageInterval: never, UsageThreshold: 1, Timeout: time.Minute, Context: base})
	srv.SetHanging(true)
	b.RecordPublish("p1", 1)
	controltest.Eventually(t, wait, func() bool { return usageReports(srv) == 1 }, "no usage report")
	cancelBase()
	controltest.Eventually(t, wait, func() bool { return b.Stats().UsageFailures == 1 }, "the report was not cancelled")
	if s := b.Stats(); s.PendingProjects != 1 {
		t.Fatalf("Stats = %+v, want the counts of p1 kept", s)
	}
}
