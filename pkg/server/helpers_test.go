package server

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/session"
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

// testConfig is a server and its node in one flat struct, for the tests'
// mutate functions: the server's settings (Config), the session's
// (session.Config) and the hub's; Logger goes to both.
type testConfig struct {
	Config
	sessionConfig
	Hub    hub.Config
	Limits edge.Limits
	Logger *zap.Logger
}

type sessionConfig = session.Config

// newTestConfig is the tests' default: a loopback port, the demo tokens,
// recorded messages, two workers ticking every 50 ms.
func newTestConfig() testConfig {
	cfg := testConfig{Hub: hub.Config{Workers: 2, Tick: 50 * time.Millisecond}}
	cfg.Addr, cfg.Auth, cfg.RecordMessages = "127.0.0.1:0", demoTokens(), true
	return cfg
}

// newServer builds the node of cfg and its server, as cmd/kraken does; it
// starts nothing.
func newServer(cfg testConfig) (*Server, error) {
	sc, wc := cfg.sessionConfig, cfg.Config
	sc.Logger, wc.Logger = cfg.Logger, cfg.Logger
	n, err := node.New(node.Config{Hub: cfg.Hub, Session: sc, Limits: cfg.Limits})
	if err != nil {
		return nil, err
	}
	return New(n, wc)
}

// startServer starts the node of s, then s.
func startServer(s *Server) error {
	if err := s.node.Start(); err != nil {
		_ = s.node.Shutdown(context.Background())
		return err
	}
	if err := s.Start(); err != nil {
		_ = s.node.Shutdown(context.Background())
		return err
	}
	return nil
}

// start runs a server on a random loopback port and stops it when the test
// ends.
func start(t testing.TB, mutate func(*testConfig)) *Server {
	t.Helper()
	cfg := newTestConfig()
	if overTLS != nil {
		cfg.TLSAddr, cfg.TLS = "127.0.0.1:0", overTLS.server
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := newServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := startServer(s); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.node.Shutdown(ctx)
	})
	return s
}
