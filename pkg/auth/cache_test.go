package auth

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeBackend answers from a map and counts the calls it receives.
type fakeBackend struct {
	mu          sync.Mutex
	grants      map[string]*Grant
	err         error
	validates   int
	revalidates int
	callbacks   []func()
	// hook, when set, runs inside Validate before it answers.
	hook func()
}

func newFake(tokens ...string) *fakeBackend {
	f := &fakeBackend{grants: map[string]*Grant{}}
	for _, tok := range tokens {
		f.grants[tok] = &Grant{ActorTokenID: "actor-" + tok}
	}
	return f
}

func (f *fakeBackend) Validate(_ context.Context, token string) (*Grant, error) {
	f.mu.Lock()
	f.validates++
	hook := f.hook
	g, ok := f.grants[token]
	err := f.err
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrDenied
	}
	return g, nil
}

func (f *fakeBackend) Revalidate(_ context.Context, actor string) (*Grant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revalidates++
	for _, g := range f.grants {
		if g.ActorTokenID == actor {
			return g, nil
		}
	}
	return nil, ErrDenied
}

func (f *fakeBackend) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.validates
}

func (f *fakeBackend) set(token string, g *Grant) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if g == nil {
		delete(f.grants, token)
		return
	}
	f.grants[token] = g
}

// notifyingBackend adds Notifier to fakeBackend.
type notifyingBackend struct{ *fakeBackend }

func (n notifyingBackend) OnChange(f func()) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.callbacks = append(n.callbacks, f)
}

func (n notifyingBackend) change() {
	n.mu.Lock()
	cbs := append([]func(){}, n.callbacks...)
	n.mu.Unlock()
	for _, f := range cbs {
		f()
	}
}

// fakeClock is a manually advanced clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestCacheValidate(t *testing.T) {
	tests := []struct {
		name      string
		give      []string // tokens validated in order
		advance   time.Duration
		giveAgain string
		wantCalls int
		wantErr   error
	}{
		{name: "hit within ttl", give: []string{"a"}, advance: 29 * time.Second, giveAgain: "a", wantCalls: 1},
		{name: "miss after ttl", give: []string{"a"}, advance: 30 * time.Second, giveAgain: "a", wantCalls: 2},
		{name: "other token misses", give: []string{"a"}, giveAgain: "b", wantCalls: 2},
		{name: "failure not cached", give: []string{"nope"}, giveAgain: "nope", wantCalls: 2, wantErr: ErrDenied},
		{name: "prefix is a different key", give: []string{"a"}, giveAgain: "ab", wantCalls: 2, wantErr: ErrDenied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			be := newFake("a", "b")
			c := NewCache(be, 30*time.Second, 10, clk.now)
			for _, tok := range tt.give {
				_, _ = c.Validate(context.Background(), tok)
			}
			clk.advance(tt.advance)
			g, err := c.Validate(context.Background(), tt.giveAgain)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err == nil && g.ActorTokenID != "actor-"+tt.giveAgain {
				t.Fatalf("grant actor = %q", g.ActorTokenID)
			}
			if got := be.calls(); got != tt.wantCalls {
				t.Fatalf("backend calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestCacheServesStaleUntilTTL(t *testing.T) {
	clk := newClock()
	be := newFake("a")
	c := NewCache(be, 30*time.Second, 10, clk.now)
	if _, err := c.Validate(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	be.set("a", nil) // revoked in the backend, which has no Notifier
	if _, err := c.Validate(context.Background(), "a"); err != nil {
		t.Fatalf("cached token: err = %v, want nil (protocol.md §4.8)", err)
	}
	clk.advance(30 * time.Second)
	if _, err := c.Validate(context.Background(), "a"); !errors.Is(err, ErrDenied) {
		t.Fatalf("after ttl: err = %v, want ErrDenied", err)
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0 after the expired entry was evicted", c.Len())
	}
}

func TestCacheBackendErrorsPassThrough(t *testing.T) {
	be := newFake("a")
	be.err = ErrUnavailable
	c := NewCache(be, time.Minute, 10, nil)
	if _, err := c.Validate(context.Background(), "a"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0", c.Len())
	}
}

func TestCacheNilGrantIsDenied(t *testing.T) {
	be := newFake()
	be.grants["x"] = nil
	c := NewCache(be, time.Minute, 10, nil)
	if _, err := c.Validate(context.Background(), "x"); !errors.Is(err, ErrDenied) {
		t.Fatalf("Validate err = %v, want ErrDenied", err)
	}
}

func TestCacheRevalidateBypasses(t *testing.T) {
	be := newFake("a")
	c := NewCache(be, time.Minute, 10, nil)
	for range 3 {
		g, err := c.Revalidate(context.Background(), "actor-a")
		if err != nil || g.ActorTokenID != "actor-a" {
			t.Fatalf("Revalidate = %v, %v", g, err)
		}
	}
	if be.revalidates != 3 {
		t.Fatalf("backend revalidates = %d, want 3", be.revalidates)
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0: Revalidate must not fill the cache", c.Len())
	}
	if _, err := c.Revalidate(context.Background(), "ghost"); !errors.Is(err, ErrDenied) {
		t.Fatalf("err = %v, want ErrDenied", err)
	}
}

func TestCacheBound(t *testing.T) {
	tests := []struct {
		name    string
		steps   []string // token, or "+" to advance the clock 20 s
		max     int
		wantLen int
		wantIn  []string // served from the cache
		wantOut []string // must reach the backend again
	}{
		{name: "oldest dropped", max: 2, steps: []string{"a", "b", "c"}, wantLen: 2, wantIn: []string{"b", "c"}, wantOut: []string{"a"}},
		{name: "all expired evicted first", max: 3, steps: []string{"a", "b", "+", "c", "+", "d"}, wantLen: 2, wantIn: []string{"c", "d"}, wantOut: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			be := newFake("a", "b", "c", "d")
			c := NewCache(be, 30*time.Second, tt.max, clk.now)
			for _, s := range tt.steps {
				if s == "+" {
					clk.advance(20 * time.Second)
					continue
				}
				if _, err := c.Validate(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			if c.Len() != tt.wantLen {
				t.Fatalf("Len = %d, want %d", c.Len(), tt.wantLen)
			}
			for _, tok := range tt.wantIn {
				before := be.calls()
				_, _ = c.Validate(context.Background(), tok)
				if be.calls() != before {
					t.Errorf("%q reached the backend, want a cache hit", tok)
				}
			}
			for _, tok := range tt.wantOut {
				before := be.calls()
				_, _ = c.Validate(context.Background(), tok)
				if be.calls() == before {
					t.Errorf("%q was served from the cache, want a miss", tok)
				}
			}
		})
	}
}

func TestCacheDisabled(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		max  int
	}{
		{name: "zero ttl", ttl: 0, max: 10},
		{name: "zero entries", ttl: time.Minute, max: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := newFake("a")
			c := NewCache(be, tt.ttl, tt.max, nil)
			for range 3 {
				if _, err := c.Validate(context.Background(), "a"); err != nil {
					t.Fatal(err)
				}
			}
			if be.calls() != 3 || c.Len() != 0 {
				t.Fatalf("calls = %d, Len = %d, want 3 and 0", be.calls(), c.Len())
			}
		})
	}
}

func TestCacheFlush(t *testing.T) {
	be := newFake("a", "b")
	c := NewCache(be, time.Minute, 10, nil)
	_, _ = c.Validate(context.Background(), "a")
	_, _ = c.Validate(context.Background(), "b")
	c.Flush()
	if c.Len() != 0 {
		t.Fatalf("Len = %d after Flush", c.Len())
	}
	_, _ = c.Validate(context.Background(), "a")
	if be.calls() != 3 {
		t.Fatalf("calls = %d, want 3", be.calls())
	}
}

func TestCacheFlushDuringValidateIsNotStored(t *testing.T) {
	be := newFake("a")
	c := NewCache(be, time.Minute, 10, nil)
	be.hook = c.Flush // a reload lands while the backend is answering
	if _, err := c.Validate(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0: a result read before a flush must not be cached (D-1)", c.Len())
	}
}

func TestCacheFlushesOnBackendChange(t *testing.T) {
	be := notifyingBackend{newFake("a")}
	c := NewCache(be, time.Minute, 10, nil)
	var lenInCallback = -1
	c.OnChange(func() { lenInCallback = c.Len() })

	if _, err := c.Validate(context.Background(), "a"); err != nil {
		t.Fatal(err)
	}
	be.set("a", nil)
	be.change()
	if lenInCallback != 0 {
		t.Fatalf("Len seen by the OnChange callback = %d, want 0: the cache flushes first (D-1)", lenInCallback)
	}
	if _, err := c.Validate(context.Background(), "a"); !errors.Is(err, ErrDenied) {
		t.Fatalf("removed token: err = %v, want ErrDenied", err)
	}
}

func TestCacheOnChangeWithoutNotifier(t *testing.T) {
	c := NewCache(newFake(), time.Minute, 10, nil)
	c.OnChange(func() { t.Error("callback must never run") }) // must not panic
}

func TestCacheConcurrent(t *testing.T) {
	be := notifyingBackend{newFake("a", "b", "c")}
	c := NewCache(be, time.Minute, 2, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 200 {
				tok := []string{"a", "b", "c", "x"}[(i+j)%4]
				_, _ = c.Validate(context.Background(), tok)
				if j%50 == 0 {
					be.change()
				}
			}
		}()
	}
	wg.Wait()
	if c.Len() > 2 {
		t.Fatalf("Len = %d, above the bound 2", c.Len())
	}
}
