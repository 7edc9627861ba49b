package hub

import (
	"sync"
	"sync/atomic"
	"time"
)

// InputPauser is a Transport whose reading can be stopped: while paused
// its socket is not read, so the kernel's receive window closes and TCP
// slows the client down (netpoll's Connection.SetReadPaused, patched into
// third_party/netpoll). It is called from any goroutine while the
// connection is open, never after Hub.Closed.
type InputPauser interface {
	SetReadPaused(paused bool) error
}

// behindRatio: a worker with Config.MaxPendingPublications/behindRatio
// publications not yet handled is behind (Hub.Behind): input is paused
// long before publishes are refused (Hub.Busy).
const behindRatio = 64

// inflow is the hub's input flow control: the connections whose reading
// is paused while the workers are behind (Hub.HoldInput), resumed by the
// first worker that finds the hub caught up at the end of a batch (or of a
// sweep). One mutex, taken only to pause, resume and forget; the workers
// read paused without it.
type inflow struct {
	mu     sync.Mutex
	held   map[*Conn]struct{}
	paused atomic.Int32 // len(held)
	pauses atomic.Uint64
}

// Behind reports whether some worker has at least
// Config.MaxPendingPublications/64 publications not yet handled (1024 by
// default): the point from which transports stop reading the connections
// that send (HoldInput).
func (h *Hub) Behind() bool {
	at := max(h.cfg.MaxPendingPublications/behindRatio, 1)
	for _, w := range h.workers {
		if int(w.in.pubs.Load()) >= at {
			return true
		}
	}
	return false
}

// HoldInput stops reading c's socket while the hub is behind (Behind), if
// its transport is an InputPauser, and reports whether c is now paused
// (InputHeld then reports true until InputDrained);
// the hub resumes it once the workers have caught up. A transport's reader
// calls it after handling input, so a client that sends faster than the
// workers deliver is slowed down by TCP instead of having its input
// buffered without bound or being closed (docs/SECURITY.md, "Which limit
// acts when"). Its idle deadline restarts when it is resumed.
func (h *Hub) HoldInput(c *Conn) bool {
	if !h.Behind() {
		return false
	}
	p, ok := c.t.(InputPauser)
	if !ok {
		return false
	}
	f := &h.flow
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.held[c]; held {
		c.inHeld = true
		return true
	}
	if c.markedClosed() || p.SetReadPaused(true) != nil {
		return false
	}
	if f.held == nil {
		f.held = make(map[*Conn]struct{})
	}
	f.held[c] = struct{}{}
	f.paused.Add(1)
	f.pauses.Add(1)
	c.inHeld = true
	return true
}

// InputHeld reports whether c's input was paused (HoldInput) since its
// reader last found it all worked through with the socket read again
// (InputDrained): what netpoll reads at once when the socket is resumed
// is the pause's doing, not the client's, so the transport works through
// it instead of closing the connection with input_overflow (up to a hard
// bound of its own). Call it only from c's reader.
func (c *Conn) InputHeld() bool { return c.inHeld }

// InputDrained records that c's reader has worked through all of its
// input since the socket was resumed (InputPaused false). Call it only
// from c's reader.
func (c *Conn) InputDrained() { c.inHeld = false }

// InputPauses returns how many times a connection's input was paused.
func (h *Hub) InputPauses() uint64 { return h.flow.pauses.Load() }

// resumeInput resumes every paused connection once the hub is not behind.
// Called by the workers; cheap when nothing is paused.
func (h *Hub) resumeInput() {
	f := &h.flow
	if f.paused.Load() == 0 || h.Behind() {
		return
	}
	now := time.Now().UnixNano()
	f.mu.Lock()
	for c := range f.held {
		c.Touch(now)
		_ = c.t.(InputPauser).SetReadPaused(false)
		delete(f.held, c)
	}
	f.paused.Store(0)
	f.mu.Unlock()
}

// forgetInput drops c from the paused set: it is closing (Hub.Closed),
// and its descriptor may be released and reused once Closed returns.
func (h *Hub) forgetInput(c *Conn) {
	f := &h.flow
	if f.paused.Load() == 0 {
		return
	}
	f.mu.Lock()
	if _, held := f.held[c]; held {
		delete(f.held, c)
		f.paused.Add(-1)
	}
	f.mu.Unlock()
}

// InputPaused reports whether c's socket is paused now (HoldInput, not
// resumed yet). It takes the flow-control mutex: a reader asks it only
// while InputHeld.
func (h *Hub) InputPaused(c *Conn) bool {
	f := &h.flow
	if f.paused.Load() == 0 {
		return false
	}
	f.mu.Lock()
	_, held := f.held[c]
	f.mu.Unlock()
	return held
}
