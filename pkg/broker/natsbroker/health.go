package natsbroker

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// The shared state can fail while both NATS connections stay up. A bucket
// whose stream has one replica is offline while the server holding it is
// down: puts answer "no response from stream", making or binding the
// bucket "stream is offline", a new watch "insufficient resources". A
// watch whose consumer was on a server that went away stops delivering
// without any error. stateHealth keeps what fails, for readiness
// (Broker.StateReady), and logs it:
//
//   - a write fails: a put or delete of an own key, the heartbeat, or
//     making or binding the bucket; any write that succeeds clears it;
//   - the watch fails: it cannot be made, nats.go ended it, or none of
//     this node's heartbeats has come back through it for LivenessTimeout
//     (the node's view of the others is stale; when the heartbeats were
//     stored meanwhile, the watcher watches anew); any entry the watch
//     delivers clears it.
//
// The first failure of an outage is logged at once, at error level (warn
// before the state has ever worked: a node starting with its NATS cluster,
// whose JetStream is still making the bucket); later ones at most once per
// stateLogInterval, each line with the count of the failures not logged
// since the previous one. When nothing fails any more, one info line says
// so.

// stateLogInterval is the least time between two failure lines of one
// outage.
const stateLogInterval = 10 * time.Second

// statePart is what of the shared state fails.
type statePart int

const (
	partWrite statePart = iota // own keys, heartbeat, the bucket itself
	partWatch                  // the watch of the bucket
	numStateParts
)

var statePartNames = [numStateParts]string{"write", "watch"}

// errWatchEnded is the failure of a watch that nats.go gave up.
var errWatchEnded = errors.New("natsbroker: the watch of the state bucket ended")

// stateHealth is the failure in force of each statePart. It is safe for
// concurrent use; ok is one atomic load while nothing fails.
type stateHealth struct {
	log      *zap.Logger
	bucket   string
	replicas int
	every    time.Duration // stateLogInterval
	failing  atomic.Bool   // some part fails
	worked   atomic.Bool   // some part worked once

	mu         sync.Mutex
	parts      [numStateParts]stateFailure
	since      time.Time // when the outage began; zero while nothing fails
	failures   int       // failures since then
	logged     time.Time // the outage's last failure line
	suppressed int       // failures not logged since that line
	closed     bool      // shutting down: failures are expected, not recorded
}

// stateFailure is the newest failure of one part, and since when the part
// fails (zero: it works).
type stateFailure struct {
	op    string
	err   error
	since time.Time
}

func newStateHealth(log *zap.Logger, bucket string, replicas int) *stateHealth {
	return &stateHealth{log: log, bucket: bucket, replicas: replicas, every: stateLogInterval}
}

// fail records that op (put, delete, purge, heartbeat, bucket, watch)
// failed with err, and logs it unless a line of this outage was written
// less than stateLogInterval ago.
func (h *stateHealth) fail(part statePart, op string, err error) {
	now := time.Now()
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	p := &h.parts[part]
	if p.since.IsZero() {
		p.since = now
	}
	p.op, p.err = op, err
	h.failures++
	h.failing.Store(true)
	if h.since.IsZero() {
		h.since = now
	} else if now.Sub(h.logged) < h.every {
		h.suppressed++
		h.mu.Unlock()
		return
	}
	suppressed, since := h.suppressed, h.since
	h.suppressed, h.logged = 0, now
	h.mu.Unlock()
	level := zapcore.ErrorLevel
	if !h.worked.Load() {
		level = zapcore.WarnLevel
	}
	h.log.Log(level, "cluster state failing: presence, connection counts and node liveness do not cross between this node and the others; retrying",
		zap.String("part", statePartNames[part]), zap.String("op", op), zap.Error(err),
		zap.String("bucket", h.bucket), zap.Int("replicas", h.replicas),
		zap.Duration("failing_for", now.Sub(since).Round(time.Millisecond)), zap.Int("suppressed", suppressed))
}

// ok records that part works; when no part fails any more, the outage
// ends and is logged.
func (h *stateHealth) ok(part statePart) {
	if !h.worked.Load() {
		h.worked.Store(true)
	}
	if !h.failing.Load() {
		return
	}
	h.mu.Lock()
	h.parts[part] = stateFailure{}
	for _, p := range h.parts {
		if p.err != nil {
			h.mu.Unlock()
			return
		}
	}
	lasted, failures, closed := time.Since(h.since), h.failures, h.closed
	h.since, h.failures, h.suppressed = time.Time{}, 0, 0
	h.failing.Store(false)
	h.mu.Unlock()
	if !closed {
		h.log.Info("cluster state works again", zap.String("bucket", h.bucket),
			zap.Duration("failed_for", lasted.Round(time.Millisecond)), zap.Int("failures", failures))
	}
}

// err returns nil while nothing fails, else what fails, for how long and
// why, e.g. "natsbroker: cluster state failing for 3.2s: write (put):
// nats: no response from stream; the bucket kraken_STATE has 1 replica:
// ...".
func (h *stateHealth) err() error {
	if !h.failing.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.since.IsZero() {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "natsbroker: cluster state failing for %v", time.Since(h.since).Round(time.Millisecond))
	sep := ": "
	for i, p := range h.parts {
		if p.err != nil {
			fmt.Fprintf(&b, "%s%s (%s): %v", sep, statePartNames[i], p.op, p.err)
			sep = "; "
		}
	}
	if h.replicas == 1 {
		fmt.Fprintf(&b, "; the bucket %s has 1 replica: it is unavailable while the NATS server holding it is down (NATS_REPLICAS)", h.bucket)
	}
	return errors.New(b.String())
}

// close stops recording: failures while shutting down are expected.
func (h *stateHealth) close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
}
