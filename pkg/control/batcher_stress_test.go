package control_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/control"
)

// failMode is how a tallyController fails ReportUsage calls.
type failMode int32

const (
	// failScripted fails every failEvery-th call (never when failEvery is
	// 0); it is the mode of a new tallyController.
	failScripted failMode = iota
	// failAll fails every call.
	failAll
	// failNone fails no call, whatever the call's number.
	failNone
)

// tallyController is an in-process Controller that sums the usage it
// accepts per project and fails ReportUsage calls as its mode says
// (failScripted, failAll, failNone; set with setMode). It checks each entry
// with check as it arrives.
type tallyController struct {
	failEvery int64
	mode      atomic.Int32 // a failMode
	check     func(control.UsageEntry) error

	calls atomic.Int64
	mu    sync.Mutex
	got   map[string]control.UsageEntry
	errs  []error
}

func newTallyController(failEvery int64, check func(control.UsageEntry) error) *tallyController {
	return &tallyController{failEvery: failEvery, check: check, got: map[string]control.UsageEntry{}}
}

func (c *tallyController) ReportUsage(_ context.Context, entries []control.UsageEntry) ([]string, bool, error) {
	n := c.calls.Add(1)
	switch failMode(c.mode.Load()) {
	case failAll:
		return nil, false, errors.New("scripted failure (all calls)")
	case failScripted:
		if c.failEvery > 0 && n%c.failEvery == 0 {
			return nil, false, errors.New("scripted failure (every failEvery-th call)")
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if err := c.check(e); err != nil {
			c.errs = append(c.errs, err)
		}
		t := c.got[e.ProjectID]
		t.ProjectID = e.ProjectID
		t.Count += e.Count
		t.TotalBytes += e.TotalBytes
		c.got[e.ProjectID] = t
	}
	// Block and unblock a project now and then, for Blocked's readers.
	if n%3 == 0 {
		return []string{"p0"}, true, nil
	}
	return nil, n%3 == 1, nil
}

// setMode makes the calls from now on fail as m says.
func (c *tallyController) setMode(m failMode) { c.mode.Store(int32(m)) }

func (c *tallyController) ReportSubscriptions(context.Context, []control.SubscriptionChange) error {
	return nil
}

func (c *tallyController) ReportWebhookFailure(context.Context, control.WebhookFailure) error {
	return nil
}

// delivered returns the totals accepted so far and the entries that failed
// check.
func (c *tallyController) delivered() (map[string]control.UsageEntry, []error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]control.UsageEntry, len(c.got))
	for k, v := range c.got {
		out[k] = v
	}
	return out, append([]error(nil), c.errs...)
}

// stressSize is the data size every publish of project uses in
// TestRecordPublishStress, so that an entry's bytes must be its count times
// that size: a report that took a publish's count without its bytes, or
// the other way round, breaks it.
func stressSize(project string) int64 {
	switch project {
	case "huge":
		return control.FastMaxBytes // counted on the slow path
	case "p0":
		return 0
	}
	return int64(len(project)) * 7
}

// TestRecordPublishStress records publishes from many goroutines on a few
// projects while threshold reports, interval reports (some failing, their
// counts restored) and Stats run concurrently, then checks that no publish
// was lost or counted twice: what the control plane accepted plus what is
// still pending is what was recorded, and each report carried exactly the
// bytes of the publishes it counted. Last, a failed interval report leaves
// counts restored, and Close's final report must deliver them all.
// Meaningful under -race.
func TestRecordPublishStress(t *testing.T) {
	projects := []string{"p0", "p1", "proj-2", "project-3"}
	const goroutines, each = 8, 20_000
	if testing.Short() {
		t.Skip("stress test")
	}
	ctrl := newTallyController(5, func(e control.UsageEntry) error {
		if e.Count <= 0 || e.TotalBytes != e.Count*stressSize(e.ProjectID) {
			return fmt.Errorf("entry %+v: want a positive count and %d bytes per publish", e, stressSize(e.ProjectID))
		}
		return nil
	})
	b := control.New(control.Config{Controller: ctrl, UsageInterval: never, UsageThreshold: 64})
	b.Start()
	t.Cleanup(func() { _ = b.Close(context.Background()) })

	var recorded sync.Map // project → *atomic.Int64 (publishes)
	count := func(project string) {
		v, _ := recorded.LoadOrStore(project, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	stop := make(chan struct{})
	var background sync.WaitGroup
	// Interval reports, as the ticker makes them, and readers of Stats and
	// Blocked.
	background.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			b.FlushUsage()
			time.Sleep(200 * time.Microsecond)
		}
	})
	background.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = b.Stats()
			_ = b.Blocked("p0")
			time.Sleep(100 * time.Microsecond)
		}
	})

	var publishers sync.WaitGroup
	for g := range goroutines {
		publishers.Go(func() {
			for i := range each {
				project := projects[(g+i)%len(projects)]
				switch {
				case i%97 == 0:
					// Rarely used, so often idle at an interval report:
					// its counter is removed and created again while
					// others publish to it.
					project = fmt.Sprintf("rare-%d", g%2)
				case i%251 == 0:
					project = "huge"
				}
				b.RecordPublish(project, int(stressSize(project)))
				count(project)
			}
		})
	}
	publishers.Wait()
	close(stop)
	background.Wait()

	// From here every report fails until Close. One more publish of each
	// project, so that the failing report below always has counts to
	// restore and Close always has restored counts to deliver (the last
	// background report often took everything); a threshold report that
	// takes one of them fails too and restores it.
	ctrl.setMode(failAll)
	for _, project := range projects {
		b.RecordPublish(project, int(stressSize(project)))
		count(project)
	}
	// Fail the last interval report: every count not delivered is pending
	// again, and no report is in flight once FlushUsage returns (reports
	// are made only by the usage goroutine, which runs FlushUsage).
	b.FlushUsage()
	pending := map[string]control.UsageEntry{}
	for _, e := range b.PendingUsage() {
		pending[e.ProjectID] = e
	}
	if len(pending) == 0 {
		t.Fatal("nothing pending after the failed report: want the last publishes restored")
	}
	got, errs := ctrl.delivered()
	for _, err := range errs {
		t.Error(err)
	}
	var total int64
	recorded.Range(func(k, v any) bool {
		project, want := k.(string), v.(*atomic.Int64).Load()
		total += want
		d, p := got[project], pending[project]
		if d.Count+p.Count != want || d.TotalBytes+p.TotalBytes != want*stressSize(project) {
			t.Errorf("%s: delivered %+v + pending %+v, want %d publishes, %d bytes", project, d, p, want, want*stressSize(project))
		}
		return true
	})
	if want := int64(goroutines*each + len(projects)); total != want {
		t.Fatalf("recorded %d publishes, want %d", total, want)
	}
	before := b.Stats()
	if before.UsageReports == 0 || before.UsageFailures < 2 {
		t.Fatalf("Stats = %+v: want reports and failures during the run", before)
	}

	// Close delivers the rest, in one final report that the controller
	// accepts. failNone, not failScripted: the final report is a call like
	// any other, and every failEvery-th call fails in failScripted; a
	// failed final report leaves its counts undelivered and pending (Close
	// reports once, best effort), which the checks below would take for
	// lost publishes.
	ctrl.setMode(failNone)
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := b.Stats(); s.UsageReports != before.UsageReports+1 || s.UsageFailures != before.UsageFailures {
		t.Errorf("Stats after Close = %+v, before %+v: want exactly one more report, the final one, and no more failures", s, before)
	}
	got, _ = ctrl.delivered()
	recorded.Range(func(k, v any) bool {
		project, want := k.(string), v.(*atomic.Int64).Load()
		if d := got[project]; d.Count != want || d.TotalBytes != want*stressSize(project) {
			t.Errorf("%s after Close: delivered %+v, want %d publishes", project, d, want)
		}
		return true
	})
	if p := b.PendingUsage(); len(p) != 0 {
		t.Fatalf("pending after Close = %+v", p)
	}
}

// TestRecordPublishSpill records more bytes for one project than the
// lock-free counter holds, from several goroutines, and checks that
// nothing is lost when the counter is moved aside on the way.
func TestRecordPublishSpill(t *testing.T) {
	b := control.New(control.Config{UsageThreshold: 1 << 30})
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	const goroutines, each = 4, 10_000
	size := control.FastMaxBytes - 1 // 40,000 of them: over 2^39 bytes
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				b.RecordPublish("big", size)
			}
		})
	}
	wg.Wait()
	want := []control.UsageEntry{{ProjectID: "big", Count: goroutines * each, TotalBytes: goroutines * each * int64(size)}}
	if got := b.PendingUsage(); len(got) != 1 || got[0] != want[0] {
		t.Fatalf("pending = %+v, want %+v", got, want)
	}
}

// TestIdleProjectCountedAgain checks that a project counted again after an
// interval report found it idle (and removed its counter) is reported with
// its new counts only.
func TestIdleProjectCountedAgain(t *testing.T) {
	ctrl := newTallyController(0, func(control.UsageEntry) error { return nil })
	b := control.New(control.Config{Controller: ctrl, UsageInterval: never})
	b.Start()
	t.Cleanup(func() { _ = b.Close(context.Background()) })
	record(b, "p1", 3, 2)
	b.FlushUsage() // reports p1
	b.FlushUsage() // finds p1 idle
	if s := b.Stats(); s.PendingProjects != 0 || s.UsageReports != 1 {
		t.Fatalf("Stats = %+v, want one report and nothing pending", s)
	}
	record(b, "p1", 2, 5)
	if got := b.PendingUsage(); len(got) != 1 || got[0] != (control.UsageEntry{ProjectID: "p1", Count: 2, TotalBytes: 10}) {
		t.Fatalf("pending = %+v, want p1: 2 publishes, 10 bytes", got)
	}
	b.FlushUsage()
	if got, _ := ctrl.delivered(); got["p1"] != (control.UsageEntry{ProjectID: "p1", Count: 5, TotalBytes: 16}) {
		t.Fatalf("delivered %+v, want 5 publishes, 16 bytes in all", got["p1"])
	}
}
