package httpauth

import "fmt"

// BreakerState returns the circuit breaker's state for metrics and
// readiness: "closed", "open" or "half-open" ("closed" when the breaker is
// disabled).
func (b *Backend) BreakerState() string { return b.breaker.current().String() }

// Ready returns ErrBreakerOpen (wrapped) while the
// circuit breaker fails calls fast: open within its cool-down, or a probe
// in flight. Every new connection then gets connection_failed, so a node
// in that state should take no new clients.
func (b *Backend) Ready() error {
	if b.breaker.rejecting() {
		return fmt.Errorf("%w: the auth service failed repeatedly; new connections get connection_failed", ErrBreakerOpen)
	}
	return nil
}
