package auth

import (
	"context"
	"errors"
	"testing"
	"time"
)

// instantFake is a fakeBackend that says it answers from memory.
type instantFake struct{ *fakeBackend }

func (instantFake) Instant() bool { return true }

// panicking is an instant backend whose Validate panics.
type panicking struct{ *fakeBackend }

func (panicking) Instant() bool { return true }

func (panicking) Validate(context.Context, string) (*Grant, error) { panic("boom") }

func TestIsInstant(t *testing.T) {
	for _, tt := range []struct {
		name    string
		backend Authenticator
		want    bool
	}{
		{"instant backend", instantFake{newFake()}, true},
		{"other backend", newFake(), false},
	} {
		if got := IsInstant(tt.backend); got != tt.want {
			t.Errorf("%s: instant = %v, want %v", tt.name, got, tt.want)
		}
		c := NewCache(tt.backend, time.Minute, 10, nil)
		if got := IsInstant(c); got != tt.want {
			t.Errorf("%s: cache instant = %v, want %v", tt.name, got, tt.want)
		}
		_ = c.Close()
	}
}

// A cache of an instant backend asks it on the caller's goroutine, stores
// a success, forgets it on Flush, and turns a panic into ErrUnavailable.
func TestCacheOfAnInstantBackend(t *testing.T) {
	f := newFake("a")
	c := NewCache(instantFake{f}, time.Minute, 10, nil)
	defer c.Close()
	ctx := context.Background()
	for range 3 {
		if g, err := c.Validate(ctx, "a"); err != nil || g.ActorTokenID != "actor-a" {
			t.Fatalf("Validate = %v, %v", g, err)
		}
	}
	if _, err := c.Validate(ctx, "b"); !errors.Is(err, ErrDenied) {
		t.Fatalf("unknown token: %v, want ErrDenied", err)
	}
	if n := f.calls(); n != 2 {
		t.Fatalf("%d backend calls, want 2 (one miss each)", n)
	}
	if n := c.Len(); n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
	c.Flush()
	if _, err := c.Validate(ctx, "a"); err != nil || f.calls() != 3 {
		t.Fatalf("after Flush: %v, %d calls, want a new call", err, f.calls())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Validate(cancelled, "b"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("miss with a cancelled context: %v, want ErrUnavailable", err)
	}

	p := NewCache(panicking{newFake()}, time.Minute, 10, nil)
	defer p.Close()
	if _, err := p.Validate(ctx, "a"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("panicking backend: %v, want ErrUnavailable", err)
	}
	_ = c.Close()
	if _, err := c.Validate(ctx, "z"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a miss after Close: %v, want ErrUnavailable", err)
	}
}
