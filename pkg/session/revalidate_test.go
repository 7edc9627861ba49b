package session

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// roomBackend is an auth backend with the subscribe cache-miss fallback
// (auth.RoomAccessChecker) whose answers change under the connections:
// "tok" validates to a wide grant (demo/# and wide/#); Revalidate answers a
// copy of narrow, a new object each time as a remote backend's answer is,
// or auth.ErrUnavailable while narrow is nil; CheckRoomAccess allows every
// room/… pattern with a rule of its own, after calling inCheck when it is
// set (before the first connection).
type roomBackend struct {
	narrow  atomic.Pointer[auth.Grant]
	inCheck func()
}

func (b *roomBackend) Validate(_ context.Context, token string) (*auth.Grant, error) {
	if token != "tok" {
		return nil, auth.ErrDenied
	}
	return &auth.Grant{ActorTokenID: "bob", ProjectID: "p", Rules: acl.Rules{pubSub("demo/#"), pubSub("wide/#")}}, nil
}

func (b *roomBackend) Revalidate(context.Context, string) (*auth.Grant, error) {
	n := b.narrow.Load()
	if n == nil {
		return nil, auth.ErrUnavailable
	}
	g := *n
	return &g, nil
}

func (b *roomBackend) CheckRoomAccess(_ context.Context, _, pattern string) (acl.Rules, error) {
	if b.inCheck != nil {
		b.inCheck()
	}
	if !strings.HasPrefix(pattern, "room/") {
		return nil, auth.ErrDenied
	}
	return acl.Rules{pubSub(pattern)}, nil
}

func pubSub(pattern string) acl.Rule {
	return acl.Rule{Pattern: pattern, Topic: strings.TrimSuffix(pattern, "/#"), Permission: acl.PermPubSub, AppID: "app"}
}

// narrowGrant is a revalidation's answer: demo/# and marker, wide/# gone.
func narrowGrant(marker string) *auth.Grant {
	return &auth.Grant{ActorTokenID: "bob", ProjectID: "p", Rules: acl.Rules{pubSub("demo/#"), pubSub(marker)}}
}

func subscribeTo(pattern string) *wire.Command {
	return &wire.Command{Type: "subscribe", HasTopic: true, Topic: pattern}
}

// settle returns once c's worker has run what was posted to it before
// (revalidations' session changes included).
func settle(p *Protocol, c *hub.Conn) {
	done := make(chan struct{})
	p.Hub().Run(c, func(*hub.Conn) { close(done) })
	<-done
}

// patternsOf lists the patterns of c's grant, in order.
func patternsOf(c *hub.Conn) []string {
	var ps []string
	for _, r := range grantOf(c.Session()).Rules {
		ps = append(ps, r.Pattern)
	}
	return ps
}

// TestSessionRaceOnRevalidateAndWiden narrows the grant of a few
// connections with revalidations, round after round, while their readers
// widen it with subscribes outside it (the §4.10 fallback), and checks once
// each round has settled that every session holds the round's narrowed
// grant, under at most widenings asked in that round: no widening asked
// against an older grant put that grant's rules back.
func TestSessionRaceOnRevalidateAndWiden(t *testing.T) {
	be := &roomBackend{inCheck: runtime.Gosched}
	p := newProtocolWith(t, Config{Auth: be, ErrorFloodLimit: 1 << 30})
	const nconns, rounds, subs = 8, 25, 16
	tcs := make([]*testConn, nconns)
	conns := make([]*hub.Conn, nconns)
	for i := range tcs {
		tcs[i] = p.authed(t)
		conns[i] = tcs[i].Conn
	}
	for r := range rounds {
		narrow := narrowGrant(fmt.Sprintf("gen%d/#", r))
		be.narrow.Store(narrow)
		var wg sync.WaitGroup
		var subscribed atomic.Int32
		for i, tc := range tcs {
			wg.Go(func() {
				for k := range subs {
					p.Handle(&tc.State, tc, subscribeTo(fmt.Sprintf("room/%d-%d-%d", i, r, k)))
					subscribed.Add(1)
				}
			})
		}
		for range 2 {
			// Narrow until half the subscribes are in: the other half
			// widen after the round's last revalidation, the first of
			// them while it is applied.
			wg.Go(func() {
				for {
					p.revalidate(conns)
					if subscribed.Load() >= nconns*subs/2 {
						return
					}
					runtime.Gosched()
				}
			})
		}
		wg.Wait()
		for _, c := range conns {
			settle(p, c)
		}
		var want []string
		for _, rule := range narrow.Rules {
			want = append(want, rule.Pattern)
		}
		for i, c := range conns {
			got := patternsOf(c)
			n := 0
			for n < len(got) && strings.HasPrefix(got[n], fmt.Sprintf("room/%d-%d-", i, r)) {
				n++
			}
			if !slices.Equal(got[n:], want) {
				t.Fatalf("round %d, connection %d: grant %v, want this round's rooms over %v", r, i, got, want)
			}
		}
	}
}

// TestRevalidationDuringRoomCheck applies a revalidation while a
// subscribe's room-access check is in flight. A new grant drops the
// widening (neither the old grant nor the new one gets the room) and the
// subscribe is judged by the new grant; a failed revalidation, which
// keeps the grant, keeps the widening too.
func TestRevalidationDuringRoomCheck(t *testing.T) {
	for _, tt := range []struct {
		name   string
		narrow *auth.Grant
		reply  string
		want   []string
	}{
		{"narrowed", narrowGrant("gen/#"), "error not_authorized", []string{"demo/#", "gen/#"}},
		{"failed", nil, "subscribed", []string{"room/a", "demo/#", "wide/#"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			be := &roomBackend{inCheck: func() { entered <- struct{}{}; <-release }}
			p := newProtocolWith(t, Config{Auth: be})
			tc := p.authed(t)
			before := tc.Conn.Session().ValidatedAt
			be.narrow.Store(tt.narrow)
			done := make(chan struct{})
			go func() {
				defer close(done)
				p.Handle(&tc.State, tc, subscribeTo("room/a"))
			}()
			<-entered
			p.revalidate([]*hub.Conn{tc.Conn})
			settle(p, tc.Conn)
			close(release)
			<-done
			tc.expect(t, tt.reply)
			if got := patternsOf(tc.Conn); !slices.Equal(got, tt.want) {
				t.Fatalf("grant %v, want %v", got, tt.want)
			}
			if tc.Conn.Session().ValidatedAt == before {
				t.Fatal("ValidatedAt did not move")
			}
		})
	}
}

// TestFailedRevalidationKeepsWidening widens the grant while a failed
// revalidation waits for the connection's worker to reschedule it: the
// reschedule is built from the widened session, so the room stays.
func TestFailedRevalidationKeepsWidening(t *testing.T) {
	p := newProtocolWith(t, Config{Auth: &roomBackend{}}) // narrow nil: revalidations fail
	tc := p.authed(t)
	c := tc.Conn
	before := c.Session().ValidatedAt
	hold := make(chan struct{})
	// The worker waits (a test may block it): what follows queues behind.
	p.Hub().Run(c, func(*hub.Conn) { <-hold })
	p.revalidate([]*hub.Conn{c})
	p.Handle(&tc.State, tc, subscribeTo("room/a")) // widens on the reader now
	close(hold)
	settle(p, c)
	tc.expect(t, "subscribed")
	if got, want := patternsOf(c), []string{"room/a", "demo/#", "wide/#"}; !slices.Equal(got, want) {
		t.Fatalf("grant %v, want %v", got, want)
	}
	if c.Session().ValidatedAt == before {
		t.Fatal("the failed revalidation was not rescheduled")
	}
}
