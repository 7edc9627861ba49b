package client_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/client"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
)

// tokenFile is a token file like examples/auth.json, with a rate limit high
// enough for the concurrency tests.
const tokenFile = `{"tokens": {
  "dev-token-alice": {"actorTokenId": "alice", "projectId": "demo-project", "organizationId": "demo-org",
    "actorType": "user", "rateLimit": 100000, "allowedTopics": [{"pattern": "demo/general/#", "topic": "demo-general",
    "permission": "pubSub", "room_id": "room-general", "room_slug": "general", "app_id": "demo-app", "app_name": "demo"}]},
  "dev-token-bob": {"actorTokenId": "bob", "projectId": "demo-project", "organizationId": "demo-org",
    "actorType": "user", "rateLimit": 100000, "allowedTopics": [{"pattern": "demo/general/#", "topic": "demo-general",
    "permission": "pubSub", "room_id": "room-general", "room_slug": "general", "app_id": "demo-app", "app_name": "demo"}],
    "allowedLobbies": [{"lobby_slug": "all-rooms", "lobby_id": "lobby-1", "rooms": ["general"]}]}
}}`

// broker is a kraken server running in-process on a loopback port.
type broker struct {
	t    testing.TB
	auth *static.Static
	srv  *server.Server
	addr string
	cfg  func(*session.Config) // changes the defaults of start; nil for none
}

// startBroker starts a broker on addr ("127.0.0.1:0" for a random port)
// and stops it when the test ends.
func startBroker(t testing.TB, addr string) *broker {
	t.Helper()
	return startBrokerWith(t, addr, nil)
}

// startBrokerWith is startBroker with cfg changing the server's Config.
func startBrokerWith(t testing.TB, addr string, cfg func(*session.Config)) *broker {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(tokenFile), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := static.New(static.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	b := &broker{t: t, auth: st, cfg: cfg}
	b.start(addr)
	t.Cleanup(func() { b.stop(); _ = st.Close() })
	return b
}

func (b *broker) start(addr string) {
	b.t.Helper()
	cfg := session.Config{Auth: b.auth, RecordMessages: true}
	if b.cfg != nil {
		b.cfg(&cfg)
	}
	n, err := node.New(node.Config{Session: cfg, Hub: hub.Config{Workers: 2}})
	if err != nil {
		b.t.Fatal(err)
	}
	srv, err := server.New(n, server.Config{Addr: addr})
	if err != nil {
		b.t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		b.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err = srv.Start(); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("start broker on %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond) // the port may still be held by the previous listener
	}
	b.srv, b.addr = srv, srv.Addr().String()
}

func (b *broker) stop() {
	if b.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = b.srv.Node().Shutdown(ctx)
	b.srv = nil
}

// restart stops the broker and starts a new one on the same address.
func (b *broker) restart() {
	b.stop()
	b.start(b.addr)
}

func (b *broker) url() string { return "ws://" + b.addr + "/ws" }

// dial connects a client to the broker and closes it when the test ends.
func (b *broker) dial(t testing.TB, token string, opts client.Options) *client.Client {
	t.Helper()
	opts.URL = b.url()
	c := client.New(token, opts)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", token, err)
	}
	return c
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// recv returns the next value from ch or fails after a timeout.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		var zero T
		t.Fatalf("timed out waiting for a %T", zero)
		return zero
	}
}

// nothing fails if ch yields a value within d.
func nothing[T any](t testing.TB, ch <-chan T, d time.Duration) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected %v", v)
	case <-time.After(d):
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}
