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

// Defaults of Config (wire-reference.md §5.2).
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
	// Context is the node's base context: every Controller call is made
	// with a context derived from it, so cancelling it cancels the calls in
	// flight (the final reports of Close included). nil means
	// context.Background(); Close cancels the calls when it runs out of
	// time whatever it is.
	Context context.Context
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
	if c.Context == nil {
		c.Context = context.Background()
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

// Packing of counter.word, the counts RecordPublish adds to without a lock:
// one atomic add records a publish and its bytes together, so that a report
// taking the word (an atomic swap) always takes both or neither.
const (
	// wordCountShift is the position of the publish count, in bits 40–62;
	// the bytes are in bits 0–39.
	wordCountShift = 40
	// wordBytesMask selects the bytes.
	wordBytesMask = 1<<wordCountShift - 1
	// wordCountMask selects the publish count once shifted down.
	wordCountMask = 1<<23 - 1
	// wordRetired (bit 63) marks a counter that has left Batcher.counters:
	// whatever is added to it afterwards is ignored, and the adder counts
	// its publish again on the slow path.
	wordRetired = 1 << 63
	// wordOnePublish is the count field's unit.
	wordOnePublish = 1 << wordCountShift

	// spillCount (publishes) and spillBytes (bytes) are the field values at
	// which RecordPublish moves the word into the counter's carry, under
	// the Batcher mutex, long before a field can overflow into the next:
	// between the add that reaches a limit and the move, each goroutine
	// adds at most once more (it then waits for the mutex to move the word
	// itself), so a field would overflow only with 2^22 goroutines adding
	// at once (count) or 2^15 each adding fastMaxBytes (bytes).
	spillCount = 1 << 22
	spillBytes = 1 << 39
	// fastMaxBytes bounds the bytes RecordPublish adds to the word, in
	// bytes; a larger size, which no publish under MAX_MESSAGE_SIZE has, is
	// counted on the slow path.
	fastMaxBytes = 1 << 24
)

// counter is one project's pending usage: what RecordPublish counted and no
// delivered report has taken yet. RecordPublish reaches it through
// Batcher.counters and adds to word without the Batcher mutex; every other
// field is written under Batcher.umu.
type counter struct {
	// word holds the publishes and their bytes added since the last take
	// (see wordCountShift), and wordRetired once the counter has left
	// Batcher.counters.
	word atomic.Uint64
	// carryCount (publishes) and carryBytes (bytes) are pending counts held
	// outside word: spilled from it before a field could overflow, or
	// restored after a failed report. carryCount is atomic because
	// RecordPublish reads it for the threshold; both are written under umu.
	carryCount atomic.Int64
	carryBytes int64
	// due is set once the counter is in Batcher.due, waiting for its
	// threshold report; written under umu, read by RecordPublish.
	due atomic.Bool
	// id is the project.
	id string
}

// wordCount and wordBytes are the fields of a word.
func wordCount(w uint64) int64 { return int64(w >> wordCountShift & wordCountMask) }
func wordBytes(w uint64) int64 { return int64(w & wordBytesMask) }

// take returns c's pending counts and resets them, leaving w in word (0, or
// wordRetired to retire c). Callers hold umu and know c is not retired.
func (c *counter) take(w uint64) (count, bytes int64) {
	v := c.word.Swap(w)
	count = wordCount(v) + c.carryCount.Swap(0)
	bytes = wordBytes(v) + c.carryBytes
	c.carryBytes = 0
	c.due.Store(false)
	return count, bytes
}

// blockedSet is an immutable set of project ids.
type blockedSet map[string]struct{}

// Batcher is the core policy of the control slot (wire-reference.md §5.2, §6.12):
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

	// counters maps a project id to its *counter. RecordPublish loads from
	// it without a lock; counters are stored and deleted under umu. A
	// counter is created by the first publish of its project and removed by
	// the interval report that finds it idle (nothing counted since the
	// previous take), so the map holds the projects active in about the
	// last UsageInterval.
	counters sync.Map

	umu        sync.Mutex  // guards the usage fields below and counters' writes
	due        []*counter  // projects that reached the threshold, in order
	usagePause atomic.Bool // threshold reports paused after a failed report; written under umu
	usageShut  atomic.Bool // Close was called: RecordPublish ignores counts; written under umu

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

	base   context.Context // Config.Context's child, cancelled when Close runs out of time
	cancel context.CancelFunc

	lmu     sync.Mutex // guards started and closed
	started bool
	closed  bool
	wg      sync.WaitGroup // the three loops; Close waits for them

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
	base, cancel := context.WithCancel(cfg.Context)
	return &Batcher{
		cfg:       cfg,
		ctrl:      cfg.Controller,
		log:       cfg.Logger.Named("control"),
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
	b.wg.Add(3) // the loops are owned by wg: Close stops and waits for them
	go b.usageLoop()
	go b.subscriptionLoop()
	go b.failureLoop()
}

// RecordPublish counts one accepted publish of projectID whose data renders
// as dataJSONBytes bytes of compact JSON (wire.JSONLen, the length of
// wire.AppendJSON, OQ-48; a negative value counts 0). It is called on the
// publish path, from any goroutine. It never waits for the Controller, does
// no I/O, and on its common path takes no lock and does not allocate: it
// finds the project's counter in a concurrent map and adds the publish and
// its bytes to it with one atomic add. It takes the Batcher mutex only for
// the first publish of a project since its counter was last removed (which
// allocates the counter), when the project's pending count reaches
// Config.UsageThreshold (it then wakes the usage goroutine without
// waiting), and, rarely, to move a counter's fields before they overflow.
//
// An empty projectID (a token without a project, OQ-35) is not counted, nor
// is anything after Close. A publish is counted in exactly one report: a
// report takes a project's publish count and bytes together, so a publish
// recorded while a report is taken is in that report or in the next.
func (b *Batcher) RecordPublish(projectID string, dataJSONBytes int) {
	if projectID == "" || b.usageShut.Load() {
		return
	}
	size := uint64(max(dataJSONBytes, 0))
	if size < fastMaxBytes {
		if v, ok := b.counters.Load(projectID); ok && b.add(v.(*counter), size) {
			return
		}
	}
	b.recordSlow(projectID, size)
}

// add counts one publish of size bytes (below fastMaxBytes) in c, the
// counter RecordPublish loaded, with one atomic add, and then takes the
// mutex only to move a word about to overflow or to queue c for its
// threshold report. It returns false, having counted nothing, when c was
// retired after the load: the caller counts the publish again under the
// mutex.
func (b *Batcher) add(c *counter, size uint64) bool {
	w := c.word.Add(wordOnePublish | size)
	switch {
	case w&wordRetired != 0:
		return false // this add to a retired word is ignored
	case wordCount(w) >= spillCount || wordBytes(w) >= spillBytes:
		b.spill(c)
	case c.due.Load() ||
		wordCount(w)+c.carryCount.Load() < int64(b.cfg.UsageThreshold) ||
		b.usagePause.Load():
	default:
		b.markDue(c)
	}
	return true
}

// recordSlow is RecordPublish under the mutex: for a project without a
// counter, a counter retired under the caller, or an oversized publish.
func (b *Batcher) recordSlow(projectID string, size uint64) {
	b.umu.Lock()
	if b.usageShut.Load() {
		b.umu.Unlock()
		return
	}
	c := b.counterLocked(projectID)
	if size < fastMaxBytes {
		c.word.Add(wordOnePublish | size)
	} else {
		c.carryCount.Add(1)
		c.carryBytes += int64(size)
	}
	b.checkUnlock(c)
}

// spill moves c's word into its carry, before a field of the word can
// overflow, then checks the threshold as RecordPublish would have.
func (b *Batcher) spill(c *counter) {
	b.umu.Lock()
	if c.word.Load()&wordRetired != 0 {
		// Taken by a report and retired meanwhile: nothing to move.
		b.umu.Unlock()
		return
	}
	w := c.word.Swap(0)
	c.carryCount.Add(wordCount(w))
	c.carryBytes += wordBytes(w)
	b.checkUnlock(c)
}

// checkUnlock runs checkLocked for c, releases the mutex, and kicks the
// usage goroutine when c became due.
func (b *Batcher) checkUnlock(c *counter) {
	kick := b.checkLocked(c)
	b.umu.Unlock()
	if kick {
		b.kickUsage()
	}
}

// markDue queues c for a threshold report if it is still due once under
// the mutex.
func (b *Batcher) markDue(c *counter) {
	b.umu.Lock()
	b.checkUnlock(c)
}

// checkLocked appends c to due when its pending count has reached the
// threshold, it is not due already, threshold reports are not paused and
// the Batcher is open; it reports whether it did, so that the caller wakes
// the usage goroutine once it has released umu. Callers hold umu.
func (b *Batcher) checkLocked(c *counter) bool {
	w := c.word.Load()
	if w&wordRetired != 0 || c.due.Load() || b.usagePause.Load() || b.usageShut.Load() {
		return false
	}
	if wordCount(w)+c.carryCount.Load() < int64(b.cfg.UsageThreshold) {
		return false
	}
	c.due.Store(true)
	b.due = append(b.due, c)
	return true
}

// counterLocked returns the counter of projectID, creating it if needed.
// Callers hold umu.
func (b *Batcher) counterLocked(projectID string) *counter {
	if v, ok := b.counters.Load(projectID); ok {
		return v.(*counter)
	}
	c := &counter{id: projectID}
	b.counters.Store(projectID, c)
	return c
}

// kickUsage wakes the usage goroutine for the threshold reports, without
// waiting.
func (b *Batcher) kickUsage() {
	select {
	case b.usageKick <- struct{}{}:
	default:
	}
}

// Blocked reports whether projectID is in the blocked set, the projects over
// their monthly quota whose publishes get 42920 (wire-reference.md §6.12). It is
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
// (wire-reference.md §5.2). It is called from any goroutine, takes one short
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
// failed (wire-reference.md §5.2, §5.3); it fits webhook.Config.OnFailure. It
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

// Stats returns the current counters. It is safe to call at any time and
// takes no lock; PendingProjects is counted by a walk over the projects'
// counters, so it costs in proportion to the projects that published
// recently.
func (b *Batcher) Stats() Stats {
	pending := 0
	b.counters.Range(func(_, v any) bool {
		c := v.(*counter)
		if w := c.word.Load(); w&wordRetired == 0 && (w != 0 || c.carryCount.Load() != 0) {
			pending++
		}
		return true
	})
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
		b.usageShut.Store(true)
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
	// Ends with the loops, which end at stop; Close waits for it below
	// either way.
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
			b.flushUsage(false, true)
			return
		case <-tick.C:
			b.flushUsage(true, false)
		case <-b.usageKick:
			b.flushDue()
		case done := <-b.flushReq:
			b.flushUsage(true, false)
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
	for _, c := range b.due {
		if !c.due.Load() {
			continue // taken by an interval report meanwhile
		}
		count, bytes := c.take(0)
		batch = append(batch, UsageEntry{ProjectID: c.id, Count: count, TotalBytes: bytes})
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
// It removes the counters it finds idle, and with final (the report of
// Close, made once RecordPublish refuses new counts) every counter, retired
// as it is taken so that a publish recorded concurrently is either in this
// report or not counted at all.
func (b *Batcher) flushUsage(refresh, final bool) {
	b.umu.Lock()
	batch := b.usageBuf[:0]
	b.counters.Range(func(_, v any) bool {
		c := v.(*counter)
		if final {
			count, bytes := c.take(wordRetired)
			b.counters.Delete(c.id)
			if count != 0 {
				batch = append(batch, UsageEntry{ProjectID: c.id, Count: count, TotalBytes: bytes})
			}
			return true
		}
		count, bytes := c.take(0)
		switch {
		case count != 0:
			batch = append(batch, UsageEntry{ProjectID: c.id, Count: count, TotalBytes: bytes})
		case c.word.CompareAndSwap(0, wordRetired):
			// Idle since the previous take, and still: a publish that
			// loaded c before the Delete sees it retired and counts
			// itself again under umu, in a new counter.
			b.counters.Delete(c.id)
		}
		return true
	})
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
	b.usagePause.Store(false)
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
	b.usagePause.Store(true)
	for _, e := range entries {
		c := b.counterLocked(e.ProjectID)
		c.carryCount.Add(e.Count)
		c.carryBytes += e.TotalBytes
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
