package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// request is one command to a worker (in process or a child process).
type request struct {
	Op string `json:"op"`
	// connect
	Target      int      `json:"target,omitempty"`      // total connections across all workers
	Topics      []string `json:"topics,omitempty"`      // topics to subscribe
	Spread      bool     `json:"spread,omitempty"`      // connection g subscribes to Topics[g%len] only
	Readers     bool     `json:"readers,omitempty"`     // start a reader goroutine per connection
	Concurrency int      `json:"concurrency,omitempty"` // handshakes in flight
	Base        int      `json:"base,omitempty"`        // global index of the first connection (resume: the batch's first session)
	ClientIDs   bool     `json:"client_ids,omitempty"`  // auth with clientId clientID(g): a resumable session of its own each
	QoS         int      `json:"qos,omitempty"`         // qos of the subscribe frames (0: none sent)
	// reset
	Seqs int `json:"seqs,omitempty"` // sequence numbers tracked for the last-subscriber latency
	// drain / probe
	Expect    int   `json:"expect,omitempty"`     // messages to read per idle connection
	TimeoutNs int64 `json:"timeout_ns,omitempty"` // overall limit
}

// response is a worker's answer.
type response struct {
	Err string `json:"err,omitempty"`
	// connect
	Conns      int      `json:"conns"`
	Opened     int      `json:"opened,omitempty"`
	Errors     int      `json:"errors,omitempty"`
	FirstError string   `json:"first_error,omitempty"`
	StartNs    int64    `json:"start_ns,omitempty"`
	EndNs      int64    `json:"end_ns,omitempty"`
	Handshake  histData `json:"handshake"`
	// Auth is the time from writing the auth frame to reading the auth
	// reply, of the connections opened.
	Auth histData `json:"auth"`
	// stats and drain
	Delivered   int64    `json:"delivered"`
	FirstRecvNs int64    `json:"first_recv_ns,omitempty"`
	LastRecvNs  int64    `json:"last_recv_ns,omitempty"`
	Latency     histData `json:"latency"`
	SeqMax      []int64  `json:"seq_max,omitempty"`
	ErrorFrames int64    `json:"error_frames,omitempty"`
	ErrorSample string   `json:"error_sample,omitempty"`
	Disconnects int64    `json:"disconnects"`
	Short       int      `json:"short,omitempty"` // idle connections that missed messages in drain
	// storm: when this worker started and finished resetting its
	// connections, and how many it reset
	CloseStartNs int64 `json:"close_start_ns,omitempty"`
	CloseEndNs   int64 `json:"close_end_ns,omitempty"`
	Closed       int   `json:"closed,omitempty"`
}

// worker holds a share of the connections. Connection i of worker w has the
// global index i*procs + w.
type worker struct {
	index, procs int
	d            *dialer
	hbEvery      time.Duration

	mu      sync.Mutex
	conns   []*conn
	closing atomic.Bool
	readers sync.WaitGroup
	hbStop  chan struct{}
	hbDone  chan struct{}

	delivered   atomic.Int64
	firstRecv   atomic.Int64
	lastRecv    atomic.Int64
	lat         hist
	seq         atomic.Pointer[[]atomic.Int64]
	errFrames   atomic.Int64
	errSample   atomic.Pointer[string]
	disconnects atomic.Int64
}

func newWorker(index, procs int, d *dialer, hbEvery time.Duration) *worker {
	w := &worker{index: index, procs: procs, d: d, hbEvery: hbEvery,
		hbStop: make(chan struct{}), hbDone: make(chan struct{})}
	go w.heartbeats()
	return w
}

// shareOf is how many of total connections worker index of procs holds.
func shareOf(total, index, procs int) int {
	n := total / procs
	if index < total%procs {
		n++
	}
	return n
}

func (w *worker) handle(req request) response {
	switch req.Op {
	case "connect":
		return w.connect(req)
	case "reset":
		w.reset(req.Seqs)
		return response{}
	case "count":
		return response{Delivered: w.delivered.Load(), Conns: w.count(), Disconnects: w.disconnects.Load()}
	case "stats":
		return w.stats()
	case "drain":
		return w.drain(req.Expect, time.Duration(req.TimeoutNs))
	case "storm":
		return w.storm(req)
	case "drop":
		return w.drop()
	case "close":
		return w.close()
	default:
		return response{Err: "unknown op " + req.Op}
	}
}

func (w *worker) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.conns)
}

func (w *worker) connect(req request) response {
	share := shareOf(req.Target, w.index, w.procs)
	w.mu.Lock()
	have := len(w.conns)
	w.mu.Unlock()
	var r response
	if share <= have {
		r.Conns = have
		return r
	}
	conc := req.Concurrency
	if conc <= 0 {
		conc = 32
	}
	var subAll [][]byte
	for _, t := range req.Topics {
		if req.QoS > 0 {
			subAll = append(subAll, clientFrame(subscribeQoSPayload(t, req.QoS)))
		} else {
			subAll = append(subAll, clientFrame(subscribePayload(t)))
		}
	}
	next := make(chan int)
	var (
		mu     sync.Mutex
		opened []*conn
		hs, ah hist
	)
	var wg sync.WaitGroup
	r.StartNs = time.Now().UnixNano()
	for g := 0; g < conc && g < share-have; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for i := range next {
				gi := req.Base + i*w.procs + w.index
				subs := subAll
				if req.Spread && len(subAll) > 0 {
					subs = subAll[gi%len(subAll) : gi%len(subAll)+1]
				}
				authF := w.d.authFrame(gi)
				if req.ClientIDs {
					authF = clientFrame(resumeAuthPayload(tokenFor(w.d.token, w.d.tokens, gi), clientID(gi), false))
				}
				t0 := time.Now()
				var c *conn
				var authNs int64
				var err error
				if w.d.mqttAddr != "" {
					c, authNs, err = w.d.mqttOpen(gi, req.Topics)
				} else {
					c, authNs, err = w.d.open(context.Background(), authF, subs, buf)
				}
				mu.Lock()
				if err != nil {
					r.Errors++
					if r.FirstError == "" {
						r.FirstError = err.Error()
					}
				} else {
					hs.record(time.Since(t0).Nanoseconds())
					ah.record(authNs)
					opened = append(opened, c)
				}
				mu.Unlock()
			}
		}()
	}
	for i := have; i < share; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	r.EndNs = time.Now().UnixNano()
	r.Handshake = hs.snapshot()
	r.Auth = ah.snapshot()
	r.Opened = len(opened)
	if req.Readers {
		for _, c := range opened {
			w.startReader(c)
		}
	}
	w.mu.Lock()
	w.conns = append(w.conns, opened...)
	r.Conns = len(w.conns)
	w.mu.Unlock()
	return r
}

func (w *worker) startReader(c *conn) {
	c.reading = true
	w.readers.Add(1)
	go func() {
		defer w.readers.Done()
		_ = c.readLoop(w.onFrame)
		if !w.closing.Load() {
			w.disconnects.Add(1)
		}
	}()
}

// onFrame counts one server frame from a reader goroutine.
func (w *worker) onFrame(op byte, p []byte) {
	if op != opBinary || len(p) == 0 {
		return
	}
	m, err := scanServerMsg(p)
	if err != nil {
		w.noteError("undecodable frame: " + err.Error())
		return
	}
	switch string(m.typ) {
	case "message":
		w.recordDelivery(m.data)
	case "error":
		w.noteError("error frame: " + string(m.errCode))
	}
}

func (w *worker) noteError(s string) {
	w.errFrames.Add(1)
	if w.errSample.Load() == nil {
		w.errSample.CompareAndSwap(nil, &s)
	}
}

func (w *worker) recordDelivery(data []byte) {
	now := time.Now().UnixNano()
	w.delivered.Add(1)
	casMin(&w.firstRecv, now)
	casMax(&w.lastRecv, now)
	ts, seq, ok := parseStamp(data)
	if !ok {
		return
	}
	lat := now - ts
	w.lat.record(lat)
	if tbl := w.seq.Load(); tbl != nil && seq >= 0 && seq < int64(len(*tbl)) {
		casMax(&(*tbl)[seq], lat)
	}
}

func casMin(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if (cur != 0 && cur <= v) || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func casMax(a *atomic.Int64, v int64) {
	for {
		cur := a.Load()
		if cur >= v || a.CompareAndSwap(cur, v) {
			return
		}
	}
}

func (w *worker) reset(seqs int) {
	w.delivered.Store(0)
	w.firstRecv.Store(0)
	w.lastRecv.Store(0)
	w.lat.reset()
	w.errFrames.Store(0)
	w.errSample.Store(nil)
	if seqs > 0 {
		tbl := make([]atomic.Int64, seqs)
		for i := range tbl {
			tbl[i].Store(-1)
		}
		w.seq.Store(&tbl)
	} else {
		w.seq.Store(nil)
	}
}

func (w *worker) stats() response {
	r := response{
		Conns:       w.count(),
		Delivered:   w.delivered.Load(),
		FirstRecvNs: w.firstRecv.Load(),
		LastRecvNs:  w.lastRecv.Load(),
		Latency:     w.lat.snapshot(),
		ErrorFrames: w.errFrames.Load(),
		Disconnects: w.disconnects.Load(),
	}
	if s := w.errSample.Load(); s != nil {
		r.ErrorSample = *s
	}
	if tbl := w.seq.Load(); tbl != nil {
		r.SeqMax = make([]int64, len(*tbl))
		for i := range *tbl {
			r.SeqMax[i] = (*tbl)[i].Load()
		}
	}
	return r
}

// drain reads expect message frames from every idle connection (expect 0
// only checks that the connection is still open). Deliveries are counted.
func (w *worker) drain(expect int, timeout time.Duration) response {
	w.mu.Lock()
	conns := append([]*conn(nil), w.conns...)
	w.mu.Unlock()
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	var (
		r  response
		mu sync.Mutex
		wg sync.WaitGroup
	)
	next := make(chan *conn)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			for c := range next {
				if c.reading || c.closed.Load() {
					continue
				}
				got := 0
				dl := deadline
				if expect == 0 {
					dl = time.Now().Add(2 * time.Millisecond)
				}
				var err error
				if c.mqtt {
					err = c.readPublishes(dl, func(payload []byte) bool {
						got++
						w.recordDelivery(payload)
						return expect > 0 && got >= expect
					})
				} else {
					err = c.readFrames(buf, dl, func(op byte, p []byte) bool {
						if op == opBinary && len(p) > 0 {
							if m, err := scanServerMsg(p); err == nil {
								switch string(m.typ) {
								case "message":
									got++
									w.recordDelivery(m.data)
								case "error":
									w.noteError("error frame: " + string(m.errCode))
								}
							}
						}
						return expect > 0 && got >= expect
					})
				}
				mu.Lock()
				if expect > 0 && got < expect {
					r.Short++
				}
				if err != nil && c.closed.Load() {
					w.disconnects.Add(1)
				}
				mu.Unlock()
			}
		}()
	}
	for _, c := range conns {
		next <- c
	}
	close(next)
	wg.Wait()
	r.Conns = len(conns)
	r.Delivered = w.delivered.Load()
	r.Disconnects = w.disconnects.Load()
	return r
}

// heartbeats sends an empty binary frame on every connection each hbEvery,
// from this one goroutine.
func (w *worker) heartbeats() {
	defer close(w.hbDone)
	if w.hbEvery <= 0 {
		<-w.hbStop
		return
	}
	t := time.NewTicker(w.hbEvery)
	defer t.Stop()
	for {
		select {
		case <-w.hbStop:
			return
		case <-t.C:
		}
		w.mu.Lock()
		conns := append([]*conn(nil), w.conns...)
		w.mu.Unlock()
		for _, c := range conns {
			if c.closed.Load() || c.mqtt { // MQTT: keep-alive 0, nothing to send
				continue
			}
			_ = c.write(heartbeatFrame, 5*time.Second)
		}
	}
}

// close closes every connection and stops the goroutines.
func (w *worker) close() response {
	w.closing.Store(true)
	select {
	case <-w.hbStop:
	default:
		close(w.hbStop)
	}
	<-w.hbDone
	w.mu.Lock()
	conns := w.conns
	w.conns = nil
	w.mu.Unlock()
	for _, c := range conns {
		c.abort()
	}
	w.readers.Wait()
	return response{Conns: len(conns), Disconnects: w.disconnects.Load()}
}

// storm resets every connection of this worker at once (RST, as when a
// network path fails), then reopens its share of req.Target with the same
// handshake as connect. Connections with reader goroutines are not
// expected here: the storm runs on idle connections.
func (w *worker) storm(req request) response {
	w.mu.Lock()
	old := w.conns
	w.conns = nil
	w.mu.Unlock()
	start := time.Now().UnixNano()
	for _, c := range old {
		c.abort()
	}
	end := time.Now().UnixNano()
	r := w.connect(req)
	r.CloseStartNs, r.CloseEndNs, r.Closed = start, end, len(old)
	return r
}

// drop resets every connection of this worker at once (RST, as when a
// network path fails) and forgets them: the resume scenario's sessions
// are then parked by the broker.
func (w *worker) drop() response {
	w.mu.Lock()
	old := w.conns
	w.conns = nil
	w.mu.Unlock()
	start := time.Now().UnixNano()
	for _, c := range old {
		c.abort()
	}
	return response{CloseStartNs: start, CloseEndNs: time.Now().UnixNano(), Closed: len(old)}
}

// workerClient is a worker in this process or in a child process.
type workerClient interface {
	call(req request) (response, error)
	shutdown() error
}

type localWorker struct{ w *worker }

func (l localWorker) call(req request) (response, error) {
	r := l.w.handle(req)
	if r.Err != "" {
		return r, errors.New(r.Err)
	}
	return r, nil
}

func (l localWorker) shutdown() error {
	l.w.close()
	return nil
}

// callAll sends req to every worker in parallel.
func callAll(ws []workerClient, req request) ([]response, error) {
	out := make([]response, len(ws))
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, wc := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = wc.call(req)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return out, fmt.Errorf("worker %d %s: %w", i, req.Op, err)
		}
	}
	return out, nil
}
