package hub

import (
	"context"
	"hash/fnv"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// Config tunes a Hub. Zero fields take the documented defaults.
type Config struct {
	// Workers is the size of the fixed worker pool; 0 means 2.
	Workers int
	// OutboundMaxBytes bounds each connection's queued outbound bytes; a
	// connection over it is closed as a slow consumer (1008). 0 means 4 MiB.
	OutboundMaxBytes int
	// WriteTimeout closes as a slow consumer (1008, SlowWriteTimeout) a
	// connection with bytes queued whose socket has taken none of them for
	// this long, whether or not the client still sends frames
	// (WRITE_TIMEOUT_SECONDS, after nats-server's write_deadline). 0 means
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxPendingPublications is the number of queued publications at which
	// a worker counts as behind and Hub.Busy refuses new ones; 0 means
	// 65536.
	MaxPendingPublications int
	// MaxSubscriptions caps the subscriptions of one connection; 0 means 1000.
	MaxSubscriptions int
	// OnTooManySubscriptions is called on a connection's worker when it
	// refuses a subscription to pattern because the connection holds
	// MaxSubscriptions already (SubSpec.TooMany is the answer); first is
	// true for the connection's first such refusal. It is called on the
	// refusal alone, never for a subscription that is taken, and must not
	// block. nil means nobody is told.
	OnTooManySubscriptions func(c *Conn, pattern string, first bool)
	// TooManyFrame, when set, builds the answer to a subscription to
	// pattern refused for MaxSubscriptions whose SubSpec has a Reply but no
	// TooMany, on c's worker, when the refusal happens: the frame is made
	// only for the subscribes that need it, not ahead for every one. It
	// must not block. nil, or a SubSpec with TooMany set, keeps
	// SubSpec.TooMany as the answer.
	TooManyFrame func(c *Conn, pattern string) []byte
	// HandshakeTimeout closes a connection that has not completed its HTTP
	// upgrade (0 means 10 s, HTTP 408); AuthTimeout one that has not
	// authenticated (0 means 30 s, close 4008, OQ-44); IdleTimeout one that
	// sent no complete frame (0 means 60 s, close 4000 idle_timeout,
	// wire-reference.md §1.2, D-5); FrameTimeout one whose frame or fragmented
	// message in progress has not completed within it, or by the idle
	// deadline (0 means 30 s, close 1008 frame_timeout).
	HandshakeTimeout, AuthTimeout, IdleTimeout, FrameTimeout time.Duration
	// CloseTimeout is how long a closed connection's socket is kept after
	// its close frame, reading and discarding input, for the peer to close
	// its side (RFC 6455 §7.1.1); the sweep then releases it. A slow
	// consumer's close frame must be written within it too. 0 means 1 s.
	CloseTimeout time.Duration
	// RevalidateInterval is the age after which a session's grant is checked
	// again (OQ-9); 0 means 600 s.
	RevalidateInterval time.Duration
	// Revalidate is called, on a goroutine of the hub, with connections whose
	// grant is due. It must report each outcome back through Hub.Run (or
	// Hub.Close) and then call Hub.RevalidationDone for each connection.
	Revalidate func(conns []*Conn)
	// OnClose is called on the connection's worker after the connection is
	// unregistered and its subscriptions removed.
	OnClose func(c *Conn)
	// OnClosing is called once a close of c is decided (by its reader, a
	// worker, the sweep or Shutdown), on the deciding goroutine and outside
	// c's locks, before the close frame is necessarily out: the session
	// cancels the backend call the connection has in flight. It must not
	// block. nil means nobody listens.
	OnClosing func(c *Conn)
	// OnInterest is told, on a worker's goroutine, when that worker gains
	// its first (delta +1) or loses its last (delta -1) broadcast
	// subscription to a routing key (wildcard: a pattern); OnGroupInterest
	// likewise for a load-balanced group on a key. A cluster's broker
	// reference-counts them to receive only what this node wants. They
	// must not block. nil means nobody listens.
	OnInterest      func(key string, wildcard bool, delta int)
	OnGroupInterest func(group, key string, wildcard bool, delta int)
	// OnDurableInterest is told, on the group's worker, when a durable
	// group (SubSpec.Durable) gains its first member here (delta +1) or
	// loses its last (-1): the store's feed of the group (pkg/durable)
	// starts or stops. With +1, ready must be called once, from any
	// goroutine, when the group's messages will reach it (Hub.DeliverDurable);
	// the members that joined meanwhile get their `subscribed` then. With
	// -1, ready is nil. It must not block. nil: a durable group gets no
	// message and its members are confirmed at once.
	OnDurableInterest func(group, key string, delta int, ready func())
	// InterestReady, when not nil, is called on a worker right after
	// OnInterest (group "") or OnGroupInterest gave it its first
	// reference to a key; the subscription's reply and retained messages
	// are written only once done has been called (from any goroutine, at
	// most once): a cluster's broker confirms a subscription once other
	// nodes' publications will reach it (broker.InterestWaiter).
	InterestReady func(group, key string, wildcard bool, done func())
	// RetainTTL is the lifetime of a retained message; 0 means 1 h
	// (RETAIN_TTL_SECONDS, OQ-15). MaxRetained bounds the retained topics;
	// 0 means 100000, beyond which an expired entry (else an arbitrary one)
	// is dropped.
	RetainTTL   time.Duration
	MaxRetained int
	// Tick is the sweep period; 0 means 1 s.
	Tick time.Duration
	// TapAckWait is how long a tapped connection's client may read on
	// after a delivery without ever acking before it counts as a client
	// that does not ack (see StartTap); 0 means DefaultTapAckWait.
	TapAckWait time.Duration
	// Logger receives lifecycle logs; nil means no logging.
	Logger *zap.Logger
}

func (c *Config) setDefaults() {
	if c.Workers <= 0 {
		c.Workers = 2
	}
	if c.OutboundMaxBytes <= 0 {
		c.OutboundMaxBytes = DefaultOutboundMaxBytes
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MaxPendingPublications <= 0 {
		c.MaxPendingPublications = 65536
	}
	if c.MaxSubscriptions <= 0 {
		c.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.AuthTimeout <= 0 {
		c.AuthTimeout = DefaultAuthTimeout
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.FrameTimeout <= 0 {
		c.FrameTimeout = DefaultFrameTimeout
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.RevalidateInterval <= 0 {
		c.RevalidateInterval = DefaultRevalidateInterval
	}
	if c.RetainTTL <= 0 {
		c.RetainTTL = DefaultRetainTTL
	}
	if c.MaxRetained <= 0 {
		c.MaxRetained = 100000
	}
	if c.Tick <= 0 {
		c.Tick = time.Second
	}
	if c.TapAckWait <= 0 {
		c.TapAckWait = DefaultTapAckWait
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Stats are cumulative counters and current gauges of a Hub.
type Stats struct {
	Connections   int64  // registered connections
	Subscriptions int64  // broadcast and load-balanced subscriptions
	Groups        int64  // load-balanced groups
	Publications  uint64 // publications fanned out
	Deliveries    uint64 // message frames queued to connections
	SlowConsumers uint64 // connections closed as slow consumers, whatever the cause
	// Slow counts the slow consumers by cause (indexed by SlowCause).
	Slow       [NumSlowCauses]uint64
	IdleClosed uint64 // connections closed by the idle, frame, auth or handshake deadline
	// Closed counts the connections the broker closed, by reason (indexed
	// by disconnect.Reason; peers that went away on their own are not
	// counted).
	Closed [disconnect.NumReasons]uint64
}

type counters struct {
	conns, subs, groups atomic.Int64
	pubs                atomic.Uint64
	closed              [disconnect.NumReasons]atomic.Uint64
	slow                [NumSlowCauses]atomic.Uint64
}

// DefaultWriteTimeout is Config.WriteTimeout's default.
const DefaultWriteTimeout = 30 * time.Second

// The defaults of Config's zero fields that a setting of pkg/config also
// documents (its default is derived from these).
const (
	// DefaultOutboundMaxBytes is Config.OutboundMaxBytes's default, in
	// bytes (OUTBOUND_MAX_BYTES).
	DefaultOutboundMaxBytes = 4 << 20
	// DefaultMaxSubscriptions is Config.MaxSubscriptions's default, per
	// connection (MAX_SUBSCRIPTIONS).
	DefaultMaxSubscriptions = 1000
	// DefaultHandshakeTimeout is Config.HandshakeTimeout's default
	// (HANDSHAKE_TIMEOUT_SECONDS).
	DefaultHandshakeTimeout = 10 * time.Second
	// DefaultAuthTimeout is Config.AuthTimeout's default
	// (AUTH_TIMEOUT_SECONDS).
	DefaultAuthTimeout = 30 * time.Second
	// DefaultIdleTimeout is Config.IdleTimeout's default
	// (IDLE_TIMEOUT_SECONDS).
	DefaultIdleTimeout = 60 * time.Second
	// DefaultFrameTimeout is Config.FrameTimeout's default
	// (FRAME_TIMEOUT_SECONDS).
	DefaultFrameTimeout = 30 * time.Second
	// DefaultCloseTimeout is Config.CloseTimeout's default; no setting
	// changes it.
	DefaultCloseTimeout = time.Second
	// DefaultRevalidateInterval is Config.RevalidateInterval's default
	// (REVALIDATE_INTERVAL_SECONDS).
	DefaultRevalidateInterval = 600 * time.Second
	// DefaultRetainTTL is Config.RetainTTL's default (RETAIN_TTL_SECONDS).
	DefaultRetainTTL = time.Hour
)

// SlowCause is why a connection was found to be a slow consumer
// (disconnect.SlowConsumer, close 1008).
type SlowCause uint8

// The causes of a slow consumer.
const (
	// SlowOutbound: its queue passed Config.OutboundMaxBytes.
	SlowOutbound SlowCause = iota
	// SlowWriteTimeout: its socket took no byte for Config.WriteTimeout.
	SlowWriteTimeout
	// SlowInflight: its transport's window of unacknowledged deliveries
	// (an MQTT QoS 1 in-flight window, Acker) was full.
	SlowInflight
	// NumSlowCauses is the number of causes.
	NumSlowCauses
)

var slowCauseNames = [NumSlowCauses]string{"outbound_bytes", "write_timeout", "inflight_window"}

// String is the cause's metric label: outbound_bytes, write_timeout or
// inflight_window.
func (s SlowCause) String() string {
	if s >= NumSlowCauses {
		return "unknown"
	}
	return slowCauseNames[s]
}

// Hub is the worker pool. Create it with New, then Start it.
type Hub struct {
	cfg     Config
	workers []*worker
	nextID  atomic.Uint64
	// accepted counts Register's connections alone (Accepted): an adopted
	// one (Adopt) takes an ID but was not accepted.
	accepted atomic.Uint64
	stats    counters
	in       *interest // nil with more than maxInterestWorkers workers: every publication goes to every worker
	flow     inflow
	forms    forms // what Publish encodes before fanning out
	wg       sync.WaitGroup
	bg       sync.WaitGroup // revalidation goroutines
	stop     chan struct{}
	// closeFrom is where CloseSome starts, moved on by each call.
	closeFrom atomic.Uint32
}

// New returns a Hub with cfg's defaults applied. It starts nothing.
func New(cfg Config) *Hub {
	cfg.setDefaults()
	h := &Hub{cfg: cfg, stop: make(chan struct{})}
	if cfg.Workers <= maxInterestWorkers {
		h.in = &interest{}
	}
	for i := 0; i < cfg.Workers; i++ {
		h.workers = append(h.workers, newWorker(h, i))
	}
	return h
}

// Start runs the workers.
func (h *Hub) Start() {
	for _, w := range h.workers {
		h.wg.Add(1)
		go w.run() // owned by wg: Shutdown stops and waits for the workers
	}
}

// Register creates the record of a newly accepted connection, written
// through t, and hands it to a worker (round-robin). It never blocks.
func (h *Hub) Register(t Transport) *Conn {
	h.forms.register(t.Encoding())
	id := h.nextID.Add(1)
	h.accepted.Add(1)
	now := time.Now().UnixNano()
	c := &Conn{ID: id, t: t, enc: t.Encoding().ID(), qos1: qos1Capable(t), w: h.workers[id%uint64(len(h.workers))],
		created: now, idx: -1}
	c.lastRead.Store(now)
	c.phase.Store(uint32(PhaseHandshake))
	c.w.post(op{kind: opRegister, c: c})
	return c
}

// Rebind makes t the transport of c, a connection still in
// PhaseHandshake, neither closing nor closed, and reports whether it did:
// the one change of a connection's transport (and so of its encoding and
// QoS 1 capability), for a connection accepted by one transport and handed
// over to another after its handshake (MQTT over WebSocket: accepted by
// pkg/server, served by pkg/mqtt/listener on the same socket). Call it
// from c's reader, before the phase moves on; t writes to the same stream,
// and what is queued stays queued. A connection in its handshake has no
// subscription, no group, no reply owed and no delivery, so nothing was
// built in the old encoding; the write lock (and the input flow control's,
// which resumes paused sockets through the transport) orders the change
// with every other goroutine that reads the transport: the worker's
// writes, its sweep (the handshake-timeout answer, read under the lock;
// releases and lingering, only once closing), the transport's close
// (Closed: markClosed and what follows it).
func (h *Hub) Rebind(c *Conn, t Transport) bool {
	h.forms.register(t.Encoding())
	h.flow.mu.Lock()
	c.wmu.Lock()
	ok := !c.closed && !c.closing && c.Phase() == PhaseHandshake && c.rq == nil
	if ok {
		c.t, c.enc, c.qos1 = t, t.Encoding().ID(), qos1Capable(t)
	}
	c.wmu.Unlock()
	h.flow.mu.Unlock()
	return ok
}

// Closed must be called from the transport's close path (pkg/reactor: the
// event loop's OnClose), before the socket is released: it stops writes at
// once and schedules the cleanup of the connection's subscriptions on its
// worker.
func (h *Hub) Closed(c *Conn) {
	h.forgetInput(c)
	c.markClosed()
	c.w.post(op{kind: opUnregister, c: c})
}

// ClosedLater is Closed for a transport that learns its socket is gone
// inside Transport.CloseWrite, which runs under c's write lock (Closed
// takes it): c's worker stops its writes and cleans up, behind the ops
// already queued to it. Nothing waits for it and no goroutine is started.
func (h *Hub) ClosedLater(c *Conn) { c.w.post(op{kind: opClosed, c: c}) }

// Close closes c for d on c's worker: the close frame follows what is
// already queued (see disconnect for the codes).
func (h *Hub) Close(c *Conn, d disconnect.Disconnect) {
	c.w.post(op{kind: opClose, c: c, close: d})
}

// CloseNow closes c for d from the calling goroutine, behind what is
// already queued; the reader uses it so that nothing it reads later is
// answered.
func (h *Hub) CloseNow(c *Conn, d disconnect.Disconnect) { c.CloseNow(d) }

// Subscribe adds or replaces c's subscription to spec.Pattern on c's worker
// and then writes spec.Reply (wire-reference.md §3.3 step 5: re-subscribing
// replaces the old subscription, which is also how it switches mode). A
// non-nil Reply counts as an expected reply (Conn.ExpectReply). Subscribe
// copies *spec (into a pooled SubSpec its worker gives back once the
// subscription is handled) and keeps no reference to it: the caller may
// reuse spec, and a spec on the caller's stack stays there. What its
// fields point to is shared, not copied: the subscription keeps
// spec.Filters' array (and the strings), so the caller must not change
// that array afterwards.
func (h *Hub) Subscribe(c *Conn, spec *SubSpec) {
	s := getSpec()
	*s = *spec
	if s.Reply != nil {
		s.ticket = c.ExpectReply()
	}
	if h.in != nil {
		// The worker that will hold the interest gets publications from
		// now on, even those handed over before it handles this op.
		s.marked = true
		h.in.mark(h.interestWorker(c, s), s.Key, s.Wildcard)
	}
	c.w.post(op{kind: opSubscribe, c: c, spec: s})
}

// specPool holds the SubSpecs of Hub.Subscribe's and Hub.SetFilters's ops.
// One is owned by the op from getSpec until its worker has handled it and
// calls putSpec; nothing keeps a reference past that (worker.subscribe
// copies what it needs later), so the race detector sees any use after
// the hand-back as a race with the next owner's copy.
var specPool = sync.Pool{New: func() any { return new(SubSpec) }}

// getSpec takes a zeroed SubSpec from specPool.
func getSpec() *SubSpec { return specPool.Get().(*SubSpec) }

// putSpec zeroes s (dropping its strings and frames) and gives it back to
// specPool; s must not be used afterwards.
func putSpec(s *SubSpec) {
	*s = SubSpec{}
	specPool.Put(s)
}

// Unsubscribe removes c's subscription to pattern, if any, then writes reply
// (an expected reply).
func (h *Hub) Unsubscribe(c *Conn, pattern string, reply []byte) {
	t := c.ExpectReply()
	c.w.post(op{kind: opUnsubscribe, c: c, pattern: pattern, reply: reply, ticket: t})
}

// SetFilters replaces the filters of c's subscription to pattern in place,
// keeping its QoS and load-balancing settings (wire-reference.md §6.9, OQ-61): no
// retained message is sent again. Exactly one of ok (once the new filters
// are in force) and notSub (c has no such subscription) is written, as an
// expected reply.
func (h *Hub) SetFilters(c *Conn, pattern string, filters []string, ok, notSub []byte) {
	t := c.ExpectReply()
	s := getSpec()
	s.TooMany = notSub
	c.w.post(op{kind: opSetFilters, c: c, pattern: pattern, filters: filters, reply: ok, ticket: t, spec: s})
}

// Run calls fn(c) on c's worker, where it may use the worker-only methods of
// Conn (Subscriptions, SetFilters, DropSubscription). fn must not block.
func (h *Hub) Run(c *Conn, fn func(*Conn)) {
	c.w.post(op{kind: opRun, c: c, fn: fn})
}

// Busy reports whether some worker has Config.MaxPendingPublications
// publications queued. The reactor refuses publishes while it is (42910), so
// a publisher faster than the workers is told to slow down and no queue, in
// the hub or in the event loop's input buffers, grows without bound. Checked
// before Publish, the bound is soft by at most one publication per
// concurrent publisher.
func (h *Hub) Busy() bool {
	for _, w := range h.workers {
		if w.in.full() {
			return true
		}
	}
	return false
}

// Publish fans p out without waiting, on the workers with a subscription
// or a load-balanced group that p's key may match (see interest), and on
// every worker when p sets or clears a retained message (every worker
// keeps them); a worker with nothing for p is not woken. The caller must
// not modify p afterwards; check Busy first.
func (h *Hub) Publish(p *Publication) {
	h.stats.pubs.Add(1)
	if h.in == nil || p.Retain || p.ClearRetained || p.StoreOnly {
		if !p.StoreOnly {
			h.forms.build(p)
		}
		for _, w := range h.workers {
			w.in.push(op{kind: opPublish, pub: p})
		}
		return
	}
	m := h.in.workers(p.Key)
	if m == 0 {
		return // nobody here can take it: nothing is encoded
	}
	h.forms.build(p)
	for ; m != 0; m &= m - 1 {
		h.workers[bits.TrailingZeros64(m)].in.push(op{kind: opPublish, pub: p})
	}
}

// interestWorker is the worker that holds the interest of c's
// subscription spec: its group's for a load-balanced one, else c's.
func (h *Hub) interestWorker(c *Conn, spec *SubSpec) *worker {
	if spec.LoadBalance {
		return h.groupWorker(spec.Group)
	}
	return c.w
}

// PublishGroup delivers p to one member of the load-balanced group name on
// key (a group's routing key or pattern, as its members subscribed), on the
// group's worker: the part of a message a cluster's bus handed to this node
// for that group (wire-reference.md §6.8). Nothing happens when the group has no
// member here any more.
func (h *Hub) PublishGroup(p *Publication, name, key string) { h.Redeliver(p, name, key, nil) }

// Redeliver is PublishGroup for a message handed back to its group: one a
// member was sent and did not ack before its resumable session ended
// (pkg/resume, wire-reference.md §6.6). done, when not nil, is called on the
// group's worker with whether a member here got p.
func (h *Hub) Redeliver(p *Publication, name, key string, done func(delivered bool)) {
	h.forms.build(p)
	w := h.groupWorker(name)
	w.post(op{kind: opRun, fn: func(*Conn) {
		ok := false
		if g := w.grp.byID[groupID(name, key, false)]; g != nil {
			ok = w.deliverGroup(p, g) != nil
		}
		if done != nil {
			done(ok)
		}
	}})
}

// DeliverDurable delivers p, a message of the durable group name on key
// (SubSpec.Durable) that the store handed to this node, to the group's
// next member here that accepts it (its filters), on the group's worker,
// and then calls done there with that member's connection, or with nil
// when none took it; members says whether the group has members here (a
// nil c with members: none accepts p's filter). p is marked Durable: no
// resumable session's tap keeps it, the store redelivers it instead. done
// must not block.
func (h *Hub) DeliverDurable(p *Publication, name, key string, done func(c *Conn, members bool)) {
	p.Durable = true
	h.forms.build(p)
	w := h.groupWorker(name)
	w.post(op{kind: opRun, fn: func(*Conn) {
		g := w.grp.byID[groupID(name, key, true)]
		if g == nil {
			done(nil, false)
			return
		}
		var c *Conn
		if m := w.deliverGroup(p, g); m != nil {
			c = m.c
		}
		done(c, len(g.members) > 0)
	}})
}

// RevalidateAll marks every session as due for revalidation at the next
// sweep (called when the token file changes, D-1).
func (h *Hub) RevalidateAll() {
	for _, w := range h.workers {
		w.post(op{kind: opRun, fn: func(*Conn) { w.forceRevalidate = true }})
	}
}

// RevalidationDone clears c's in-flight revalidation mark.
func (h *Hub) RevalidationDone(c *Conn) {
	h.Run(c, func(c *Conn) { c.revalidate = false })
}

// Stats returns the current counters.
func (h *Hub) Stats() Stats {
	st := Stats{
		Connections:   h.stats.conns.Load(),
		Subscriptions: h.stats.subs.Load(),
		Groups:        h.stats.groups.Load(),
		Publications:  h.stats.pubs.Load(),
		Deliveries:    h.deliveries(),
	}
	for i := range st.Closed {
		st.Closed[i] = h.stats.closed[i].Load()
	}
	st.SlowConsumers = st.Closed[disconnect.SlowConsumer]
	for i := range st.Slow {
		st.Slow[i] = h.stats.slow[i].Load()
	}
	st.IdleClosed = st.Closed[disconnect.IdleTimeout] + st.Closed[disconnect.FrameTimeout] +
		st.Closed[disconnect.AuthTimeout] + st.Closed[disconnect.HandshakeTimeout]
	return st
}

// Config returns the configuration in force, defaults applied.
func (h *Hub) Config() Config { return h.cfg }

// Shutdown closes every connection with 1012 (disconnect.Shutdown) after
// what is queued to it, waits up to Config.CloseTimeout for the peers to
// close their side (so no close frame is lost to a reset), releases the
// sockets left, and stops the workers. It returns ctx.Err() if the workers
// did not finish in time.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.each(ctx, func(w *worker) { w.closeAll(disconnect.New(disconnect.Shutdown)) })
	linger := time.NewTimer(h.cfg.CloseTimeout)
	defer linger.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
wait:
	for h.stats.conns.Load() > 0 {
		select {
		case <-poll.C:
		case <-linger.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	h.each(ctx, (*worker).releaseAll)
	close(h.stop)
	for _, w := range h.workers {
		w.in.close()
	}
	finished := make(chan struct{})
	// Ends with the workers (stopped above) and the revalidations (whose
	// backend calls the session cancels before Shutdown); past ctx nobody
	// waits for it.
	go func() { h.wg.Wait(); h.bg.Wait(); close(finished) }()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// CloseSome closes up to k connections that are open (not closing yet)
// and that skip (nil: none; called on the connection's worker, it must be
// quick) does not exclude, for d, as Shutdown closes them: after what is
// queued, then the peer has Config.CloseTimeout to close its side. It asks
// the workers in turn, starting after the one the previous call started
// at, so that repeated calls spread over every worker, and returns how
// many it closed: fewer than k once none is left, or when ctx ends first.
// The caller waits on each worker's answer; the workers never wait.
func (h *Hub) CloseSome(ctx context.Context, k int, d disconnect.Disconnect, skip func(*Conn) bool) int {
	closed := 0
	start := int(h.closeFrom.Add(1))
	got := make(chan int, 1)
	for i := 0; i < len(h.workers) && closed < k; i++ {
		w := h.workers[(start+i)%len(h.workers)]
		want := k - closed
		w.post(op{kind: opRun, fn: func(*Conn) { got <- w.closeSome(want, d, skip) }})
		select {
		case n := <-got:
			closed += n
		case <-ctx.Done():
			return closed
		}
	}
	return closed
}

// each runs fn on every worker and waits for all of them, or for ctx.
// A worker that never runs fn (stopped) leaves nothing behind: each
// starts no goroutine, and a worker that runs fn late signals into a
// buffered channel nobody has to read.
func (h *Hub) each(ctx context.Context, fn func(*worker)) {
	done := make(chan struct{}, len(h.workers))
	for _, w := range h.workers {
		w.post(op{kind: opRun, fn: func(*Conn) { fn(w); done <- struct{}{} }})
	}
	for range h.workers {
		select {
		case <-done:
		case <-ctx.Done():
			return
		}
	}
}

func (h *Hub) groupWorker(name string) *worker {
	f := fnv.New32a()
	_, _ = f.Write([]byte(name))
	return h.workers[f.Sum32()%uint32(len(h.workers))]
}

func (h *Hub) deliveries() uint64 {
	var n uint64
	for _, w := range h.workers {
		n += w.deliveries.Load()
	}
	return n
}

// Writer queues frames from code running on a worker; the worker flushes
// them at the end of its batch.
type Writer interface {
	// Write queues frame to c, behind the replies c is owed.
	Write(c *Conn, frame []byte)
	// Answer gives frame (nil: nothing) as the reply of ticket t of c
	// (Conn.ExpectReply).
	Answer(c *Conn, t Ticket, frame []byte)
}

// Write queues frame to c (see Writer).
func (w *worker) Write(c *Conn, frame []byte) { w.write(c, frame) }

// Answer answers ticket t of c (see Writer).
func (w *worker) Answer(c *Conn, t Ticket, frame []byte) { w.answer(c, t, frame) }

// RunShared runs fn on the worker that owns the node's shared state
// (presence, §7), in the order RunShared was called. fn must not block.
func (h *Hub) RunShared(fn func(Writer)) {
	w := h.workers[0]
	w.post(op{kind: opRun, fn: func(*Conn) { fn(w) }})
}
