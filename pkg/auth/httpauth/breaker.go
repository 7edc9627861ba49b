package httpauth

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// breakerState is the state of the circuit breaker.
type breakerState uint8

const (
	breakerClosed   breakerState = iota + 1 // requests flow; failures are counted
	breakerOpen                             // requests fail fast until openUntil
	breakerHalfOpen                         // one probe is in flight; others fail fast
)

// String returns "closed", "open" or "half-open"; it is meant for logs.
func (s breakerState) String() string {
	switch s {
	case breakerClosed:
		return "closed"
	case breakerOpen:
		return "open"
	case breakerHalfOpen:
		return "half-open"
	}
	return "unknown"
}

// outcome is what one request tells the breaker.
type outcome uint8

const (
	// outcomeSuccess is any HTTP answer below 500.
	outcomeSuccess outcome = iota + 1
	// outcomeFailure is a transport error, a timeout or a status >= 500.
	outcomeFailure
	// outcomeNeutral says nothing about the backend: the caller gave up.
	outcomeNeutral
)

// breaker opens after threshold consecutive failures, fails every call for
// cooldown, then lets exactly one probe through: its success closes the
// breaker, its failure opens it for another cooldown. A threshold below 1
// disables it. It is safe for concurrent use.
type breaker struct {
	threshold int
	cooldown  time.Duration
	now       func() time.Time
	log       *zap.Logger

	mu        sync.Mutex
	state     breakerState
	failures  int       // consecutive failures while closed
	openUntil time.Time // while open
}

func newBreaker(threshold int, cooldown time.Duration, now func() time.Time, log *zap.Logger) *breaker {
	return &breaker{threshold: threshold, cooldown: cooldown, now: now, log: log, state: breakerClosed}
}

// rejecting reports whether a call made now would be refused; it does not
// claim the probe. It lets callers fail fast before waiting for a slot.
func (b *breaker) rejecting() bool {
	if b.threshold < 1 {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerOpen:
		return b.now().Before(b.openUntil)
	case breakerHalfOpen:
		return true
	}
	return false
}

// allow admits a call, or refuses it while the breaker is open or a probe is
// in flight. probe reports that this call is the one probe after a
// cool-down; its outcome decides the state.
func (b *breaker) allow() (ok, probe bool) {
	if b.threshold < 1 {
		return true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		return true, false
	case breakerOpen:
		if b.now().Before(b.openUntil) {
			return false, false
		}
		b.state = breakerHalfOpen
		return true, true
	}
	return false, false
}

// done records the outcome of a call admitted by allow. While the breaker is
// open or half-open, only the probe's outcome counts.
func (b *breaker) done(probe bool, o outcome) {
	if b.threshold < 1 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if probe {
		switch o {
		case outcomeSuccess:
			b.state, b.failures = breakerClosed, 0
			b.log.Info("auth backend answered the probe: circuit breaker closed")
		case outcomeFailure:
			b.openLocked()
		default: // the probe told nothing: let the next call probe at once
			b.state, b.openUntil = breakerOpen, b.now()
		}
		return
	}
	if b.state != breakerClosed {
		return
	}
	switch o {
	case outcomeSuccess:
		b.failures = 0
	case outcomeFailure:
		b.failures++
		if b.failures >= b.threshold {
			b.openLocked()
		}
	}
}

func (b *breaker) openLocked() {
	b.state, b.failures = breakerOpen, 0
	b.openUntil = b.now().Add(b.cooldown)
	b.log.Warn("auth backend failing: circuit breaker open, calls fail fast with connection_failed",
		zap.Duration("cooldown", b.cooldown))
}

// current returns the state, for tests.
func (b *breaker) current() breakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state
}
