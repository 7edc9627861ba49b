package httpauth

import (
	"errors"
	"net/http"
	"testing"
)

// TestReadyFollowsTheBreaker: Ready and BreakerState report the breaker:
// ready while closed, ErrBreakerOpen while it fails calls fast, ready again
// once a probe succeeds.
func TestReadyFollowsTheBreaker(t *testing.T) {
	b, _, sw, clk := breakerSetup(t, 2)
	if err := b.Ready(); err != nil || b.BreakerState() != "closed" {
		t.Fatalf("fresh: Ready = %v, state %s", err, b.BreakerState())
	}
	for range 2 {
		_, _ = b.Validate(bg, "tok")
	}
	if err := b.Ready(); !errors.Is(err, ErrBreakerOpen) || b.BreakerState() != "open" {
		t.Fatalf("after 2 failures: Ready = %v, state %s; want ErrBreakerOpen, open", err, b.BreakerState())
	}
	sw.status.Store(http.StatusOK)
	clk.advance(cooldown)
	if _, err := b.Validate(bg, "tok"); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if err := b.Ready(); err != nil || b.BreakerState() != "closed" {
		t.Fatalf("after the probe: Ready = %v, state %s", err, b.BreakerState())
	}
}
