package httpauth

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
)

const cooldown = 5 * time.Second

// switchable answers with whatever status is stored (200 = allow alice).
type switchable struct{ status atomic.Int64 }

func (sw *switchable) handle(w http.ResponseWriter, r *http.Request) {
	st := int(sw.status.Load())
	if st == http.StatusOK {
		reply(200, allowAlice)(w, r)
		return
	}
	reply(st, ``)(w, r)
}

func breakerSetup(t *testing.T, threshold int) (*Backend, *authServer, *switchable, *fakeClock) {
	t.Helper()
	sw := &switchable{}
	sw.status.Store(http.StatusServiceUnavailable)
	s := newAuthServer(t, plainHTTP, sw.handle)
	b := newBackend(t, s, Config{BreakerThreshold: threshold, BreakerCooldown: cooldown})
	return b, s, sw, withClock(b)
}

func TestBreakerOpensAndProbes(t *testing.T) {
	b, s, sw, clk := breakerSetup(t, 3)
	for i := range 3 {
		_, err := b.Validate(bg, "tok")
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != 503 {
			t.Fatalf("call %d: err = %v, want status 503", i, err)
		}
	}
	if st := b.breaker.current(); st != breakerOpen {
		t.Fatalf("after 3 failures the breaker is %v, want open", st)
	}

	// Open: every endpoint fails fast, no request reaches the server.
	sw.status.Store(http.StatusOK)
	for range 10 {
		_, err := b.Validate(bg, "tok")
		if !errors.Is(err, ErrBreakerOpen) || !errors.Is(err, auth.ErrUnavailable) || wireError(err) != "connection_failed" {
			t.Fatalf("open: err = %v, want ErrBreakerOpen (connection_failed)", err)
		}
		if _, err := b.Revalidate(bg, "alice"); !errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("open: Revalidate err = %v", err)
		}
		if _, err := b.CheckRoomAccess(bg, "alice", "p/"+time.Now().String()); !errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("open: CheckRoomAccess err = %v", err)
		}
	}
	clk.advance(cooldown - time.Millisecond)
	if _, err := b.Validate(bg, "tok"); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("just before the cool-down ends: err = %v", err)
	}
	if got := s.calls.Load(); got != 3 {
		t.Fatalf("server calls = %d while open, want 3", got)
	}

	// After the cool-down exactly one probe goes through; the others still
	// fail fast while it is in flight.
	clk.advance(time.Millisecond)
	release := make(chan struct{})
	s.setHandler(func(w http.ResponseWriter, r *http.Request) {
		<-release
		sw.handle(w, r)
	})
	probe := make(chan error, 1)
	go func() {
		_, err := b.Validate(bg, "tok")
		probe <- err
	}()
	eventually(t, "the probe to reach the server", func() bool { return s.inFlight.Load() == 1 })
	for range 5 {
		if _, err := b.Validate(bg, "tok"); !errors.Is(err, ErrBreakerOpen) {
			t.Fatalf("during the probe: err = %v, want ErrBreakerOpen", err)
		}
	}
	if got := s.calls.Load(); got != 4 {
		t.Fatalf("server calls = %d, want 4: one probe only", got)
	}
	close(release)
	if err := <-probe; err != nil {
		t.Fatalf("probe: %v", err)
	}
	if st := b.breaker.current(); st != breakerClosed {
		t.Fatalf("after a good probe the breaker is %v, want closed", st)
	}
	for range 3 {
		if _, err := b.Validate(bg, "tok"); err != nil {
			t.Fatalf("closed again: %v", err)
		}
	}
	if got := s.calls.Load(); got != 7 {
		t.Fatalf("server calls = %d, want 7", got)
	}
}

func TestBreakerFailedProbeReopens(t *testing.T) {
	b, s, _, clk := breakerSetup(t, 2)
	for range 2 {
		_, _ = b.Validate(bg, "tok")
	}
	clk.advance(cooldown)
	if _, err := b.Validate(bg, "tok"); err == nil || errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("probe: err = %v, want the server's 503", err)
	}
	if st := b.breaker.current(); st != breakerOpen {
		t.Fatalf("after a failed probe the breaker is %v, want open", st)
	}
	if _, err := b.Validate(bg, "tok"); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("err = %v, want ErrBreakerOpen for a new cool-down", err)
	}
	if got := s.calls.Load(); got != 3 {
		t.Fatalf("server calls = %d, want 3", got)
	}
}

func TestBreakerCounts(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int // answered in order
		wantOpen bool
	}{
		{name: "5xx in a row", statuses: []int{500, 502, 503}, wantOpen: true},
		{name: "4xx are answers", statuses: []int{401, 403, 404, 429, 400}},
		{name: "a success resets the count", statuses: []int{500, 500, 200, 500, 500}},
		{name: "a 4xx resets the count", statuses: []int{500, 500, 401, 500, 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _, sw, _ := breakerSetup(t, 3)
			for _, st := range tt.statuses {
				sw.status.Store(int64(st))
				if _, err := b.Validate(bg, "tok"); errors.Is(err, ErrBreakerOpen) {
					t.Fatal("opened too early")
				}
			}
			if got := b.breaker.current() == breakerOpen; got != tt.wantOpen {
				t.Fatalf("open = %v, want %v", got, tt.wantOpen)
			}
		})
	}
}

func TestBreakerTransportFailures(t *testing.T) {
	tests := []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{name: "closed port", cfg: func(t *testing.T) Config { return Config{BaseURL: closedPortURL(t)} }},
		{name: "timeout", cfg: func(t *testing.T) Config {
			s := newAuthServer(t, plainHTTP, hang)
			return Config{BaseURL: s.URL, Timeout: 50 * time.Millisecond}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg(t)
			cfg.BreakerThreshold = 2
			b := newBackend(t, nil, cfg)
			for range 2 {
				if _, err := b.Validate(bg, "tok"); !errors.Is(err, ErrConnectionFailed) || errors.Is(err, ErrBreakerOpen) {
					t.Fatalf("err = %v, want a connection failure", err)
				}
			}
			if _, err := b.Validate(bg, "tok"); !errors.Is(err, ErrBreakerOpen) {
				t.Fatalf("err = %v, want ErrBreakerOpen", err)
			}
		})
	}
}

func TestBreakerDisabled(t *testing.T) {
	b, s, _, _ := breakerSetup(t, -1)
	for range 20 {
		if _, err := b.Validate(bg, "tok"); errors.Is(err, ErrBreakerOpen) {
			t.Fatal("a disabled breaker opened")
		}
	}
	if s.calls.Load() != 20 {
		t.Fatalf("calls = %d, want 20", s.calls.Load())
	}
}

func TestBreakerNeutralProbe(t *testing.T) {
	b, s, _, clk := breakerSetup(t, 1)
	_, _ = b.Validate(bg, "tok")
	clk.advance(cooldown)
	s.setHandler(hang)
	ctx, cancel := context.WithCancel(bg)
	go func() {
		for s.inFlight.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if _, err := b.Validate(ctx, "tok"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", err)
	}
	// The probe's caller gave up: the next call may probe at once.
	s.setHandler(reply(200, allowAlice))
	if _, err := b.Validate(bg, "tok"); err != nil {
		t.Fatalf("next probe: %v", err)
	}
	if st := b.breaker.current(); st != breakerClosed {
		t.Fatalf("breaker = %v, want closed", st)
	}
}
