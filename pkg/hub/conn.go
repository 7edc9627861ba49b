package hub

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// Session is what a connection knows about itself once authenticated. It is
// immutable: a revalidation swaps in a new *Session.
type Session struct {
	// Grant is the backend's answer (an *auth.Grant), opaque to the hub.
	Grant any
	// LimitOrg is the organisation whose connection slot this connection
	// holds (wire-reference.md §4.11), released on close; "" when none.
	LimitOrg string
	// ValidatedAt is when the grant was last (re)validated, in unix ns.
	ValidatedAt int64
	// ExpiresAt is when the connection's token expires, in unix seconds
	// (the resolution of a JWT's exp); 0 when the auth backend gave no
	// expiry. The worker's sweep closes an authenticated connection at or
	// past it with 4003 token_expired (OQ-65, amended). Set at auth and by
	// an accepted reauth; a revalidation, which is about the actor and not
	// its token, keeps it. 32 bits keep Session at 48 bytes (TestConnSize);
	// use ExpirySeconds to fill it.
	ExpiresAt uint32
	// Version is the negotiated protocol version, 1 or 2 (wire-reference.md §2.7).
	Version uint8
}

// ExpirySeconds returns t as a Session.ExpiresAt, rounded up to the next
// whole second (never before t): 0 for the zero time (no expiry), 1 for a
// time at or before the epoch (already expired), and math.MaxUint32 (early
// 2106) for a later one than that holds.
func ExpirySeconds(t time.Time) uint32 {
	if t.IsZero() {
		return 0
	}
	sec := t.Unix()
	if t.Nanosecond() > 0 {
		sec++
	}
	return uint32(min(max(sec, 1), math.MaxUint32))
}

// Phase is where a connection is in its lifecycle.
type Phase uint32

// The phases of a connection, in order.
const (
	PhaseHandshake Phase = iota + 1 // TCP accepted, HTTP upgrade not complete
	PhaseOpen                       // WebSocket open, not authenticated
	PhaseAuthed                     // authenticated
)

// Conn is the broker's compact record of one connection. Fields are grouped
// by owner; see the package doc.
type Conn struct {
	// ID is unique per process and appears in log lines as conn_id.
	ID uint64
	t  Transport
	w  *worker

	created  int64        // unix ns
	lastRead atomic.Int64 // unix ns of the last complete frame (or request)
	// closeAt, once a close is decided (> 0), is the unix ns after which
	// the sweep releases the socket; while open it is 0, or minus the unix
	// ns the frame or message in progress began (SetFrameStart): one word
	// for two times never needed together.
	closeAt    atomic.Int64
	phase      atomic.Uint32 // the Phase, the own idle timeout and the hung-up mark (see phaseMask)
	enc        uint8         // t.Encoding().ID(), read on every delivery
	qos1       bool          // t takes acknowledged deliveries (Acker, QoS1Encoding)
	revalidate bool          // a revalidation is in flight; owned by the worker
	capped     bool          // a subscription was refused over MaxSubscriptions (OnTooManySubscriptions); owned by the worker
	sess       atomic.Pointer[Session]
	x          atomic.Pointer[connExtra] // what few connections need (extra); nil until first needed

	// Guarded by wmu. The fields are ordered for packing: Conn is 160
	// bytes, pinned by TestConnSize (docs/ARCHITECTURE.md quotes it).
	wmu      sync.Mutex
	closed   bool // the transport is closed: drop writes
	closing  bool // a close was decided: only the queue and the close frame still go out
	shut     bool // the write side is shut down (after the close frame)
	reason   disconnect.Reason
	retrying bool        // on the owning worker's retry list
	slow     bool        // over the outbound bound; a close is scheduled
	inHeld   bool        // not guarded: owned by the reader (HoldInput, InputHeld, InputDrained)
	sent     uint32      // bytes the transport took, modulo 2^32: a retry compares it to see progress
	nwild    int32       // not guarded: owned by the worker, the wildcard subscriptions among nsubs (in padding)
	one      [1][]byte   // the outbound queue while it holds one frame and q is nil (it may be partly written); nil when empty
	q        *outq       // the outbound queue while it holds more (queue.go); nil otherwise
	rq       *replyQueue // the replies owed and what waits behind them (replies.go); nil when none

	// Owned by the worker.
	idx   int32 // position in worker.conns, -1 when unregistered
	nsubs int32
	subs  *sub // singly linked list of this connection's subscriptions
}

// connExtra is what few connections need beside Conn's fields, allocated
// the first time one of them is set (Conn.extra) and kept until the
// connection goes: an idle timeout of its own too long for the phase word
// (a parked session's expiry of more than 6 days), deliveries held back
// during a replay, a resumable connection's tap. Each field has the owner
// it would have in Conn.
type connExtra struct {
	idle atomic.Int64        // the connection's own idle timeout in ns when too long for the phase word (SetIdleTimeout)
	held *held               // deliveries held back during a replay (hold.go); owned by the worker
	tap  atomic.Pointer[tap] // the unacked deliveries of a resumable connection (tap.go)
}

// extra returns c's connExtra, made now if c has none: safe from any
// goroutine (the first one installed wins).
func (c *Conn) extra() *connExtra {
	if x := c.x.Load(); x != nil {
		return x
	}
	x := &connExtra{}
	if c.x.CompareAndSwap(nil, x) {
		return x
	}
	return c.x.Load()
}

// heldPubs returns the deliveries c's worker holds back, nil almost always.
// Call it on c's worker.
func (c *Conn) heldPubs() *held {
	if x := c.x.Load(); x != nil {
		return x.held
	}
	return nil
}

// tapped returns c's tap, nil when it has none.
func (c *Conn) tapped() *tap {
	if x := c.x.Load(); x != nil {
		return x.tap.Load()
	}
	return nil
}

// Closing reports whether a close of c was decided (by its reader, a
// worker or the sweep) or its transport closed: a transport's reader then
// discards its input, answering nothing more. One atomic load.
func (c *Conn) Closing() bool { return c.closeAt.Load() > 0 }

// Transport returns the stream the connection was registered with (or
// handed over to, Hub.Rebind); the session layer asks it to build the
// frames it writes (its replies, in the connection's encoding). Call it
// from the connection's reader, or once it is past its handshake.
func (c *Conn) Transport() Transport { return c.t }

// EncodingID returns the ID of the connection's encoding
// (Transport().Encoding().ID(), hub.Encoding), which tells the transport
// that serves it from the others: 0 for WebSocket, 1 for MQTT, 2 for MQTT
// over WebSocket. Like Transport, it changes only in the handshake
// (Hub.Rebind).
func (c *Conn) EncodingID() uint8 { return c.enc }

// Phase returns the connection's lifecycle phase.
func (c *Conn) Phase() Phase { return Phase(c.phase.Load() & phaseMask) }

// The word Conn.phase holds three things, so that none costs the
// connection a field of its own: the Phase in the lowest two bits, the
// connection's own idle timeout (SetIdleTimeout) in the 29 above them,
// and the hung-up mark (MarkHungUp) in the top bit. Each is changed with a
// compare-and-swap (or an Or) that keeps the others.
const (
	phaseMask = 1<<2 - 1

	// The idle timeout's field: 0 when the connection has none of its
	// own (Config.IdleTimeout applies), idleNever for a negative one,
	// idleInExtra for one longer than idleMaxMS (kept in connExtra.idle),
	// else the timeout in milliseconds, rounded up.
	idleShift   = 2
	idleBits    = 29
	idleMask    = (1<<idleBits - 1) << idleShift
	idleNever   = 1<<idleBits - 1
	idleInExtra = 1<<idleBits - 2
	idleMaxMS   = 1<<idleBits - 3 // 536,870,909 ms: 6 days 5 hours

	phaseHungUp = 1 << 31
)

// MarkHungUp records that c's peer went away while its reader may still
// run (the session's Hangup); it never blocks, and the mark stays for the
// life of c. SetPhase keeps it.
func (c *Conn) MarkHungUp() { c.phase.Or(phaseHungUp) }

// HungUp reports whether MarkHungUp was called for c.
func (c *Conn) HungUp() bool { return c.phase.Load()&phaseHungUp != 0 }

// SetPhase records a lifecycle step (the reactor calls it after the upgrade
// and after a successful auth).
func (c *Conn) SetPhase(p Phase) {
	for {
		old := c.phase.Load()
		if c.phase.CompareAndSwap(old, old&^phaseMask|uint32(p)&phaseMask) {
			return
		}
	}
}

// Session returns the authenticated session, or nil before auth.
func (c *Conn) Session() *Session { return c.sess.Load() }

// SetSession installs the first session, at auth, before anything else
// can change it. Every later change goes through CompareAndSwapSession.
func (c *Conn) SetSession(s *Session) { c.sess.Store(s) }

// CompareAndSwapSession installs new if old is still the session in force,
// and reports whether it did. It is how an installed session changes: the
// session layer's revalidation (on c's worker), its subscribe cache-miss
// fallback and its reauth (both on c's reader) change it, concurrently.
// The rule: load Session, build new from a copy of it (a Session is never
// modified once installed), swap; when the swap fails another change got
// in first, so load again and rebuild from that one. A change built from a session no
// longer in force is never installed, so none is lost.
func (c *Conn) CompareAndSwapSession(old, new *Session) bool {
	return c.sess.CompareAndSwap(old, new)
}

// Closed reports whether the connection is closed or closing.
func (c *Conn) Closed() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.closed || c.closing
}

// markedClosed reports whether the transport reported c closed
// (Hub.Closed).
func (c *Conn) markedClosed() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.closed
}

// CloseReason returns why the connection was closed by the broker, or 0
// while it is open or when the peer went away without a close decision.
func (c *Conn) CloseReason() disconnect.Reason {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.reason
}

// Touch records a complete inbound frame (or HTTP request) at now, in unix
// ns: the idle timeout counts from the last Touch. Bytes of a frame that
// has not completed do not count (see SetFrameStart).
func (c *Conn) Touch(now int64) { c.lastRead.Store(now) }

// SetIdleTimeout gives c an idle timeout of its own in place of
// Config.IdleTimeout: d > 0 closes it with disconnect.IdleTimeout once no
// Touch came for d, d < 0 never (the frame timeout still applies), 0
// restores the hub's. An MQTT listener sets 1.5 × the client's keep-alive
// from its CONNECT (MQTT 3.1.1 §3.1.2.10); the sweep reads it, so no timer
// is armed per connection. Safe from any goroutine.
//
// d is kept in milliseconds, rounded up, in a field of the phase word, so
// an MQTT keep-alive (at most 1.5 × 65,535 s) costs the connection nothing;
// one longer than about 6 days (a parked session's expiry) is kept in
// full in the connection's side record.
func (c *Conn) SetIdleTimeout(d time.Duration) {
	var code uint32
	switch {
	case d < 0:
		code = idleNever
	case d <= idleMaxMS*time.Millisecond: // rounded up, no overflow
		code = uint32((d + time.Millisecond - 1) / time.Millisecond)
	default:
		c.extra().idle.Store(int64(d)) // before the code that says to read it
		code = idleInExtra
	}
	for {
		old := c.phase.Load()
		if c.phase.CompareAndSwap(old, old&^idleMask|code<<idleShift) {
			return
		}
	}
}

// ownIdle returns the idle timeout that the phase word p (a value of
// c.phase) gives c, in ns: 0 when c has none of its own, negative for
// never.
func (c *Conn) ownIdle(p uint32) int64 {
	switch code := p & idleMask >> idleShift; code {
	case 0:
		return 0
	case idleNever:
		return -1
	case idleInExtra:
		return c.x.Load().idle.Load()
	default:
		return int64(code) * int64(time.Millisecond)
	}
}

// SetFrameStart records, in unix ns, when the frame or fragmented message
// now in progress began; 0 says none is. A message in progress for longer
// than Config.FrameTimeout, or still in progress at the idle deadline, is
// closed with disconnect.FrameTimeout.
//
// Once a close is decided no frame counts any more: SetFrameStart does
// nothing and FrameStart returns 0.
func (c *Conn) SetFrameStart(ns int64) {
	for {
		v := c.closeAt.Load()
		if v > 0 || c.closeAt.CompareAndSwap(v, -ns) {
			return
		}
	}
}

// FrameStart returns what SetFrameStart last recorded.
func (c *Conn) FrameStart() int64 { return frameStartOf(c.closeAt.Load()) }

// frameStartOf is the frame start a value of Conn.closeAt holds: 0 when
// none, or once closing.
func frameStartOf(closeAt int64) int64 { return -min(closeAt, 0) }

// Write queues frame, a reply of the connection's reader, behind the
// replies the connection is owed (ExpectReply), in request order; code on
// a worker uses WriteFrame or Writer.Write. frame must stay unmodified until it is written: callers
// pass frames they never touch again. It returns false when the connection
// is closed or was just found to be a slow consumer (Config.OutboundMaxBytes
// exceeded), in which case a 1008 close is scheduled. Write never blocks on
// the socket; call Flush to push the queue.
func (c *Conn) Write(frame []byte) bool {
	c.wmu.Lock()
	ok := c.appendLocked(frame, true)
	c.wmu.Unlock()
	return ok
}

// WriteFlush is Write followed by Flush.
func (c *Conn) WriteFlush(frame []byte) bool {
	c.wmu.Lock()
	ok := c.appendLocked(frame, true)
	if ok {
		c.flushLocked()
	}
	c.wmu.Unlock()
	return ok
}

// Flush writes as much of the queue as the socket takes now, without
// blocking. What remains is retried by the owning worker.
func (c *Conn) Flush() {
	c.wmu.Lock()
	c.flushLocked()
	c.wmu.Unlock()
}

// appendLocked queues frame: a reply of the reader's when reply is set,
// else a worker's frame (see replyQueue for where each waits while
// replies are owed).
func (c *Conn) appendLocked(frame []byte, reply bool) bool {
	if c.closed || c.closing || c.slow {
		return false
	}
	if c.queuedBytes()+c.heldBytes()+len(frame) > c.w.h.cfg.OutboundMaxBytes {
		c.overflowLocked(SlowOutbound)
		return false
	}
	if !c.holdLocked(reply, frame) {
		c.queueLocked(frame)
	}
	return true
}

// overflowLocked makes c a slow consumer for cause: its queue is cut and a
// close scheduled.
func (c *Conn) overflowLocked(cause SlowCause) {
	c.cutLocked()
	c.w.h.stats.slow[cause].Add(1)
	c.w.post(op{kind: opClose, c: c, close: disconnect.New(disconnect.SlowConsumer)})
}

// cutLocked drops c's queue but its head frame, which may be partly
// written, so that the close frame that follows stays well-framed; the
// replies owed and what waits behind them go too. c is a slow consumer
// from then on: nothing more is queued but the close frame.
func (c *Conn) cutLocked() {
	c.slow, c.rq = true, nil
	c.cutQueueLocked()
}

// iovMax bounds one writev call (Linux IOV_MAX is 1024).
const iovMax = 1024

func (c *Conn) flushLocked() { c.flushFrom(iovMax) }

// flushFrom is flushLocked whose first write takes at most first buffers:
// a retry of a socket that took next to nothing last time probes it with
// one frame before it offers the rest.
func (c *Conn) flushFrom(first int) {
	limit := first
	for c.queuedBytes() > 0 && !c.closed {
		all := c.queued()
		batch := all
		if len(batch) > limit {
			batch = batch[:limit]
		}
		limit = iovMax
		want := c.queuedBytes()
		if len(batch) < len(all) {
			want = 0
			for _, b := range batch {
				want += len(b)
			}
		}
		n, err := c.t.Writev(batch)
		if n > 0 {
			c.consumeLocked(n)
			c.sent += uint32(n)
		}
		if err != nil {
			// The peer is gone; the transport will report the close.
			c.dropQueueLocked()
			return
		}
		if n < want {
			c.scheduleRetryLocked()
			return
		}
	}
	if c.queuedBytes() == 0 {
		c.dropQueueLocked() // the pooled queue goes back
		if c.closing && c.rq == nil && !c.shut && !c.closed {
			// The close frame is out: send FIN after it and keep reading
			// until the peer closes or the sweep's deadline (closeWith).
			c.shut = true
			_ = c.t.CloseWrite()
		}
	}
}

func (c *Conn) scheduleRetryLocked() {
	if c.retrying {
		return
	}
	c.retrying = true
	c.w.addRetry(c)
}

// markClosed stops all further writes. It runs in the transport's close
// callback, before the socket is released, so no write can reach a reused
// file descriptor.
func (c *Conn) markClosed() {
	c.wmu.Lock()
	c.closed = true
	c.dropQueueLocked()
	c.rq = nil
	c.wmu.Unlock()
}

// closeWith closes c for d (safe from any goroutine, more than once: the
// first decision wins). What is queued stays queued, and so do the replies
// c is owed (ExpectReply): the close frame goes after them (RFC 6455
// §5.5.1, none before the upgrade), except after a slow consumer overflow,
// whose queue was already cut to its partly written head. Once the queue
// is written, the write side is shut down (FIN), and the socket is
// released when the peer closes its side or, at the latest,
// Config.CloseTimeout after the decision by the worker's sweep: closing a
// socket with unread input would make the kernel send RST, which discards
// the close frame still on its way (RFC 6455 §7.1.1, §7.1.7).
func (c *Conn) closeWith(d disconnect.Disconnect) {
	c.wmu.Lock()
	if c.closed || c.closing {
		c.wmu.Unlock()
		return
	}
	c.closing, c.slow, c.reason = true, false, d.Reason
	c.closeAt.Store(time.Now().UnixNano() + int64(c.w.h.cfg.CloseTimeout))
	if c.rq != nil {
		c.rq.closeAfter = &d // answerLocked finishes it
	} else {
		c.finishCloseLocked(d)
	}
	c.wmu.Unlock()
	c.w.h.stats.closed[d.Reason].Add(1)
	if f := c.w.h.cfg.OnClosing; f != nil {
		f(c)
	}
}

// finishCloseLocked queues the close frame of d behind everything and
// flushes; the write side is shut down once it is out (flushLocked).
func (c *Conn) finishCloseLocked(d disconnect.Disconnect) {
	if f := c.closeFrame(d); f != nil {
		c.queueLocked(f)
	}
	c.flushLocked()
}

// CloseNow closes c for d from the calling goroutine, behind what is
// queued and the replies it is owed (Hub.CloseNow); a transport's reader
// calls it so that nothing it reads later is answered.
func (c *Conn) CloseNow(d disconnect.Disconnect) { c.closeWith(d) }

// closeFrame is what ends c's session for d in its encoding, nil for
// nothing (no frame for d, or no session yet: RFC 6455 §5.5.1 frames exist
// only after the upgrade).
func (c *Conn) closeFrame(d disconnect.Disconnect) []byte {
	if !d.SendsFrame() || c.Phase() == PhaseHandshake {
		return nil
	}
	return c.t.Encoding().Close(d)
}

// handshakeTimeout is the answer of c's encoding to a handshake that did
// not complete, read under the write lock: the transport of a connection
// in its handshake may still change (Hub.Rebind).
func (c *Conn) handshakeTimeout() []byte {
	c.wmu.Lock()
	t := c.t
	c.wmu.Unlock()
	return t.Encoding().HandshakeTimeout()
}

// release closes the transport now (the close deadline passed, or the hub
// is stopping).
func (c *Conn) release() { _ = c.t.Close() }
