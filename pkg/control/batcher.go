package control

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Defaults of Config (protocol.md §5.2).
const (
	// DefaultUsageInterval is the period of the full usage report.
	DefaultUsageInterval = 30 * time.Second
	// DefaultUsageThreshold is the pending publish count of one project
	// that triggers its report at once.
	DefaultUsageThreshold = 100
	// DefaultSubscriptionBatch is the largest subscription batch, in
	// changes.
	DefaultSubscriptionBatch = 50
	// DefaultSubscriptionInterval is the period of the subscription report.
	DefaultSubscriptionInterval = 500 * time.Millisecond
	// DefaultSubscriptionQueue bounds the queued subscription changes.
	DefaultSubscriptionQueue = 10000
	// DefaultFailureQueue bounds the queued webhook failure reports.
	DefaultFailureQueue = 1000
	// DefaultTimeout bounds each Controller call.
	DefaultTimeout = 5 * time.Second
)

// shrinkAbove is the number of pending projects above which a flush hands the
// pending map back to the garbage collector instead of clearing it for reuse.
const shrinkAbove = 4096

// Config configures a Batcher. The zero value works: it reports nothing
// (a nil Controller) with the §5.2 timing.
type Config struct {
	// Controller delivers the reports. nil accepts everything and never
	// blocks a project, like control/noop.
	Controller Controller
	// Node names this node; it fills WebhookFailure.Node when the failure
	// passed to RecordWebhookFailure has none.
	Node string
	// UsageInterval is how often every project with pending counts is
	// reported, and the blocked set refreshed when nothing is pending
	// (default 30 s).
	UsageInterval time.Duration
	// UsageThreshold is the pending publish count at which a project is
	// reported at once, on its own (default 100). After a failed usage
	// report, threshold reports pause until a report succeeds, so a failing
	// control plane is retried once per UsageInterval and not on every
	// publish.
	UsageThreshold int
	// SubscriptionBatch is the largest number of changes per
	// ReportSubscriptions call; reaching it in the queue triggers a report
	// at once (default 50).
	SubscriptionBatch int
	// SubscriptionInterval is how often queued subscription changes are
	// reported (default 500 ms).
	SubscriptionInterval time.Duration
	// SubscriptionQueue bounds the subscription changes waiting to be
	// reported; RecordSubscription drops and counts a change that finds it
	// full (default 10000).
	SubscriptionQueue int
	// FailureQueue bounds the webhook failures waiting to be reported;
	// RecordWebhookFailure drops and counts one that finds it full (default
	// 1000).
	FailureQueue int
	// Timeout bounds every Controller call (default 5 s, the §5.2 timeout).
	Timeout time.Duration
	// Logger receives failed reports (warn) and blocked-set changes (info);
	// nil means zap.NewNop(). The Batcher logs under the name "control".
	Logger *zap.Logger
}

// withDefaults returns c with every zero or negative field replaced by its
// default.
func (c Config) withDefaults() Config {
	if c.Controller == nil {
		c.Controller = nopController{}
	}
	if c.UsageInterval <= 0 {
		c.UsageInterval = DefaultUsageInterval
	}
	if c.UsageThreshold <= 0 {
		c.UsageThreshold = DefaultUsageThreshold
	}
	if c.SubscriptionBatch <= 0 {
		c.SubscriptionBatch = DefaultSubscriptionBatch
	}
	if c.SubscriptionInterval <= 0 {
		c.SubscriptionInterval = DefaultSubscriptionInterval
	}
	if c.SubscriptionQueue <= 0 {
		c.SubscriptionQueue = DefaultSubscriptionQueue
	}
	if c.FailureQueue <= 0 {
		c.FailureQueue = DefaultFailureQueue
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	return c
}

// Stats are a Batcher's counters since New.
type Stats struct {
	// UsageReports and UsageFailures count ReportUsage calls that succeeded
	// and failed (threshold, interval, refresh and final reports alike).
	UsageReports, UsageFailures uint64
	// PendingProjects is the number of projects with counts not yet
	// delivered; BlockedProjects the size of the blocked set.
	PendingProjects, BlockedProjects int
	// SubscriptionReports and SubscriptionFailures count ReportSubscriptions
	// calls (batches); the changes of a failed batch are lost.
	SubscriptionReports, SubscriptionFailures uint64
	// SubscriptionsDropped counts changes refused by RecordSubscription:
	// the queue was full or the Batcher closed.
	SubscriptionsDropped uint64
	// FailureReports and FailureReportFailures count ReportWebhookFailure
	// calls that succeeded and failed.
	FailureReports, FailureReportFailures uint64
	// FailuresDropped counts webhook failures refused by
	// RecordWebhookFailure: the queue was full or the Batcher closed.
	FailuresDropped uint64
}

// usage is one project's pending counts.
type usage struct {
	count, bytes int64
	// due is set once the project is in Batcher.due, waiting for its
	// threshold report.
	due bool
}

// blockedSet is an immutable set of project ids.
type blockedSet map[string]struct{}

// Batcher is the core policy of the control slot (protocol.md §5.2, §6.12):
// it counts publishes per project and reports them, keeps the set of
// projects over their monthly quota, and batches subscription changes and
// webhook failure reports, all through a Controller. See the package
// documentation for who calls what and the goroutines it runs.
type Batcher struct {
	cfg  Config
	ctrl Controller
	log  *zap.Logger

	// blocked is nil or an immutable set, replaced wholesale.
	blocked atomic.Pointer[blockedSet]

	umu        sync.Mutex // guards the usage fields below
	pending    map[string]usage
	due        []string // projects that reached the threshold, in order
	usagePause bool     // threshold reports paused after a failed report
	usageShut  bool     // Close was called: RecordPublish ignores counts

	smu      sync.Mutex // guards subs and subsShut
	subs     []SubscriptionChange
	subsShut bool

	fmu      sync.Mutex // guards failures and failShut
	failures []WebhookFailure
	failShut bool

	// Buffers owned by the loop goroutines, swapped with the queues.
	usageBuf  []UsageEntry
	subsSpare []SubscriptionChange
	failSpare []WebhookFailure

	usageKick, subsKick, failKick chan struct{} // capacity 1, never closed
	flushReq                      chan chan struct{}
	stop                          chan struct{} // closed by Close

	base   context.Context // cancelled when Close runs out of time
	cancel context.CancelFunc

	lmu     sync.Mutex // guards started and closed
	started bool
	closed  bool
	wg      sync.WaitGroup

	usageReports, usageFailures    atomic.Uint64
	subReports, subFailures        atomic.Uint64
	subsDropped                    atomic.Uint64
	failReports, failReportFailure atomic.Uint64
	failDropped                    atomic.Uint64
}

// New returns a Batcher for cfg, with defaults for zero fields. It starts
// nothing: call Start, then Close when done.
func New(cfg Config) *Batcher {
	cfg = cfg.withDefaults()
	base, cancel := context.WithCancel(context.Background())
	return &Batcher{
		cfg:       cfg,
		ctrl:      cfg.Controller,
		log:       cfg.Logger.Named("control"),
		pending:   make(map[string]usage),
		usageKick: make(chan struct{}, 1),
		subsKick:  make(chan struct{}, 1),
		failKick:  make(chan struct{}, 1),
		flushReq:  make(chan chan struct{}),
		stop:      make(chan struct{}),
		base:      base,
		cancel:    cancel,
	}
}

// Start starts the three reporting goroutines (usage, subscriptions,
// webhook failures). A second call, or a call after Close, does nothing.
func (b *Batcher) Start() {
	b.lmu.Lock()
	defer b.lmu.Unlock()
	if b.started || b.closed {
		return
	}
	b.started = true
	b.wg.Add(3)
	go b.usageLoop()
	go b.subscriptionLoop()
	go b.failureLoop()
}

// RecordPublish counts one accepted publish of projectID whose data renders
// as dataJSONBytes bytes of compact JSON (wire.AppendJSON, OQ-48; a negative
// value counts 0). It is called on the publish path, from any goroutine: it
// takes one short mutex, does no I/O, never waits for the Controller and
// does not allocate in steady state (the pending map keeps its capacity
// between reports). When the project's pending count reaches
// Config.UsageThreshold it wakes the usage goroutine without waiting.
//
// An empty projectID (a token without a project, OQ-35) is not counted, nor
// is anything after Close.
func (b *Batcher) RecordPublish(projectID string, dataJSONBytes int) {
	if projectID == "" {
		return
	}
	kick := false
	b.umu.Lock()
	if !b.usageShut {
		u := b.pending[projectID]
		u.count++
		u.bytes += int64(max(dataJSONBytes, 0))
		if u.count >= int64(b.cfg.UsageThreshold) && !u.due && !b.usagePause {
			u.due = true
			b.due = append(b.due, projectID)
			kick = true
		}
		b.pending[projectID] = u
	}
	b.umu.Unlock()
	if kick {
		select {
		case b.usageKick <- struct{}{}:
		default:
		}
	}
}

// Blocked reports whether projectID is in the blocked set, the projects over
// their monthly quota whose publishes get 42920 (protocol.md §6.12). It is
// called on every publish, from any goroutine, and takes no lock: it reads
// an immutable set through an atomic pointer. The set is node-local, empty
// until the Controller first returns one, and never holds "".
func (b *Batcher) Blocked(projectID string) bool {
	s := b.blocked.Load()
	if s == nil {
		return false
	}
	_, ok := (*s)[projectID]
	return ok
}

// RecordSubscription queues one subscription change for reporting
// (protocol.md §5.2). It is called from any goroutine, takes one short
// mutex, and never waits: a change that finds Config.SubscriptionQueue
// changes already queued, or that comes after Close, is dropped and counted
// in Stats.SubscriptionsDropped. c.Filters is copied; Filters that are not
// valid JSON are removed from the change.
func (b *Batcher) RecordSubscription(c SubscriptionChange) {
	if len(c.Filters) > 0 {
		if hasFilters(c.Filters) && json.Valid(c.Filters) {
			c.Filters = bytes.Clone(c.Filters)
		} else {
			c.Filters = nil
		}
	}
	kick := false
	b.smu.Lock()
	if b.subsShut || len(b.subs) >= b.cfg.SubscriptionQueue {
		b.smu.Unlock()
		b.subsDropped.Add(1)
		return
	}
	b.subs = append(b.subs, c)
	kick = len(b.subs) >= b.cfg.SubscriptionBatch
	b.smu.Unlock()
	if kick {
		select {
		case b.subsKick <- struct{}{}:
		default:
		}
	}
}

// RecordWebhookFailure queues the report of one trigger webhook that finally
// failed (protocol.md §5.2, §5.3); it fits webhook.Config.OnFailure. It
// never waits: a failure that finds Config.FailureQueue reports queued, or
// that comes after Close, is dropped and counted. An empty Node is filled
// with Config.Node, an empty Type with FailureTypeTrigger and a zero
// Timestamp with the current time. f.RequestBody is retained: the caller
// must not modify it afterwards.
func (b *Batcher) RecordWebhookFailure(f WebhookFailure) {
	if f.Node == "" {
		f.Node = b.cfg.Node
	}
	if f.Type == "" {
		f.Type = FailureTypeTrigger
	}
	if f.Timestamp.IsZero() {
		f.Timestamp = time.Now()
	}
	b.fmu.Lock()
	if b.failShut || len(b.failures) >= b.cfg.FailureQueue {
		b.fmu.Unlock()
		b.failDropped.Add(1)
		return
	}
	b.failures = append(b.failures, f)
	b.fmu.Unlock()
	select {
	case b.failKick <- struct{}{}:
	default:
	}
}

// Stats returns the current counters. It is safe to call at any time.
func (b *Batcher) Stats() Stats {
	b.umu.Lock()
	pending := len(b.pending)
	b.umu.Unlock()
	blocked := 0
	if s := b.blocked.Load(); s != nil {
		blocked = len(*s)
	}
	return Stats{
		UsageReports:          b.usageReports.Load(),
		UsageFailures:         b.usageFailures.Load(),
		PendingProjects:       pending,
		BlockedProjects:       blocked,
		SubscriptionReports:   b.subReports.Load(),
		SubscriptionFailures:  b.subFailures.Load(),
		SubscriptionsDropped:  b.subsDropped.Load(),
		FailureReports:        b.failReports.Load(),
		FailureReportFailures: b.failReportFailure.Load(),
		FailuresDropped:       b.failDropped.Load(),
	}
}

// Close stops accepting records and makes a final report, best effort, of
// the pending usage counts, the queued subscription changes and the queued
// webhook failures, each call bounded by Config.Timeout. It returns once
// every goroutine of the Batcher has exited: nil when the final reports
// finished in time, else ctx.Err() after cancelling the calls still in
// flight (which the Controller contract makes return promptly). Close is
// safe to call more than once and from any goroutine; on a Batcher that was
// never started it only stops accepting records, and what was recorded is
// not reported. It does not close the Controller (see Closer).
func (b *Batcher) Close(ctx context.Context) error {
	b.lmu.Lock()
	if !b.closed {
		b.closed = true
		b.umu.Lock()
		b.usageShut = true
		b.umu.Unlock()
		b.smu.Lock()
		b.subsShut = true
		b.smu.Unlock()
		b.fmu.Lock()
		b.failShut = true
		b.fmu.Unlock()
		close(b.stop)
	}
	b.lmu.Unlock()

	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		b.cancel()
		<-done
	}
	b.cancel()
	return err
}

// usageLoop is the usage goroutine: threshold reports when kicked, a full
// report every UsageInterval, a final report at stop.
func (b *Batcher) usageLoop() {
	defer b.wg.Done()
	tick := time.NewTicker(b.cfg.UsageInterval)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			b.flushUsage(false)
			return
		case <-tick.C:
			b.flushUsage(true)
		case <-b.usageKick:
			b.flushDue()
		case done := <-b.flushReq:
			b.flushUsage(true)
			close(done)
		}
	}
}

// flushDue reports each project that reached the threshold, one call per
// project (§5.2: "immediately, for one project"). After a failure the
// remaining projects go back to pending for the interval report.
func (b *Batcher) flushDue() {
	b.umu.Lock()
	batch := b.usageBuf[:0]
	for _, id := range b.due {
		u, ok := b.pending[id]
		if !ok || !u.due {
			continue // taken by an interval report meanwhile
		}
		batch = append(batch, UsageEntry{ProjectID: id, Count: u.count, TotalBytes: u.bytes})
		delete(b.pending, id)
	}
	clear(b.due)
	b.due = b.due[:0]
	b.umu.Unlock()
	for i := range batch {
		if !b.reportUsage(batch[i : i+1]) {
			b.restore(batch[i+1:])
			break
		}
	}
	b.usageBuf = batch[:0]
}

// flushUsage reports every project with pending counts in one call. When
// nothing is pending and refresh is set, it reports an empty batch if the
// blocked set is non-empty, so that projects that upgraded get unblocked.
func (b *Batcher) flushUsage(refresh bool) {
	b.umu.Lock()
	batch := b.usageBuf[:0]
	for id, u := range b.pending {
		batch = append(batch, UsageEntry{ProjectID: id, Count: u.count, TotalBytes: u.bytes})
	}
	if len(b.pending) > shrinkAbove {
		b.pending = make(map[string]usage)
	} else {
		clear(b.pending)
	}
	clear(b.due)
	b.due = b.due[:0]
	b.umu.Unlock()
	if len(batch) == 0 {
		if s := b.blocked.Load(); !refresh || s == nil || len(*s) == 0 {
			return
		}
	}
	slices.SortFunc(batch, func(x, y UsageEntry) int { return strings.Compare(x.ProjectID, y.ProjectID) })
	b.reportUsage(batch)
	clear(batch)
	b.usageBuf = batch[:0]
}

// reportUsage makes one ReportUsage call and applies its answer: counts
// restored and threshold reports paused on failure, the blocked set
// replaced when the answer carries one.
func (b *Batcher) reportUsage(entries []UsageEntry) bool {
	ctx, cancel := context.WithTimeout(b.base, b.cfg.Timeout)
	blocked, replace, err := b.ctrl.ReportUsage(ctx, entries)
	cancel()
	if err != nil {
		b.usageFailures.Add(1)
		b.log.Warn("usage report failed; counts kept for the next report",
			zap.Int("projects", len(entries)), zap.Error(err))
		b.restore(entries)
		return false
	}
	b.usageReports.Add(1)
	b.umu.Lock()
	b.usagePause = false
	b.umu.Unlock()
	if replace {
		b.setBlocked(blocked)
	}
	return true
}

// restore merges undelivered entries back into the pending counts and
// pauses threshold reports.
func (b *Batcher) restore(entries []UsageEntry) {
	b.umu.Lock()
	defer b.umu.Unlock()
	b.usagePause = true
	for _, e := range entries {
		u := b.pending[e.ProjectID]
		u.count += e.Count
		u.bytes += e.TotalBytes
		b.pending[e.ProjectID] = u
	}
}

// setBlocked replaces the blocked set with ids.
func (b *Batcher) setBlocked(ids []string) {
	next := make(blockedSet, len(ids))
	for _, id := range ids {
		if id != "" {
			next[id] = struct{}{}
		}
	}
	prev := b.blocked.Swap(&next)
	if prev == nil && len(next) == 0 {
		return
	}
	if prev != nil && len(*prev) == len(next) {
		same := true
		for id := range next {
			if _, ok := (*prev)[id]; !ok {
				same = false
				break
			}
		}
		if same {
			return
		}
	}
	b.log.Info("blocked projects changed", zap.Int("blocked_projects", len(next)))
}

// subscriptionLoop is the subscription goroutine: it reports the queue when
// kicked (SubscriptionBatch queued), every SubscriptionInterval, and at stop.
func (b *Batcher) subscriptionLoop() {
	defer b.wg.Done()
	tick := time.NewTicker(b.cfg.SubscriptionInterval)
	defer tick.Stop()
	for {
		select {
		case <-b.stop:
			b.flushSubscriptions()
			return
		case <-tick.C:
			b.flushSubscriptions()
		case <-b.subsKick:
			b.flushSubscriptions()
		}
	}
}

// flushSubscriptions takes the whole queue and reports it in batches of at
// most SubscriptionBatch changes, in order.
func (b *Batcher) flushSubscriptions() {
	b.smu.Lock()
	queue := b.subs
	b.subs = b.subsSpare[:0]
	b.smu.Unlock()
	for start := 0; start < len(queue); start += b.cfg.SubscriptionBatch {
		batch := queue[start:min(start+b.cfg.SubscriptionBatch, len(queue))]
		ctx, cancel := context.WithTimeout(b.base, b.cfg.Timeout)
		err := b.ctrl.ReportSubscriptions(ctx, batch)
		cancel()
		if err != nil {
			b.subFailures.Add(1)
			b.log.Warn("subscription report failed; changes dropped",
				zap.Int("changes", len(batch)), zap.Error(err))
			continue
		}
		b.subReports.Add(1)
	}
	clear(queue)
	b.subsSpare = queue[:0]
}

// failureLoop is the webhook-failure goroutine: it reports each queued
// failure when kicked, and the rest at stop.
func (b *Batcher) failureLoop() {
	defer b.wg.Done()
	for {
		select {
		case <-b.stop:
			b.flushFailures()
			return
		case <-b.failKick:
			b.flushFailures()
		}
	}
}

// flushFailures reports every queued webhook failure, one call each.
func (b *Batcher) flushFailures() {
	b.fmu.Lock()
	queue := b.failures
	b.failures = b.failSpare[:0]
	b.fmu.Unlock()
	for _, f := range queue {
		ctx, cancel := context.WithTimeout(b.base, b.cfg.Timeout)
		err := b.ctrl.ReportWebhookFailure(ctx, f)
		cancel()
		if err != nil {
			b.failReportFailure.Add(1)
			b.log.Warn("webhook failure report failed; dropped",
				zap.String("webhook_url", f.WebhookURL), zap.Error(err))
			continue
		}
		b.failReports.Add(1)
	}
	clear(queue)
	b.failSpare = queue[:0]
}

// nopController is the Controller of a Config without one.
type nopController struct{}

func (nopController) ReportUsage(context.Context, []UsageEntry) ([]string, bool, error) {
	return nil, false, nil
}

func (nopController) ReportSubscriptions(context.Context, []SubscriptionChange) error { return nil }

func (nopController) ReportWebhookFailure(context.Context, WebhookFailure) error { return nil }
