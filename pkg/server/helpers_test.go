package server

import (
	"context"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// tokens is an in-memory Authenticator with the demo grants of
// examples/auth.json.
type tokens map[string]*auth.Grant

func (t tokens) Validate(_ context.Context, token string) (*auth.Grant, error) {
	if g, ok := t[token]; ok {
		return g, nil
	}
	return nil, auth.ErrDenied
}

func (t tokens) Revalidate(_ context.Context, actor string) (*auth.Grant, error) {
	for _, g := range t {
		if g.ActorTokenID == actor {
			return g, nil
		}
	}
	return nil, auth.ErrDenied
}

func demoGrant(actor string) *auth.Grant {
	return &auth.Grant{
		ActorTokenID: actor, ProjectID: "demo-project", OrganizationID: "demo-org", ActorType: "user",
		Rules: acl.Rules{{Pattern: "demo/general/#", Topic: "demo-general", Permission: acl.PermPubSub,
			RoomID: "room-general", RoomSlug: "general", AppID: "demo-app", AppName: "demo"}},
	}
}

func demoTokens() tokens {
	return tokens{"dev-token-alice": demoGrant("alice"), "dev-token-bob": demoGrant("bob")}
}

// start runs a server on a random loopback port and stops it when the test
// ends.
func start(t testing.TB, mutate func(*Config)) *Server {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0", Auth: demoTokens(), RecordMessages: true,
		Hub: hub.Config{Workers: 2, Tick: 50 * time.Millisecond}}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	return s
}
