package hub

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// A connection whose socket was full is retried by its worker's timer,
// first retryEvery after it filled, then at doubling intervals up to
// retryEvery<<retryMaxShift (640 ms) while each attempt moves less than
// retryHealthy bytes; an attempt that moves more (a reader that keeps up
// in bursts) starts again from retryEvery, and one that empties the queue
// takes the connection off the list. A stalled subscriber thus costs a few
// system calls a second, and never wakes its worker at once: the kernel
// keeps taking a trickle from a socket whose peer reads nothing (its send
// buffer grows with each zero-window probe), which must not count as a
// reader.
const (
	retryEvery    = 5 * time.Millisecond
	retryMaxShift = 7
	retryHealthy  = 64 << 10
)

// stall is a connection on its worker's retry list: its queue was left
// unwritten by a full socket.
type stall struct {
	c     *Conn
	due   int64  // unix ns of the next attempt
	since int64  // unix ns since which the socket has taken nothing
	sent  uint32 // c.sent at the last attempt
	shift uint8  // the interval is retryEvery<<shift
}

// worker owns a share of the connections, their subscriptions, the routing
// tables for them, and the load-balanced groups whose names hash to it.
type worker struct {
	h     *Hub
	id    int
	in    *inbox
	log   *zap.Logger
	conns []*Conn
	tab   table
	grp   groups

	deliveries atomic.Uint64 // written by this worker only
	// bytesOut counts the bytes of those deliveries, per publication; a
	// plain field owned by the worker, so counting costs no atomic. Scrapes
	// read it on the worker (WorkerStats), which copies it to
	// bytesReported for workers that do not answer a later one in time.
	bytesOut      uint64
	bytesReported atomic.Uint64
	gid           atomic.Int64 // the worker goroutine's id, race builds only (owner_race.go)

	forceRevalidate bool
	touched         []*Conn          // connections written during the current batch
	stalled         []stall          // connections whose socket was full, retried by the timer
	lingering       map[*Conn]linger // closing connections whose release was put off (lingerOn)
	keyRefs         map[string]int32 // exact keys with a subscription or group here (interest)
	wildRefs        int              // wildcard patterns with a subscription or group here
	unwanted        []unwanted       // interest lost during the batch, cleared at its end
	marks           marks            // pending interest marks on this worker (interest.mu)
	frames          frameCache
	one             oneCopy // the subscription each MQTT connection gets a publication on (onecopy.go)
	retained        retainedStore
	clock           int64 // unix ns, refreshed once per batch
}

// now returns the worker's clock, read once per batch of ops.
func (w *worker) now() int64 {
	if w.clock == 0 {
		w.clock = time.Now().UnixNano()
	}
	return w.clock
}

func newWorker(h *Hub, id int) *worker {
	return &worker{
		h: h, id: id,
		in:       newInbox(h.cfg.MaxPendingPublications),
		log:      h.cfg.Logger.Named("hub").With(zap.Int("worker", id)),
		tab:      newTable(),
		keyRefs:  make(map[string]int32),
		grp:      newGroups(),
		retained: retainedStore{max: h.cfg.MaxRetained},
	}
}

func (w *worker) post(o op) { w.in.push(o) }

// addRetry puts c, whose socket was full, on w's retry list (from any
// goroutine); the worker only arms its retry timer for it.
func (w *worker) addRetry(c *Conn) { w.in.addRetry(c) }

func (w *worker) run() {
	defer w.h.wg.Done()
	w.owner()
	tick := time.NewTicker(w.h.cfg.Tick)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	retryArmed := false
	var ops []op
	var fresh []*Conn
	for {
		retryDue := false
		select {
		case <-w.in.signal:
		case now := <-tick.C:
			w.sweep(now)
		case <-retry.C:
			retryArmed, retryDue = false, true
		case <-w.h.stop:
			w.drain(ops)
			return
		}
		w.clock = 0
		ops = w.in.take(ops)
		var pubs int32
		for i := range ops {
			if ops[i].kind == opPublish {
				if pubs++; pubs == 256 { // a long batch keeps Busy and Behind true to the work left
					w.in.handled(pubs)
					pubs = 0
				}
			}
			w.handle(&ops[i])
			ops[i] = op{}
		}
		w.in.handled(pubs)
		w.flushTouched()
		if len(w.unwanted) > 0 {
			w.dropUnwanted()
		}
		w.h.resumeInput()
		fresh = w.in.takeRetry(fresh)
		for i, c := range fresh {
			w.stalled = append(w.stalled, w.newStall(c))
			fresh[i] = nil
		}
		if retryDue {
			w.retryStalled()
		}
		if len(w.stalled) > 0 && !retryArmed {
			retry.Reset(time.Duration(max(w.nextRetry()-time.Now().UnixNano(), 0)))
			retryArmed = true
		}
	}
}

// newStall starts the retries of c, just found with a full socket.
func (w *worker) newStall(c *Conn) stall {
	now := w.now()
	c.wmu.Lock()
	sent := c.sent
	c.wmu.Unlock()
	return stall{c: c, due: now + int64(retryEvery), since: now, sent: sent}
}

// nextRetry is the unix ns of the earliest due retry.
func (w *worker) nextRetry() int64 {
	next := w.stalled[0].due
	for _, s := range w.stalled[1:] {
		next = min(next, s.due)
	}
	return next
}

// retryStalled flushes the stalled connections that are due. One whose
// queue is written leaves the list; one whose socket took nothing for
// Config.WriteTimeout is closed as a slow consumer.
func (w *worker) retryStalled() {
	now := time.Now().UnixNano()
	keep := w.stalled[:0]
	for _, s := range w.stalled {
		if now < s.due {
			keep = append(keep, s)
			continue
		}
		c := s.c
		c.wmu.Lock()
		if s.shift > 0 {
			c.flushFrom(1) // the last attempt moved next to nothing: probe
		} else {
			c.flushLocked()
		}
		if c.closed || c.queuedBytes() == 0 {
			c.retrying = false
			c.wmu.Unlock()
			continue
		}
		moved := c.sent - s.sent
		if moved != 0 {
			s.sent, s.since = c.sent, now
		}

		if moved >= retryHealthy {
			s.shift = 0
		} else if s.shift < retryMaxShift {
			s.shift++
		}
		timedOut := !c.closing && !c.slow && now-s.since >= int64(w.h.cfg.WriteTimeout)
		if timedOut {
			c.cutLocked()
		}
		c.wmu.Unlock()
		if timedOut {
			c.closeWith(disconnect.New(disconnect.SlowConsumer))
			w.h.stats.slow[SlowWriteTimeout].Add(1) // counted once closing: a reader of the count sees it closed
		}
		s.due = now + int64(retryEvery)<<s.shift
		keep = append(keep, s)
	}
	clear(w.stalled[len(keep):])
	w.stalled = keep
}

// drain runs what is left in the inbox at shutdown, so no caller waits on an
// op that never runs.
func (w *worker) drain(spare []op) {
	ops := w.in.take(spare)
	for i := range ops {
		if k := ops[i].kind; k == opRun || k == opUnregister || k == opClosed {
			w.handle(&ops[i])
		}
	}
}

func (w *worker) handle(o *op) {
	switch o.kind {
	case opRegister:
		o.c.idx = int32(len(w.conns))
		w.conns = append(w.conns, o.c)
		w.h.stats.conns.Add(1)
	case opUnregister:
		w.unregister(o.c)
	case opClosed:
		w.h.forgetInput(o.c)
		o.c.markClosed()
		w.unregister(o.c)
	case opSubscribe:
		w.subscribe(o.c, o.spec)
		putSpec(o.spec) // Hub.Subscribe's copy: subscribe kept no reference
	case opUnsubscribe:
		w.unsubscribe(o.c, o.pattern)
		w.answer(o.c, o.ticket, o.reply)
	case opPublish:
		w.fanOut(o.pub)
	case opClose:
		o.c.closeWith(o.close)
	case opSetFilters:
		w.setFilters(o.c, o.pattern, o.filters, o.reply, o.ticket, o.spec)
		putSpec(o.spec) // Hub.SetFilters's: setFilters kept no reference
	case opMemberFilters:
		o.member.filters = o.filters
		w.answer(o.member.c, o.ticket, o.reply)
	case opDeliver:
		w.deliver(o.pub, o.c, o.pattern, o.wild, true)
	case opRun:
		o.fn(o.c)
	case opMemberAdd:
		w.addMember(o.member)
	case opMemberRemove:
		m := o.member
		if !w.grp.remove(m) {
			return
		}
		w.h.stats.groups.Add(-1)
		if m.durable {
			if f := w.h.cfg.OnDurableInterest; f != nil {
				f(m.group, m.key, -1, nil)
			}
			return
		}
		w.lose(m.key, m.wild)
		if f := w.h.cfg.OnGroupInterest; f != nil {
			f(m.group, m.key, m.wild, -1)
		}
	}
}

// write queues frame to c and remembers to flush c at the end of the batch.
func (w *worker) write(c *Conn, frame []byte) {
	if frame == nil {
		return
	}
	c.wmu.Lock()
	if c.appendLocked(frame, false) && c.queuedFrames() == 1 {
		w.touched = append(w.touched, c)
	}
	c.wmu.Unlock()
}

func (w *worker) flushTouched() {
	for i, c := range w.touched {
		c.Flush()
		w.touched[i] = nil
	}
	w.touched = w.touched[:0]
}

func (w *worker) unregister(c *Conn) {
	if c.idx < 0 {
		return
	}
	delete(w.lingering, c)
	parker, _ := c.t.(Parker)
	var specs []SubSpec
	for s := c.subs; s != nil; s = s.next {
		if parker != nil {
			specs = append(specs, s.spec())
		}
		w.detach(s)
	}
	c.subs, c.nsubs, c.nwild = nil, 0, 0
	last := len(w.conns) - 1
	w.conns[c.idx] = w.conns[last]
	w.conns[c.idx].idx = c.idx
	w.conns[last] = nil
	w.conns = w.conns[:last]
	c.idx = -1
	w.h.stats.conns.Add(-1)
	if parker != nil {
		parker.Park(c, specs)
	}
	if w.h.cfg.OnClose != nil {
		w.h.cfg.OnClose(c)
	}
}

// sweep enforces the deadlines (token expiry included) and schedules
// revalidations. One pass over the worker's connections per tick; no
// per-connection timers.
func (w *worker) sweep(now time.Time) {
	ns := now.UnixNano()
	cfg := &w.h.cfg
	var due []*Conn
	for i := 0; i < len(w.conns); i++ {
		c := w.conns[i]
		at := c.closeAt.Load()
		if at > 0 {
			if ns >= at && !w.lingerOn(c, ns) {
				c.release()
			}
			continue
		}
		p := c.phase.Load()
		switch Phase(p & phaseMask) {
		case PhaseHandshake:
			if ns-c.created > int64(cfg.HandshakeTimeout) {
				if r := c.handshakeTimeout(); r != nil {
					c.WriteFlush(r)
				}
				c.closeWith(disconnect.New(disconnect.HandshakeTimeout))
			}
			continue
		case PhaseOpen:
			if ns-c.created > int64(cfg.AuthTimeout) {
				c.closeWith(disconnect.New(disconnect.AuthTimeout))
				continue
			}
		case PhaseAuthed:
			s := c.Session()
			if s != nil && s.ExpiresAt != 0 && now.Unix() >= int64(s.ExpiresAt) {
				c.closeWith(disconnect.New(disconnect.TokenExpired))
				continue
			}
			if s != nil && !c.revalidate && cfg.Revalidate != nil &&
				(w.forceRevalidate || ns-s.ValidatedAt >= int64(cfg.RevalidateInterval)) {
				c.revalidate = true
				due = append(due, c)
			}
		}
		limit, fs := int64(cfg.IdleTimeout), frameStartOf(at)
		if own := c.ownIdle(p); own != 0 {
			limit = own
		}
		idle := limit > 0 && ns-c.lastRead.Load() > limit
		if fs != 0 && (idle || ns-fs > int64(cfg.FrameTimeout)) {
			c.closeWith(disconnect.New(disconnect.FrameTimeout))
		} else if idle {
			c.closeWith(disconnect.New(disconnect.IdleTimeout))
		}
	}
	w.forceRevalidate = false
	w.retained.sweep(ns)
	if len(due) > 0 {
		w.h.bg.Add(1) // owned by bg: Shutdown waits for the revalidations
		go func() {
			defer w.h.bg.Done()
			cfg.Revalidate(due)
		}()
	}
}

// closeAll closes every connection for d (shutdown).
func (w *worker) closeAll(d disconnect.Disconnect) {
	for _, c := range append([]*Conn(nil), w.conns...) {
		c.closeWith(d)
	}
}

// releaseAll releases every socket still open (the end of shutdown).
func (w *worker) releaseAll() {
	for _, c := range append([]*Conn(nil), w.conns...) {
		c.release()
	}
}

// linger is what the sweep knew of a closing connection whose release it
// put off.
type linger struct {
	since    int64  // unix ns of the first put-off
	progress int64  // unix ns bytes last moved (or of the first put-off)
	sent     uint32 // Conn.sent then
	unsent   int    // the bytes its socket had not sent then
}

// maxLinger bounds how long a closing connection is kept for a peer that
// is still reading, in units of Config.WriteTimeout.
const maxLinger = 10

// lingerOn reports whether closing connection c, whose close deadline has
// passed at ns, may still be reading what it was sent, and then puts its
// release off by Config.CloseTimeout. Releasing a socket while its peer
// still reads would lose the rest and the close frame behind them: the
// peer's next bytes (an ack, a ping) would meet a closed socket and draw
// a reset (case 006's kind). So a connection that had bytes queued or in
// the kernel at its close deadline is kept while they move (SIOCOUTQ,
// hub.Unsent), then, once all are out, for Config.WriteTimeout more for
// the peer to read its own buffer and close (its close releases it at
// once); a peer that reads nothing for Config.CloseTimeout is released as
// before, and none is kept past maxLinger × Config.WriteTimeout.
func (w *worker) lingerOn(c *Conn, ns int64) bool {
	unsent := 0
	if u, ok := c.t.(Unsent); ok {
		unsent = u.Unsent()
	}
	c.wmu.Lock()
	queued, sent := c.queuedBytes(), c.sent
	c.wmu.Unlock()
	cfg := &w.h.cfg
	l, seen := w.lingering[c]
	pending := queued > 0 || unsent > 0
	switch {
	case !seen && !pending: // nothing was in flight: an ordinary close
		return false
	case !seen:
		l = linger{since: ns, progress: ns}
		if w.lingering == nil {
			w.lingering = make(map[*Conn]linger)
		}
	case sent != l.sent || unsent < l.unsent:
		l.progress = ns
	}
	idle := ns - l.progress
	if pending && idle >= int64(cfg.CloseTimeout) || // the peer stopped reading
		!pending && idle >= int64(cfg.WriteTimeout) || // all out; the peer had its time
		ns-l.since >= maxLinger*int64(cfg.WriteTimeout) {
		delete(w.lingering, c)
		return false
	}
	l.sent, l.unsent = sent, unsent
	w.lingering[c] = l
	c.closeAt.Store(ns + int64(cfg.CloseTimeout))
	return true
}

// closeSome closes up to k of the worker's connections that are not
// closing yet and that skip (nil: none) does not exclude, for d; it
// returns how many it closed (Hub.CloseSome).
func (w *worker) closeSome(k int, d disconnect.Disconnect, skip func(*Conn) bool) int {
	n := 0
	for _, c := range append([]*Conn(nil), w.conns...) {
		if n >= k {
			break
		}
		if c.Closing() || skip != nil && skip(c) {
			continue
		}
		c.closeWith(d)
		n++
	}
	return n
}
