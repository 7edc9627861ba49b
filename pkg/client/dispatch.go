package client

import (
	"sync"
	"sync/atomic"
)

// dispatcher runs handlers and event callbacks, in order, on one goroutine
// that is not the reader: a slow handler delays other handlers but never
// the reading of frames or the heartbeats.
//
// Deliveries (messages, presence events) count against a bound; when it is
// reached they are dropped and counted. Events (connect, disconnect, ...)
// are rare and always queued.
type dispatcher struct {
	mu      sync.Mutex
	q       []task
	head    int
	bounded int // queued tasks that count against limit
	limit   int
	stopped bool

	dropped  atomic.Uint64 // dropped since the last report
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	inTask   atomic.Bool
	onDrop   func(n uint64) // reports drops, run on the dispatcher
	stopOnce sync.Once
}

type task struct {
	fn      func()
	bounded bool
}

func newDispatcher(limit int, onDrop func(uint64)) *dispatcher {
	d := &dispatcher{limit: limit, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), onDrop: onDrop}
	go d.run() // owned by d: close stops it and waits on done (unless called from a task, after which it exits)
	return d
}

// deliver queues a bounded task; it returns false (and counts a drop) when
// the queue is full.
func (d *dispatcher) deliver(fn func()) bool { return d.push(task{fn: fn, bounded: true}) }

// event queues an unbounded task.
func (d *dispatcher) event(fn func()) { d.push(task{fn: fn}) }

func (d *dispatcher) push(t task) bool {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return false
	}
	if t.bounded {
		if d.bounded >= d.limit {
			d.mu.Unlock()
			d.dropped.Add(1)
			d.signal()
			return false
		}
		d.bounded++
	}
	d.q = append(d.q, t)
	d.mu.Unlock()
	d.signal()
	return true
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) pop() (task, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped || d.head == len(d.q) {
		return task{}, false
	}
	t := d.q[d.head]
	d.q[d.head] = task{}
	d.head++
	if d.head == len(d.q) {
		d.q, d.head = d.q[:0], 0
	} else if d.head > 1024 && d.head*2 > len(d.q) {
		d.q = append(d.q[:0], d.q[d.head:]...)
		d.head = 0
	}
	if t.bounded {
		d.bounded--
	}
	return t, true
}

func (d *dispatcher) run() {
	defer close(d.done)
	for {
		if n := d.dropped.Swap(0); n > 0 && d.onDrop != nil {
			d.runTask(func() { d.onDrop(n) })
		}
		t, ok := d.pop()
		if ok {
			d.runTask(t.fn)
			continue
		}
		select {
		case <-d.wake:
		case <-d.stop:
			return
		}
	}
}

func (d *dispatcher) runTask(fn func()) {
	d.inTask.Store(true)
	defer d.inTask.Store(false)
	fn()
}

// close discards the queue and stops the goroutine. It waits for it unless
// a task is running at that moment (which may be the caller itself, when a
// handler calls Client.Close): that task finishes and the goroutine exits
// right after it.
func (d *dispatcher) close() {
	d.stopOnce.Do(func() {
		d.mu.Lock()
		d.stopped = true
		d.q, d.head, d.bounded = nil, 0, 0
		d.mu.Unlock()
		close(d.stop)
	})
	if !d.inTask.Load() {
		<-d.done
	}
}
