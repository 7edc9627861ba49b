package auth

import (
	"context"
	"crypto/sha256"
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
		t.Fatalf("cached token: err = %v, want nil (wire-reference.md §4.8)", err)
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

// gatedBackend blocks every Validate until release is closed (or its ctx is
// done) and records what it saw.
type gatedBackend struct {
	release chan struct{}
	started chan struct{} // one value per call, sent before blocking

	mu        sync.Mutex
	calls     int
	cancelled int // calls that ended because their ctx was done
	err       error
	panicWith any
}

func newGated() *gatedBackend {
	return &gatedBackend{release: make(chan struct{}), started: make(chan struct{}, 100)}
}

func (b *gatedBackend) Validate(ctx context.Context, token string) (*Grant, error) {
	b.mu.Lock()
	b.calls++
	err, p := b.err, b.panicWith
	b.mu.Unlock()
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		b.mu.Lock()
		b.cancelled++
		b.mu.Unlock()
		return nil, ctx.Err()
	}
	if p != nil {
		panic(p)
	}
	if err != nil {
		return nil, err
	}
	return &Grant{ActorTokenID: "actor-" + token}, nil
}

func (b *gatedBackend) Revalidate(context.Context, string) (*Grant, error) { return nil, ErrDenied }

func (b *gatedBackend) stats() (calls, cancelled int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls, b.cancelled
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// flightWaiters reports how many callers wait on token's flight (0 if none).
func (c *Cache) flightWaiters(token string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.flights[sha256.Sum256([]byte(token))]; ok {
		return f.waiters
	}
	return 0
}

type result struct {
	g   *Grant
	err error
}

func TestCacheMergesConcurrentMisses(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantErr   error
		wantLen   int
		wantCalls int // after a second round of validations
	}{
		{name: "success shared and cached", wantLen: 1, wantCalls: 1},
		{name: "failure shared and not cached", err: ErrDenied, wantErr: ErrDenied, wantLen: 0, wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			be := newGated()
			be.err = tt.err
			c := NewCache(be, time.Minute, 10, nil)
			const n = 50
			out := make(chan result, n)
			for range n {
				go func() {
					g, err := c.Validate(context.Background(), "a")
					out <- result{g, err}
				}()
			}
			eventually(t, "every caller waiting on one flight", func() bool { return c.flightWaiters("a") == n })
			close(be.release)
			var first *Grant
			for range n {
				r := <-out
				if !errors.Is(r.err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", r.err, tt.wantErr)
				}
				if first == nil {
					first = r.g
				}
				if r.g != first {
					t.Fatal("callers got different grants from one flight")
				}
			}
			if calls, _ := be.stats(); calls != 1 {
				t.Fatalf("backend calls = %d, want 1", calls)
			}
			if c.Len() != tt.wantLen {
				t.Fatalf("Len = %d, want %d", c.Len(), tt.wantLen)
			}
			_, _ = c.Validate(context.Background(), "a") // release is closed: answers at once
			if calls, _ := be.stats(); calls != tt.wantCalls {
				t.Fatalf("backend calls after a second Validate = %d, want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestCacheDifferentTokensDoNotMerge(t *testing.T) {
	be := newGated()
	c := NewCache(be, time.Minute, 10, nil)
	out := make(chan result, 3)
	for _, tok := range []string{"a", "b", "c"} {
		go func() {
			g, err := c.Validate(context.Background(), tok)
			out <- result{g, err}
		}()
	}
	for range 3 {
		<-be.started
	}
	close(be.release)
	for range 3 {
		if r := <-out; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if calls, _ := be.stats(); calls != 3 || c.Len() != 3 {
		t.Fatalf("calls = %d, Len = %d, want 3 and 3", calls, c.Len())
	}
}

func TestCacheWaiterHonoursOwnContext(t *testing.T) {
	be := newGated()
	c := NewCache(be, time.Minute, 10, nil)
	patient := make(chan result, 1)
	go func() {
		g, err := c.Validate(context.Background(), "a")
		patient <- result{g, err}
	}()
	<-be.started
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := c.Validate(ctx, "a")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("impatient caller: err = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	close(be.release)
	r := <-patient
	if r.err != nil || r.g.ActorTokenID != "actor-a" {
		t.Fatalf("patient caller = %v, %v; the flight must go on for it", r.g, r.err)
	}
	if calls, cancelled := be.stats(); calls != 1 || cancelled != 0 {
		t.Fatalf("calls = %d, cancelled = %d, want 1 and 0", calls, cancelled)
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1", c.Len())
	}
}

func TestCacheLastWaiterLeavingCancelsTheCall(t *testing.T) {
	be := newGated()
	c := NewCache(be, time.Minute, 10, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Validate(ctx, "a")
		done <- err
	}()
	<-be.started
	cancel()
	if err := <-done; !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnavailable and Canceled", err)
	}
	eventually(t, "the backend call to be cancelled", func() bool { _, n := be.stats(); return n == 1 })

	// The next caller starts a fresh flight instead of joining the dead one.
	close(be.release)
	g, err := c.Validate(context.Background(), "a")
	if err != nil || g.ActorTokenID != "actor-a" {
		t.Fatalf("after cancel: %v, %v", g, err)
	}
	if calls, _ := be.stats(); calls != 2 {
		t.Fatalf("calls = %d, want 2", calls)
	}
}

func TestCacheDoneContextMissesWithoutCall(t *testing.T) {
	be := newFake("a")
	c := NewCache(be, time.Minute, 10, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Validate(ctx, "a"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnavailable and Canceled", err)
	}
	if be.calls() != 0 {
		t.Fatalf("calls = %d, want 0", be.calls())
	}
	// A cache hit is still served with a done context.
	_, _ = c.Validate(context.Background(), "a")
	if _, err := c.Validate(ctx, "a"); err != nil {
		t.Fatalf("hit with a done ctx: %v", err)
	}
}

func TestCacheFlushDuringFlight(t *testing.T) {
	be := newGated()
	c := NewCache(be, time.Minute, 10, nil)
	first := make(chan result, 1)
	go func() {
		g, err := c.Validate(context.Background(), "a")
		first <- result{g, err}
	}()
	<-be.started
	c.Flush()
	// A caller after the flush must not join the pre-flush flight.
	second := make(chan result, 1)
	go func() {
		g, err := c.Validate(context.Background(), "a")
		second <- result{g, err}
	}()
	<-be.started
	close(be.release)
	for _, ch := range []chan result{first, second} {
		if r := <-ch; r.err != nil {
			t.Fatal(r.err)
		}
	}
	if calls, _ := be.stats(); calls != 2 {
		t.Fatalf("calls = %d, want 2: a Validate after Flush asks the backend again", calls)
	}
	if c.Len() != 1 {
		t.Fatalf("Len = %d, want 1: only the post-flush answer is stored", c.Len())
	}
}

func TestCacheBackendPanicIsAnError(t *testing.T) {
	be := newGated()
	be.panicWith = "boom"
	close(be.release)
	c := NewCache(be, time.Minute, 10, nil)
	if _, err := c.Validate(context.Background(), "a"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if c.Len() != 0 {
		t.Fatalf("Len = %d, want 0", c.Len())
	}
}

// Close cancels the call in flight, waits for its goroutine (TestMain's
// goleak check would see it otherwise), and later misses start no call.
func TestCacheCloseCancelsTheFlightAndWaits(t *testing.T) {
	be := newGated()
	c := NewCache(be, time.Minute, 10, nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Validate(context.Background(), "a")
		done <- err
	}()
	<-be.started
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, cancelled := be.stats(); cancelled != 1 {
		t.Fatalf("cancelled = %d when Close returned, want 1", cancelled)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter got %v, want the cancelled call's error", err)
	}
	if _, err := c.Validate(context.Background(), "b"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Validate after Close: %v, want ErrUnavailable", err)
	}
	if calls, _ := be.stats(); calls != 1 {
		t.Fatalf("calls = %d, want 1: no call after Close", calls)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
