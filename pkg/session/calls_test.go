package session

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// holdingAuth answers the token "tok" at once and holds every other
// Validate, and every Revalidate, until its context is done, telling
// entered when one starts and ended when its context ended.
type holdingAuth struct {
	entered chan string
	ended   chan time.Time
}

func newHoldingAuth() *holdingAuth {
	return &holdingAuth{entered: make(chan string, 8), ended: make(chan time.Time, 8)}
}

func (h *holdingAuth) Validate(ctx context.Context, token string) (*auth.Grant, error) {
	if token == "tok" {
		return &auth.Grant{ActorTokenID: "bob", ProjectID: "p",
			Rules: acl.Rules{{Pattern: "demo/#", Topic: "demo", Permission: acl.PermPubSub, AppID: "app"}}}, nil
	}
	return nil, h.hold(ctx, "validate")
}

func (h *holdingAuth) Revalidate(ctx context.Context, _ string) (*auth.Grant, error) {
	return nil, h.hold(ctx, "revalidate")
}

func (h *holdingAuth) hold(ctx context.Context, what string) error {
	h.entered <- what
	<-ctx.Done()
	h.ended <- time.Now()
	return fmt.Errorf("%w: %w", auth.ErrUnavailable, ctx.Err())
}

// waitEntered waits for a held call of kind what.
func (h *holdingAuth) waitEntered(t *testing.T, what string) {
	t.Helper()
	select {
	case got := <-h.entered:
		if got != what {
			t.Fatalf("held %s, want %s", got, what)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no %s reached the backend", what)
	}
}

// waitEnded waits for the held call to end, within bound of since.
func (h *holdingAuth) waitEnded(t *testing.T, since time.Time, bound time.Duration) {
	t.Helper()
	select {
	case at := <-h.ended:
		if d := at.Sub(since); d > bound {
			t.Fatalf("the call ended %v after, want within %v", d, bound)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held call was not cancelled")
	}
}

// authAsync runs the auth of token on a goroutine, as the connection's
// reader would, and returns a channel closed when Handle returns.
func (p *Protocol) authAsync(tc *testConn, token string) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Handle(&tc.State, tc, &wire.Command{Type: "auth", HasToken: true, TokenIsString: true, Token: token})
	}()
	return done
}

// heldAuth starts a Protocol of cfg whose Auth is a holdingAuth and a
// connection whose auth that backend holds; done is closed when the
// reader's Handle returns.
func heldAuth(t *testing.T, cfg Config) (p *Protocol, tc *testConn, be *holdingAuth, done <-chan struct{}) {
	t.Helper()
	be = newHoldingAuth()
	cfg.Auth = be
	p = newProtocolWith(t, cfg)
	tc = p.connect(t)
	done = p.authAsync(tc, "held")
	be.waitEntered(t, "validate")
	return p, tc, be, done
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return", what)
	}
}

// A peer hanging up during its auth cancels the call: the reader answers
// nothing, the auth is not counted as refused, and once the call has ended
// nothing is held for it in calls (the mark is the connection's own).
func TestHangupCancelsTheAuthInFlight(t *testing.T) {
	p, tc, be, done := heldAuth(t, Config{})
	at := time.Now()
	p.Hangup(tc.Conn)
	be.waitEnded(t, at, time.Second)
	waitClosed(t, done, "the auth")
	tc.expectNothing(t)
	if s := p.Stats(); s.Auth[AuthUnavailable] != 0 || s.Auth[AuthError] != 0 {
		t.Fatalf("auth counts = %v, want no refusal counted", s.Auth)
	}
	if n := p.calls.inFlight(); n != 0 || !tc.Conn.HungUp() {
		t.Fatalf("%d entries held, hung up %v; want none, the mark on the connection", n, tc.Conn.HungUp())
	}
}

// An auth the reader starts after its peer hung up (it was buffered before
// the hang-up) is cancelled at once.
func TestAuthAfterHangupIsCancelledAtOnce(t *testing.T) {
	be := newHoldingAuth()
	p := newProtocolWith(t, Config{Auth: be})
	tc := p.connect(t)
	p.Hangup(tc.Conn)
	at := time.Now()
	waitClosed(t, p.authAsync(tc, "held"), "the auth")
	be.waitEnded(t, at, time.Second)
	tc.expectNothing(t)
}

// A close the hub decides (here the reader's own, as for too many errors)
// cancels the auth in flight; one started on a closing connection is
// cancelled at once.
func TestHubCloseCancelsTheAuthInFlight(t *testing.T) {
	p, tc, be, done := heldAuth(t, Config{})
	at := time.Now()
	p.Hub().CloseNow(tc.Conn, disconnect.New(disconnect.AuthTimeout))
	be.waitEnded(t, at, time.Second)
	waitClosed(t, done, "the auth")

	at = time.Now()
	waitClosed(t, p.authAsync(tc, "held again"), "the second auth")
	be.waitEnded(t, at, time.Second)
	tc.expect(t, "close auth_timeout")
	if n := p.calls.inFlight(); n != 0 {
		t.Fatalf("%d entries held after the calls ended, want 0", n)
	}
}

// An authenticated, idle connection holds nothing in calls: no context
// exists for it between backend calls.
func TestIdleConnectionHoldsNoCall(t *testing.T) {
	p := newProtocol(t)
	for range 3 {
		p.authed(t)
	}
	if n := p.calls.inFlight(); n != 0 {
		t.Fatalf("%d entries held for idle connections, want 0", n)
	}
}

// Shutdown cancels a revalidation in flight, and returns once the
// revalidation goroutines have (the hub waits for them).
func TestShutdownCancelsTheRevalidationInFlight(t *testing.T) {
	be := newHoldingAuth()
	p, err := started(Config{Auth: be}, hub.Config{Workers: 2, Tick: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	tc := p.authed(t)
	p.Hub().RevalidateAll()
	be.waitEntered(t, "revalidate")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	at := time.Now()
	if err := shutdown(ctx, p); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	be.waitEnded(t, at, time.Second)
	p.Hub().Closed(tc.Conn)
}

// The node's base context (Config.Context) is the parent of the calls:
// cancelling it cancels the auth in flight.
func TestBaseContextCancelsTheAuthInFlight(t *testing.T) {
	base, cancelBase := context.WithCancel(context.Background())
	defer cancelBase()
	_, tc, be, done := heldAuth(t, Config{Context: base})
	at := time.Now()
	cancelBase()
	be.waitEnded(t, at, time.Second)
	waitClosed(t, done, "the auth")
	tc.expectNothing(t)
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expectNothing checks that nothing was written to the connection.
func (t *testConn) expectNothing(tb testing.TB) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.out.Len() != 0 {
		tb.Fatalf("transcript = %q, want nothing answered", t.out.String())
	}
}

// The maps of a storm (many auths waiting at once) are dropped once it has
// passed, so a node does not keep its buckets; a shard that never held
// more than callShardKeep keeps its map.
func TestCallsForgetTheStorm(t *testing.T) {
	var k calls
	k.init(context.Background())
	conns := make([]*hub.Conn, 40*callShards)
	type started struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	calls := make([]started, len(conns))
	for i := range conns {
		conns[i] = &hub.Conn{ID: uint64(i)}
		calls[i].ctx, calls[i].cancel = k.start(conns[i], time.Minute)
	}
	if n := k.inFlight(); n != len(conns) {
		t.Fatalf("%d in flight, want %d", n, len(conns))
	}
	for i, c := range conns {
		if gone := k.end(c, calls[i].ctx, calls[i].cancel); gone {
			t.Fatalf("call %d reported gone", i)
		}
	}
	for i := range k.shards {
		if k.shards[i].m != nil {
			t.Fatalf("shard %d keeps a map of the storm", i)
		}
	}
	ctx, cancel := k.start(conns[0], time.Minute)
	k.end(conns[0], ctx, cancel)
	if k.shards[0].m == nil {
		t.Fatal("a shard that held one call dropped its map")
	}
}
