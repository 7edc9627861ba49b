package main

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// The quickstart exchange of docs/backends.md, end to end: this service
// behind AUTH_BACKEND=http, bob subscribing and alice publishing with the
// official SDKs' frames, and the hydration webhook the service advertises.
func TestQuickstartAgainstTheExampleService(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	s := &service{secret: "dev-backend-secret", tokens: map[string]*actor{
		"dev-token-alice": {ID: "alice"}, "dev-token-bob": {ID: "bob"},
	}}
	ts.Config.Handler = s.routes("/v1/kraken")
	ts.Start()
	t.Cleanup(ts.Close)
	s.publicURL = ts.URL + "/v1/kraken"

	hb, err := httpauth.New(httpauth.Config{BaseURL: ts.URL + "/v1/kraken", Secret: "dev-backend-secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hb.Close() })
	d := webhook.New(webhook.Config{})
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	n, err := node.New(node.Config{Hub: hub.Config{Workers: 2}, Session: session.Config{
		Auth: auth.NewCache(hb, 30*time.Second, 100, nil), RecordMessages: true, Webhooks: d}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(n, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Shutdown(context.Background()) })
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().String()

	bob := testpeer.Dial(t, addr)
	bob.Send("type", "auth", "token", "dev-token-bob")
	bob.ExpectFields("type", "auth", "success", true, "actorTokenId", "bob", "projectId", "demo-project")
	bob.Send("type", "subscribe", "topic", "demo/general/messages", "qos", 1)
	bob.ExpectFields("type", "subscribed", "topic", "demo/general/messages")

	alice := testpeer.Dial(t, addr)
	alice.Send("type", "auth", "token", "dev-token-alice")
	alice.ExpectFields("type", "auth", "success", true, "actorTokenId", "alice")
	alice.Send("type", "publish", "topic", "demo/general/messages", "data", map[string]any{"text": "hello from alice"}, "qos", 1, "echo", true)
	bob.ExpectFields("type", "message", "topic", "demo/general/messages",
		"data", map[string]any{"text": "hello from alice"}, "from", "alice")

	bob.Send("type", "subscribe", "topic", "demo/general/history")
	bob.ExpectFields("type", "subscribed", "topic", "demo/general/history")
	bob.ExpectFields("type", "hydration", "topic", "history", "data",
		map[string]any{"welcome": "hello bob", "room": "general", "topic": "history"})

	stranger := testpeer.Dial(t, addr)
	stranger.Send("type", "auth", "token", "not-a-token")
	stranger.ExpectFields("type", "auth", "success", false, "error", "access_denied")
}
