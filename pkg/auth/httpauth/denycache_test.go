package httpauth

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
)

const allowRules = `{"allow":true,"allowed_topics":[{"pattern":"a/#","permission":"subscribe","app_id":"A"}]}`

// TestRoomAccessNegativeCache: a failed check is answered from memory for
// 5 s per (actor, pattern), then asked again (wire-reference.md §4.10).
func TestRoomAccessNegativeCache(t *testing.T) {
	type step struct {
		advance        time.Duration
		actor, pattern string
		wantCall       bool
	}
	tests := []struct {
		name    string
		handle  func(http.ResponseWriter, *http.Request)
		wantErr error
		steps   []step
	}{
		{name: "deny cached", handle: reply(200, `{"allow":false}`), wantErr: auth.ErrDenied, steps: []step{
			{actor: "a", pattern: "p", wantCall: true},
			{actor: "a", pattern: "p"},
			{advance: 4999 * time.Millisecond, actor: "a", pattern: "p"},
			{actor: "a", pattern: "q", wantCall: true},
			{actor: "b", pattern: "p", wantCall: true},
			{advance: time.Millisecond, actor: "a", pattern: "p", wantCall: true},
			{actor: "a", pattern: "p"},
		}},
		{name: "failure cached", handle: reply(500, ``), wantErr: auth.ErrUnavailable, steps: []step{
			{actor: "a", pattern: "p", wantCall: true},
			{actor: "a", pattern: "p"},
			{advance: 5 * time.Second, actor: "a", pattern: "p", wantCall: true},
		}},
		{name: "success not cached", handle: reply(200, allowRules), steps: []step{
			{actor: "a", pattern: "p", wantCall: true},
			{actor: "a", pattern: "p", wantCall: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAuthServer(t, plainHTTP, tt.handle)
			b := newBackend(t, s, Config{BreakerThreshold: -1})
			clk := withClock(b)
			for i, st := range tt.steps {
				clk.advance(st.advance)
				before := s.calls.Load()
				_, err := b.CheckRoomAccess(bg, st.actor, st.pattern)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("step %d: err = %v, want %v", i, err, tt.wantErr)
				}
				if called := s.calls.Load() != before; called != st.wantCall {
					t.Fatalf("step %d (%s, %s): backend called = %v, want %v", i, st.actor, st.pattern, called, st.wantCall)
				}
			}
		})
	}
}

func TestRoomAccessCallerCancelNotCached(t *testing.T) {
	s := newAuthServer(t, plainHTTP, hang)
	b := newBackend(t, s, Config{})
	ctx, cancel := context.WithTimeout(bg, 20*time.Millisecond)
	defer cancel()
	if _, err := b.CheckRoomAccess(ctx, "a", "p"); !errors.Is(err, auth.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if n := b.denies.len(); n != 0 {
		t.Fatalf("negative cache holds %d entries after the caller's own deadline, want 0", n)
	}
}

func TestRoomAccessNegativeCacheDisabled(t *testing.T) {
	s := newAuthServer(t, plainHTTP, reply(200, `{"allow":false}`))
	b := newBackend(t, s, Config{RoomDenyTTL: -1})
	for range 3 {
		_, _ = b.CheckRoomAccess(bg, "a", "p")
	}
	if s.calls.Load() != 3 {
		t.Fatalf("calls = %d, want 3", s.calls.Load())
	}
}

func TestDenyCacheBound(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	c := newDenyCache(5*time.Second, 3, clk.now)
	for _, p := range []string{"1", "2", "3", "4"} {
		c.put("a", p, auth.ErrDenied)
		clk.advance(time.Second)
	}
	if c.len() != 3 || c.get("a", "1") != nil || c.get("a", "4") == nil {
		t.Fatalf("len %d; the oldest entry must go first", c.len())
	}
	clk.advance(2 * time.Second) // now 6 s: "2" (put at 1 s) expired, "3" and "4" not
	c.put("a", "5", auth.ErrDenied)
	if c.len() != 3 || c.get("a", "2") != nil || c.get("a", "3") == nil {
		t.Fatalf("len %d; expired entries go before live ones", c.len())
	}
	c.put("a", "3", auth.ErrUnavailable) // refresh replaces
	if c.len() != 3 || !errors.Is(c.get("a", "3"), auth.ErrUnavailable) {
		t.Fatalf("refresh: len %d", c.len())
	}
}
