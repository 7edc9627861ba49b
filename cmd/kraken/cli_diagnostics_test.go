package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// What the client commands say when the broker, or the server at --url,
// ends the conversation: the close code and reason, the HTTP answer to a
// wrong path, a TLS mismatch between the URL and the server.

// TestCLIPubTooLargeSaysTheCloseCode: a 2 MB publish is over the broker's
// frame limit; the broker closes with 1009 and pub prints that close.
func TestCLIPubTooLargeSaysTheCloseCode(t *testing.T) {
	e := newCLIEnv(t)
	data := `{"text":"` + strings.Repeat("x", 2<<20) + `"}`
	for range 3 { // the close frame is read whichever of write and read fails first
		code, _, errs := e.runWithInput(strings.NewReader(data), nil,
			"pub", "--token", "dev-token-alice", "demo/general/messages", "-")
		want := `kraken pub: publish to "demo/general/messages" failed: broker closed the connection: 1009 frame too large`
		if code != exitFail || !strings.HasPrefix(errs, want) {
			t.Fatalf("exit %d, stderr %q, want %q", code, errs, want)
		}
	}
}

// TestCLISubSaysWhyTheBrokerClosed: a broker shutting down closes with
// 1012; sub says so before it reconnects.
func TestCLISubSaysWhyTheBrokerClosed(t *testing.T) {
	e := newCLIEnv(t)
	s := e.startSub("dev-token-bob", "demo/general/messages")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.node.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if l := e.next(s.errs); l != "kraken sub: connection lost: broker closed the connection: 1012 server shutting down" {
		t.Fatalf("stderr: %q", l)
	}
}

// TestCLIWrongPathShowsTheBrokersAnswer: --url without /ws gets the
// broker's 404 and its reason, printed with the URL.
func TestCLIWrongPathShowsTheBrokersAnswer(t *testing.T) {
	e := newCLIEnv(t)
	url := "ws://" + e.srv.Addr().String() + "/"
	for _, cmd := range []string{"pub", "sub"} {
		args := []string{cmd, "--url", url, "--token", "dev-token-alice", "demo/general/messages"}
		if cmd == "pub" {
			args = append(args, "1")
		}
		code, _, errs := e.run(nil, args...)
		want := "kraken " + cmd + ": HTTP 404 from " + url + ": not found: the WebSocket endpoint is /ws\n"
		if code != exitFail || errs != want {
			t.Errorf("%s: exit %d, stderr %q, want %q", cmd, code, errs, want)
		}
	}
}

// TestCLITLSMismatch: wss:// against the broker's plain port says to use
// ws://, at once; ws:// against a TLS server says to use wss://.
func TestCLITLSMismatch(t *testing.T) {
	e := newCLIEnv(t)
	addr := e.srv.Addr().String()
	began := time.Now()
	code, _, errs := e.run(nil, "pub", "--url", "wss://"+addr+"/ws", "--token", "dev-token-alice", "demo/general/messages", "1")
	want := "kraken pub: cannot connect to wss://" + addr + "/ws: the server at " + addr + " does not speak TLS; use ws://\n"
	if code != exitFail || errs != want {
		t.Errorf("wss:// to the plain broker: exit %d, stderr %q, want %q", code, errs, want)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("wss:// to the plain broker took %v", d)
	}

	ts := httptest.NewUnstartedServer(nil)
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // its "TLS handshake error" line
	ts.StartTLS()
	defer ts.Close()
	tlsAddr := ts.Listener.Addr().String()
	code, _, errs = e.run(nil, "sub", "--url", "ws://"+tlsAddr+"/ws", "--token", "dev-token-bob", "demo/general/messages")
	want = "kraken sub: cannot connect to ws://" + tlsAddr + "/ws: the server at " + tlsAddr + " speaks TLS; use wss://"
	if code != exitFail || !strings.HasPrefix(errs, want) {
		t.Errorf("ws:// to a TLS server: exit %d, stderr %q, want %q…", code, errs, want)
	}
}

// hydratingAuth is the demo token file with a hydration webhook at url
// for the topic name "history", as an auth service would configure it.
type hydratingAuth struct {
	auth.Authenticator
	url string
}

func (h hydratingAuth) Validate(ctx context.Context, token string) (*auth.Grant, error) {
	g, err := h.Authenticator.Validate(ctx, token)
	if err != nil {
		return nil, err
	}
	withHook := *g
	withHook.Apps = []auth.App{{ID: "demo-app", Name: "demo", TopicWebhooks: map[string]auth.TopicWebhooks{
		"history": {OnSubscribe: &auth.Webhook{URL: h.url}}}}}
	return &withHook, nil
}

// TestCLISubPrintsHydration: the hydration frame that follows a subscribe
// is printed marked [hydration] ("hydration":true with --json) and is not
// counted as a message.
func TestCLISubPrintsHydration(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, `{"welcome":"hello bob"}`)
	}))
	defer site.Close()
	hooks := webhook.New(webhook.Config{})
	t.Cleanup(func() { _ = hooks.Close(context.Background()) })
	e := newCLIEnvWith(t, func(c *session.Config) {
		c.Auth = hydratingAuth{Authenticator: c.Auth, url: site.URL}
		c.Webhooks = hooks
	})

	s := e.startSub("dev-token-bob", "--count", "1", "demo/general/history")
	re := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\.\d{3}\] \[hydration\] demo/general/history: \{"welcome":"hello bob"\}$`)
	if l := e.line(s); !re.MatchString(l) {
		t.Fatalf("hydration line %q", l)
	}
	if code, _, errs := e.run(nil, "pub", "--token", "dev-token-alice", "demo/general/history", `"hi"`); code != 0 {
		t.Fatalf("pub: %s", errs)
	}
	if l := e.line(s); !strings.HasSuffix(l, `] demo/general/history alice: "hi"`) {
		t.Fatalf("message line %q", l)
	}
	if code := e.wait(s); code != 0 {
		t.Fatalf("sub exit %d", code)
	}

	s = e.startSub("dev-token-bob", "--json", "demo/general/history")
	if l := e.line(s); l != `{"topic":"demo/general/history","data":{"welcome":"hello bob"},"hydration":true}` {
		t.Fatalf("--json hydration line %q", l)
	}
}

// TestCLIPresenceEmptyRoom: a room nobody is in says so on standard error,
// prints nothing on standard output and exits 0.
func TestCLIPresenceEmptyRoom(t *testing.T) {
	e := newCLIEnv(t)
	code, out, errs := e.run(nil, "presence", "--token", "dev-token-bob", "nosuchroom")
	if code != 0 || out != "" || !strings.HasPrefix(errs, "kraken presence: nobody present in nosuchroom") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
