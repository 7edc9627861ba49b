package hub

import (
	"sync"
	"sync/atomic"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

type opKind uint8

const (
	opRegister opKind = iota + 1
	opUnregister
	opClosed // Hub.ClosedLater: Closed's work, on the worker
	opSubscribe
	opUnsubscribe
	opSetFilters
	opPublish
	opClose
	opRun
	opMemberAdd
	opMemberRemove
	opMemberFilters
	opDeliver
)

// op is one unit of work for a worker. Only the fields its kind needs are
// set.
type op struct {
	kind    opKind
	c       *Conn
	pub     *Publication
	spec    *SubSpec
	member  *member
	pattern string
	reply   []byte
	ticket  Ticket // the reply's place (Conn.ExpectReply)
	wild    bool
	close   disconnect.Disconnect
	filters []string
	fn      func(*Conn)
}

// inbox is a worker's queue. Producers never block. Publications are
// counted so the hub can refuse new ones while a worker is behind (see
// Hub.Busy); control operations (register, close, subscribe...) are always
// taken.
type inbox struct {
	mu       sync.Mutex
	ops      []op
	pubs     atomic.Int32  // publications queued and not handled yet; read without the lock by full
	queued   uint64        // publications ever queued, under mu
	wakes    atomic.Uint64 // wake-ups delivered to the worker
	retry    []*Conn
	signal   chan struct{} // capacity 1: "there is work"
	max      int
	shutdown bool
}

func newInbox(maxPending int) *inbox {
	return &inbox{signal: make(chan struct{}, 1), max: maxPending}
}

func (in *inbox) push(o op) {
	in.mu.Lock()
	if o.kind == opPublish {
		in.pubs.Add(1)
		in.queued++
	}
	in.ops = append(in.ops, o)
	in.mu.Unlock()
	in.wake()
}

// full reports whether the queue holds its maximum of publications.
func (in *inbox) full() bool { return int(in.pubs.Load()) >= in.max }

func (in *inbox) wake() {
	select {
	case in.signal <- struct{}{}:
		in.wakes.Add(1)
	default:
	}
}

// take swaps the queue out, returning the pending ops; spare is reused as
// the next queue. The publications among them stay counted in pubs until
// the worker has handled them (handled).
func (in *inbox) take(spare []op) []op {
	in.mu.Lock()
	ops := in.ops
	in.ops = spare[:0]
	in.mu.Unlock()
	return ops
}

// addRetry hands c to the worker's retry list; only the first of a batch
// wakes the worker, which arms its retry timer (it never retries at once).
func (in *inbox) addRetry(c *Conn) {
	in.mu.Lock()
	in.retry = append(in.retry, c)
	first := len(in.retry) == 1
	in.mu.Unlock()
	if first {
		in.wake()
	}
}

func (in *inbox) takeRetry(spare []*Conn) []*Conn {
	in.mu.Lock()
	r := in.retry
	in.retry = spare[:0]
	in.mu.Unlock()
	return r
}

func (in *inbox) close() {
	in.mu.Lock()
	in.shutdown = true
	in.mu.Unlock()
}

// counts returns the publications ever queued and the wake-ups delivered.
func (in *inbox) counts() (queued, wakes uint64) {
	in.mu.Lock()
	queued = in.queued
	in.mu.Unlock()
	return queued, in.wakes.Load()
}

// handled uncounts n publications the worker has fanned out.
func (in *inbox) handled(n int32) { in.pubs.Add(-n) }
