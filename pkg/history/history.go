package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/natssubject"
)

// Defaults of Config.
const (
	DefaultPrefix          = "kraken"
	DefaultReplicas        = 1
	DefaultMaxAge          = time.Hour
	DefaultMaxBytes        = 1 << 30 // 1 GiB
	DefaultMaxMsgsPerTopic = 10000
	DefaultMaxPending      = 65536
	DefaultMaxPendingBytes = 64 << 20
)

// DuplicateWindow is how long the stream remembers the message ids of
// Append to store a message appended again with the same id once (the
// stream's duplicate window, capped by MaxAge, which JetStream requires).
const DuplicateWindow = 2 * time.Minute

// AckTimeout bounds the wait for the stream's acknowledgement of one
// Append; past it the append is counted in Stats.Errors and no longer
// pending (it may still have been stored).
const AckTimeout = 10 * time.Second

// CloseWait bounds how long Close waits for pending appends.
const CloseWait = 5 * time.Second

// sendStall is how long the writer waits at a time, while MaxPending
// entries wait for their acknowledgement, before it checks for Close.
const sendStall = 100 * time.Millisecond

// errorLogEvery is the least interval between two log lines about failed
// appends.
const errorLogEvery = 10 * time.Second

// statsEvery is the least interval between two stream info requests of
// Stats.
const statsEvery = time.Second

// Config configures a History. Zero fields take the defaults above.
type Config struct {
	// Conn is the NATS connection the history uses (required). The
	// History does not close it.
	Conn *nats.Conn
	// Prefix is the first subject token, as natsbroker's Prefix: the
	// stream is Stream(Prefix) on the subjects <Prefix>.h.> (default
	// "kraken").
	Prefix string
	// Replicas is the stream's number of replicas (default 1; at most 5,
	// and no more than the JetStream servers of the cluster).
	Replicas int
	// MaxAge is how long an entry is kept (default 1 h). JetStream
	// removes older entries, oldest first.
	MaxAge time.Duration
	// MaxBytes bounds the stream's stored bytes, all topics together
	// (default 1 GiB); past it the oldest entries are removed.
	MaxBytes int64
	// MaxMsgsPerTopic bounds the entries kept per topic (per subject;
	// default 10,000); past it the topic's oldest entry is removed.
	MaxMsgsPerTopic int64
	// MaxPending bounds the appends queued by Append and not sent yet
	// (default 65,536; Append drops past it), and separately the appends
	// sent and waiting for the stream's acknowledgement (past it the
	// queue waits): at most 2×MaxPending+1 entries are held in memory.
	MaxPending int
	// MaxPendingBytes bounds the bytes of the entries held in memory,
	// queued or waiting for their acknowledgement (default 64 MiB): past
	// it Append drops, so a stream that is down or slow costs at most this
	// much memory, whatever the message sizes.
	MaxPendingBytes int64
	// Logger receives the history's logs (default: none).
	Logger *zap.Logger
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Replicas <= 0 {
		c.Replicas = DefaultReplicas
	}
	if c.MaxAge <= 0 {
		c.MaxAge = DefaultMaxAge
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxMsgsPerTopic <= 0 {
		c.MaxMsgsPerTopic = DefaultMaxMsgsPerTopic
	}
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	if c.MaxPendingBytes <= 0 {
		c.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Stream returns the JetStream stream name of the history of prefix:
// "KRAKEN_HISTORY" for the default prefix "kraken" (and ""); otherwise the
// prefix with every byte outside [A-Za-z0-9_-] replaced by '_', then
// "_HISTORY" (natssubject.StoreName).
func Stream(prefix string) string { return natssubject.StoreName(prefix, "HISTORY") }

// History is the message history of a cluster: one JetStream stream (file
// storage) in which every topic's entries are kept, in one sequence, within
// the bounds of its Config. It is safe for concurrent use.
type History struct {
	cfg    Config
	log    *zap.Logger
	js     jetstream.JetStream
	st     jetstream.Stream
	stream string
	base   string // <prefix>.h

	closeWait           time.Duration // CloseWait; shorter in tests
	bgCtx               context.Context
	bgCancel            context.CancelFunc // ends background requests at Close
	mu                  sync.RWMutex       // Append's read lock orders its send on queue before Close
	closed              bool
	queue               chan *nats.Msg // Append → writer
	closing, abort      chan struct{}  // Close: drain the queue, then stop; stop now
	writerDone          chan struct{}
	appended, dropped   atomic.Uint64
	sent, acked, failed atomic.Uint64
	unsent              atomic.Int64  // entries queued or held by the writer, not published yet
	pushed              atomic.Uint64 // entries put on queue (under mu's read lock), for Sync
	track               *tracker      // which of them are resolved, for Sync
	held                atomic.Int64  // bytes of the entries queued or waiting for their acknowledgement
	bgDone              atomic.Bool   // Close: no more background refreshes
	lastErrLog          atomic.Int64  // unix nanoseconds of the last log line about failed appends
	failedAtLastErrLog  atomic.Uint64
	statsMu             sync.Mutex
	stored, storedBytes uint64
	storedAt            time.Time
	refreshing          bool
	bg                  sync.WaitGroup
}

// Open makes the history stream of cfg, or updates its bounds to cfg's
// when it exists (CreateOrUpdateStream), and returns the History that
// appends to and reads it. It fails when cfg.Conn is nil, JetStream cannot
// be reached within ctx or is not enabled (jetstream.ErrJetStreamNotEnabled),
// or the servers refuse the stream configuration (say, more replicas than
// servers).
func Open(ctx context.Context, cfg Config) (*History, error) {
	if cfg.Conn == nil {
		return nil, errors.New("history: Config.Conn is nil")
	}
	cfg.setDefaults()
	h := &History{cfg: cfg, log: cfg.Logger, stream: Stream(cfg.Prefix), base: cfg.Prefix + ".h", closeWait: CloseWait,
		track: newTracker(), queue: make(chan *nats.Msg, cfg.MaxPending), closing: make(chan struct{}), abort: make(chan struct{}),
		writerDone: make(chan struct{})}
	js, err := jetstream.New(cfg.Conn,
		jetstream.WithPublishAsyncMaxPending(cfg.MaxPending),
		jetstream.WithPublishAsyncTimeout(AckTimeout),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			h.held.Add(-int64(len(m.Data)))
			h.acked.Add(1)
			h.track.resolve(m)
		}),
		jetstream.WithPublishAsyncErrHandler(h.onAppendError))
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	h.js = js
	h.bgCtx, h.bgCancel = context.WithCancel(context.Background())
	dup := min(DuplicateWindow, cfg.MaxAge)
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              h.stream,
		Description:       "kraken message history",
		Subjects:          []string{h.base + ".>"},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxAge:            cfg.MaxAge,
		MaxBytes:          cfg.MaxBytes,
		MaxMsgsPerSubject: cfg.MaxMsgsPerTopic,
		MaxMsgs:           -1,
		Duplicates:        dup,
		Replicas:          cfg.Replicas,
		AllowDirect:       true,
	})
	if err != nil {
		h.bgCancel()
		return nil, fmt.Errorf("history: stream %s: %w", h.stream, err)
	}
	h.st = st
	if info := st.CachedInfo(); info != nil { // what a restarted node's stream holds, before any append
		h.stored, h.storedBytes, h.storedAt = info.State.Msgs, info.State.Bytes, time.Now()
	}
	go h.write() // ends at Close, which waits for it (writerDone)
	return h, nil
}

// Subject returns the subject under which the entries of the routing key
// topic are stored: <prefix>.h, then one escaped token per level
// (natssubject.Key).
func (h *History) Subject(topic string) string { return natssubject.Key(h.base, topic) }

// Append stores data as the next entry of topic (a concrete routing key,
// e.g. "demo-app/general/messages") with the message id msgID, without
// waiting: the entry is queued, a goroutine of the History publishes it
// (a JetStream asynchronous publish) and its acknowledgement is handled in
// the background. An entry appended again with an msgID the stream has
// seen within DuplicateWindow is stored once; an empty msgID turns that
// off for the entry.
//
// Append copies data: the caller may reuse it once Append returns.
//
// It returns false, and counts the entry in Stats.Dropped, when the
// entries held in memory would pass MaxPendingBytes, when the queue
// holds MaxPending entries already (the stream or the connection is slower
// than the appends, or down) or the History is closed. A queued entry may
// still not be stored: the connection refuses it (closed, its reconnect
// buffer full) or Close gives up on it (Stats.Dropped); the stream refuses
// it, does not acknowledge it within AckTimeout, or a reconnection loses
// the acknowledgement (Stats.Errors). Both are logged at most once per
// 10 s.
func (h *History) Append(topic, msgID string, data []byte) bool {
	msg := &nats.Msg{Subject: natssubject.Key(h.base, topic), Data: append([]byte(nil), data...)}
	if msgID != "" {
		msg.Header = nats.Header{jetstream.MsgIDHeader: []string{msgID}}
	}
	size := int64(len(data))
	h.mu.RLock()
	ok := !h.closed && h.held.Add(size) <= h.cfg.MaxPendingBytes
	if ok {
		h.unsent.Add(1)
		select {
		case h.queue <- msg:
			h.pushed.Add(1)
		default:
			ok = false
			h.unsent.Add(-1)
		}
	}
	if !ok && !h.closed {
		h.held.Add(-size)
	}
	closed := h.closed
	h.mu.RUnlock()
	if !ok {
		h.dropped.Add(1)
		if !closed {
			h.logFailure("history entries dropped", msg, errBehind)
		}
		return false
	}
	h.appended.Add(1)
	return true
}

// errBehind is why Append drops an entry of an open History.
var errBehind = errors.New("the history is behind: MaxPending entries or MaxPendingBytes queued " +
	"(the stream slower than the publishes, or unreachable); publishes are delivered, not kept")

// write publishes the queued entries until Close; at Close it goes on
// until the queue is empty or Close gives up (abort).
func (h *History) write() {
	defer close(h.writerDone)
	for {
		var msg *nats.Msg
		select {
		case msg = <-h.queue:
		case <-h.abort:
			h.dropQueued()
			return
		case <-h.closing:
			select {
			case msg = <-h.queue:
			default:
				return // closed (no more appends) and empty
			}
		}
		h.send(msg)
		h.unsent.Add(-1) // published (now in PublishAsyncPending) or dropped
	}
}

// send publishes one entry; while MaxPending entries wait for their
// acknowledgement it waits (until Close gives up).
func (h *History) send(msg *nats.Msg) {
	h.track.add(msg)
	for {
		_, err := h.js.PublishMsgAsync(msg, jetstream.WithStallWait(sendStall))
		if err == nil {
			h.sent.Add(1)
			return
		}
		if errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			select {
			case <-h.abort:
			default:
				continue
			}
		}
		h.dropped.Add(1)
		h.held.Add(-int64(len(msg.Data)))
		h.track.resolve(msg)
		h.logFailure("history: appends not sent", msg, err)
		return
	}
}

// dropQueued counts the entries left in the queue as dropped.
func (h *History) dropQueued() {
	for {
		select {
		case msg := <-h.queue:
			h.track.add(msg)
			h.track.resolve(msg)
			h.unsent.Add(-1)
			h.held.Add(-int64(len(msg.Data)))
			h.dropped.Add(1)
		default:
			return
		}
	}
}

// onAppendError counts a sent append that failed and logs, at most once
// per errorLogEvery, how many did since the last line.
func (h *History) onAppendError(_ jetstream.JetStream, msg *nats.Msg, err error) {
	h.held.Add(-int64(len(msg.Data)))
	h.failed.Add(1)
	h.track.resolve(msg)
	h.logFailure("history: appends not stored", msg, err)
}

// logFailure logs, at most once per errorLogEvery, an entry not stored,
// with the count of dropped and failed entries since the last line.
func (h *History) logFailure(what string, msg *nats.Msg, err error) {
	now := time.Now().UnixNano()
	last := h.lastErrLog.Load()
	if now-last < int64(errorLogEvery) || !h.lastErrLog.CompareAndSwap(last, now) {
		return
	}
	n := h.failed.Load() + h.dropped.Load()
	since := n - h.failedAtLastErrLog.Swap(n)
	h.log.Warn(what, zap.String("stream", h.stream), zap.Uint64("dropped_or_failed", since),
		zap.String("subject", msg.Subject), zap.Error(err))
}

// LastSeq returns the stream's last sequence: every entry appended before
// the call and acknowledged has a sequence ≤ it, so it is the position of
// a new subscriber (Read with after = LastSeq returns what comes after).
// It is 0 for a stream that never held an entry.
func (h *History) LastSeq(ctx context.Context) (uint64, error) {
	info, err := h.st.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("history: stream %s: %w", h.stream, err)
	}
	return info.State.LastSeq, nil
}

// Stats are the counters of a History since Open.
type Stats struct {
	Appended uint64 // entries Append queued
	Sent     uint64 // entries published to the stream
	Acked    uint64 // of which the stream acknowledged (duplicates included)
	Dropped  uint64 // entries not published: queue full (MaxPending), History closed, connection refused, given up by Close
	Errors   uint64 // published entries that failed: refused, not acknowledged within AckTimeout, lost in a reconnection
	Pending  int    // entries queued, or published and waiting for the acknowledgement (one may briefly count twice)

	// From the stream info as of StoredAt (zero time: not known yet).
	// Stats asks for it at most once a second, in the background, so
	// these lag by up to about a second plus one request.
	StoredMsgs  uint64
	StoredBytes uint64
	StoredAt    time.Time
}

// Stats returns the counters, without waiting on the network.
func (h *History) Stats() Stats {
	s := Stats{Appended: h.appended.Load(), Sent: h.sent.Load(), Acked: h.acked.Load(), Dropped: h.dropped.Load(),
		Errors: h.failed.Load(), Pending: int(h.unsent.Load()) + h.js.PublishAsyncPending()}
	h.statsMu.Lock()
	s.StoredMsgs, s.StoredBytes, s.StoredAt = h.stored, h.storedBytes, h.storedAt
	if !h.refreshing && time.Since(h.storedAt) >= statsEvery && !h.bgDone.Load() {
		h.refreshing = true
		h.bg.Add(1)
		go h.refreshStats() // Close waits for it (h.bg)
	}
	h.statsMu.Unlock()
	return s
}

func (h *History) refreshStats() {
	defer h.bg.Done()
	ctx, cancel := context.WithTimeout(h.bgCtx, 2*time.Second)
	defer cancel()
	info, err := h.st.Info(ctx)
	h.statsMu.Lock()
	defer h.statsMu.Unlock()
	h.refreshing = false
	if err == nil {
		h.stored, h.storedBytes, h.storedAt = info.State.Msgs, info.State.Bytes, time.Now()
	}
}

// Close stops Append (later appends are dropped), then waits up to
// CloseWait for the queued entries to be published and acknowledged; the
// entries still queued then are counted in Stats.Dropped, those still
// waiting for their acknowledgement in Stats.Errors. It does not close
// Config.Conn. Calling it again does nothing.
func (h *History) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	h.mu.Unlock()
	t := time.NewTimer(h.closeWait)
	defer t.Stop()
	close(h.closing)
	select {
	case <-h.writerDone:
		select {
		case <-h.js.PublishAsyncComplete():
		case <-t.C:
		}
	case <-t.C:
	}
	close(h.abort)
	<-h.writerDone // at most sendStall more
	h.js.CleanupPublisher()
	h.bgDone.Store(true)
	h.bgCancel()
	h.statsMu.Lock() // a Stats call that saw bgDone false has added its refresh to h.bg
	h.statsMu.Unlock()
	h.bg.Wait()
}
