package session

import (
	"context"
	"testing"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// probingAuth answers "tok" and notes, inside Validate, whether its context
// can end and how many calls the protocol holds.
type probingAuth struct {
	instant  bool
	p        *Protocol
	deadline bool // the context had a deadline
	done     bool // the context could be cancelled
	inFlight int
}

func (a *probingAuth) Instant() bool { return a.instant }

func (a *probingAuth) Validate(ctx context.Context, _ string) (*auth.Grant, error) {
	_, a.deadline = ctx.Deadline()
	a.done = ctx.Done() != nil
	a.inFlight = a.p.calls.inFlight()
	return &auth.Grant{ActorTokenID: "bob", ProjectID: "p",
		Rules: acl.Rules{{Pattern: "demo/#", Topic: "demo", Permission: acl.PermPubSub, AppID: "app"}}}, nil
}

func (*probingAuth) Revalidate(context.Context, string) (*auth.Grant, error) {
	return nil, auth.ErrDenied
}

// An auth backend that answers from memory (auth.Instant) is called with
// no deadline, nothing to cancel and no entry in the calls registry;
// another one gets the auth timeout and a registered, cancellable call.
func TestInstantBackendGetsNoCallContext(t *testing.T) {
	for _, instant := range []bool{true, false} {
		a := &probingAuth{instant: instant}
		p := newProtocolWith(t, Config{Auth: a})
		a.p = p
		tc := p.connect(t)
		p.Handle(&tc.State, tc, &wire.Command{Type: "auth", HasToken: true, TokenIsString: true, Token: "tok"})
		tc.expect(t, "authOK")
		if want := !instant; a.deadline != want || a.done != want || (a.inFlight == 1) != want {
			t.Errorf("instant %v: deadline %v, cancellable %v, %d calls held; want %v, %v, %d",
				instant, a.deadline, a.done, a.inFlight, want, want, map[bool]int{true: 1}[want])
		}
		if n := p.calls.inFlight(); n != 0 {
			t.Errorf("instant %v: %d calls held after the auth", instant, n)
		}
	}
}
