package server

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// POST /internal/publish (wire-reference.md §5.4, OQ-26): the user's backend
// publishes through the fan-out layer to WebSocket subscribers.

const testInternalSecret = "s3cret-for-tests"

func postInternal(t *testing.T, s *Server, auth, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+s.Addr().String()+"/internal/publish", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func withSecret(c *testConfig) { c.InternalSecret = testInternalSecret }

func TestInternalPublishReachesSubscribers(t *testing.T) {
	s := start(t, withSecret)
	bob := authed(t, s, "dev-token-bob") // a v1 client, as the JS and Go SDKs are
	subscribe(t, bob, "demo/general/messages", "qos", 1)
	wild := authed(t, s, "dev-token-bob", "protocolVersion", 2)
	subscribe(t, wild, "demo/general/+")

	code, body := postInternal(t, s, "Bearer "+testInternalSecret,
		`{"topic":"demo-app/demo/general/messages","payload":{"text":"from the backend","n":[1,2.5,null]}}`)
	// This server's Authenticator cannot list its grants: the topic is
	// taken as the routing key, unchecked.
	if code != 200 || body != `{"success":true,"routedTo":"demo-app/demo/general/messages","via":"unchecked"}` {
		t.Fatalf("POST = %d %s", code, body)
	}
	want := map[string]any{"text": "from the backend", "n": []any{int64(1), 2.5, nil}}
	for _, p := range []*testpeer.Peer{bob, wild} {
		f := p.ExpectFields("type", "message", "data", want, "from", "server", "fromType", "server", "requiresAck", true)
		if id, _ := f.Map["msgId"].(string); len(id) != 36 {
			t.Fatalf("msgId %v, want a UUID", f.Map["msgId"])
		}
	}

	// The pattern form, resolved as a wildcard rule of its app.
	code, body = postInternal(t, s, "Bearer "+testInternalSecret, `{"pattern":"demo/general/messages","appId":"demo-app","payload":"hi"}`)
	if code != 200 || body != `{"success":true,"routedTo":"demo-app/demo/general/messages","via":"pattern"}` {
		t.Fatalf("pattern form: %d %s", code, body)
	}
	bob.ExpectFields("type", "message", "topic", "demo/general/messages", "data", "hi")
	wild.ExpectFields("type", "message", "topic", "demo/general/+", "sourceTopic", "demo/general/messages", "data", "hi")
}

func TestInternalPublishRetains(t *testing.T) {
	s := start(t, withSecret)
	if code, _ := postInternal(t, s, "Bearer "+testInternalSecret,
		`{"topic":"demo-app/demo/general/state","payload":{"on":true},"retain":true}`); code != 200 {
		t.Fatalf("POST = %d", code)
	}
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/state")
	bob.ExpectFields("type", "message", "topic", "demo/general/state", "data", map[string]any{"on": true})
}

func TestInternalPublishStatuses(t *testing.T) {
	s := start(t, withSecret)
	ok := "Bearer " + testInternalSecret
	tests := []struct {
		name, auth, body string
		wantCode         int
		wantBody         string
	}{
		{"no authorization", "", `{"topic":"a/b","payload":1}`, 401, `{"error":"unauthorized"}`},
		{"wrong secret", "Bearer nope", `{"topic":"a/b","payload":1}`, 401, `{"error":"unauthorized"}`},
		{"secret without Bearer", testInternalSecret, `{"topic":"a/b","payload":1}`, 401, `{"error":"unauthorized"}`},
		{"no payload", ok, `{"topic":"a/b"}`, 400, missingFields},
		{"no topic", ok, `{"payload":1}`, 400, missingFields},
		{"not JSON", ok, `{"topic":`, 400, `{"error":"invalid_json"}`},
		{"wildcard topic", ok, `{"pattern":"demo/+/x","payload":1}`, 400, `{"error":"invalid_topic","detail":"topic: wildcard in publish topic"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := postInternal(t, s, tt.auth, tt.body)
			if code != tt.wantCode || body != tt.wantBody {
				t.Fatalf("= %d %s, want %d %s", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	resp, err := http.Get("http://" + s.Addr().String() + "/internal/publish")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET = %d, Allow %q; want 405, Allow POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestInternalPublishBodyBounds(t *testing.T) {
	s := start(t, func(c *testConfig) { withSecret(c); c.MaxInternalBody = 64 })
	code, body := postInternal(t, s, "Bearer "+testInternalSecret,
		`{"topic":"demo-app/demo/general/x","payload":"`+strings.Repeat("x", 100)+`"}`)
	if code != 413 || body != `{"error":"body_too_large","detail":"body too large","maxBytes":64}` {
		t.Fatalf("= %d %s", code, body)
	}
	// A chunked body is bounded as it arrives: 3 chunks of 30 bytes.
	chunk := "1e\r\n" + strings.Repeat("x", 30) + "\r\n"
	resp, got := httpExchange(t, s, "POST /internal/publish HTTP/1.1\r\nHost: k\r\nTransfer-Encoding: chunked\r\n\r\n"+
		chunk+chunk+chunk+"0\r\n\r\n")
	if resp.StatusCode != 413 {
		t.Fatalf("90-byte chunked body = %d %s, want 413", resp.StatusCode, got)
	}
	resp, _ = httpExchange(t, s, "POST /internal/publish HTTP/1.1\r\nHost: k\r\n\r\n")
	if resp.StatusCode != 411 {
		t.Fatalf("no length = %d, want 411", resp.StatusCode)
	}
}

// TestInternalPublishFramingRFC9112: the request is framed as RFC 9112 §6
// says, by net/http's reader: a chunked body (with a Content-Length beside
// it, which it overrides) is accepted, Content-Length fields that disagree
// or are not a number are refused with 400, agreeing repeats are accepted,
// a transfer coding other than chunked gets 501, a body shorter than its
// length is waited for and then answered 408 (the handshake deadline), and
// two Authorization fields are not a secret.
func TestInternalPublishFramingRFC9112(t *testing.T) {
	s := start(t, func(c *testConfig) { withSecret(c); c.Hub.HandshakeTimeout = time.Second })
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/framing")
	const head = "POST /internal/publish HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer " + testInternalSecret + "\r\n"
	body := func(v string) string { return `{"topic":"demo-app/demo/general/framing","payload":"` + v + `"}` }
	length := func(b string) string { return "Content-Length: " + itoa(len(b)) + "\r\n" }
	chunked := func(b string) string {
		return strconv.FormatInt(int64(len(b[:20])), 16) + "\r\n" + b[:20] + "\r\n" +
			strconv.FormatInt(int64(len(b[20:])), 16) + "\r\n" + b[20:] + "\r\n0\r\n\r\n"
	}
	ok := `{"success":true,"routedTo":"demo-app/demo/general/framing","via":"unchecked"}`
	for _, tt := range []struct {
		name, req string
		status    int
		want      string // the body, or a prefix of it ending in "…"
		delivered string // the payload bob receives, "" for none
	}{
		{"chunked", head + "Transfer-Encoding: chunked\r\n\r\n" + chunked(body("chunked")), 200, ok, "chunked"},
		{"chunked over a Content-Length", head + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" + chunked(body("both")), 200, ok, "both"},
		{"agreeing Content-Lengths", head + length(body("twice")) + length(body("twice")) + "\r\n" + body("twice"), 200, ok, "twice"},
		{"disagreeing Content-Lengths", head + length(body("x")) + "Content-Length: 5\r\n\r\n" + body("x"), 400, `{"error":"bad_request","detail":"malformed request: message cannot contain multiple Content-Length headers…`, ""},
		{"Content-Length not a number", head + "Content-Length: 1e3\r\n\r\n" + body("x"), 400, `{"error":"bad_request",…`, ""},
		{"malformed chunk", head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + body("x") + "\r\n0\r\n\r\n", 400, `{"error":"bad_request","detail":"malformed body: …`, ""},
		{"gzip", head + "Transfer-Encoding: gzip, chunked\r\n\r\n" + chunked(body("x")), 501, `{"error":"not_implemented",…`, ""},
		{"short body", head + length(body("short")) + "\r\n" + body("short")[:10], 408, "…", ""},
		{"two Authorization fields", head + "Authorization: Bearer " + testInternalSecret + "\r\n" + length(body("x")) + "\r\n" + body("x"), 401, `{"error":"unauthorized"}`, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, got := httpExchange(t, s, tt.req)
			if prefix, cut := strings.CutSuffix(tt.want, "…"); resp.StatusCode != tt.status ||
				!cut && got != tt.want || cut && !strings.HasPrefix(got, prefix) {
				t.Fatalf("= %d %s, want %d %s", resp.StatusCode, got, tt.status, tt.want)
			}
			if tt.delivered != "" {
				bob.ExpectFields("type", "message", "data", tt.delivered)
			}
		})
	}
	// Only the accepted requests published: the next message bob reads is
	// this one.
	if code, got := postInternal(t, s, "Bearer "+testInternalSecret, body("last")); code != 200 {
		t.Fatalf("= %d %s", code, got)
	}
	bob.ExpectFields("type", "message", "data", "last")
}

// Disabled while the secret is unset or the placeholder: 404 even with the
// right header (OQ-26, OQ-64).
func TestInternalPublishDisabledWithoutARealSecret(t *testing.T) {
	for _, secret := range []string{"", DefaultInternalSecret} {
		s := start(t, func(c *testConfig) { c.InternalSecret = secret })
		code, body := postInternal(t, s, "Bearer "+secret, `{"topic":"demo-app/demo/general/x","payload":1}`)
		if code != 404 || body != `{"error":"not_found"}` {
			t.Fatalf("secret %q: = %d %s, want 404", secret, code, body)
		}
	}
}

// A body that arrives in pieces is read whole before it is answered.
func TestInternalPublishBodyInPieces(t *testing.T) {
	s := start(t, withSecret)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/slow")
	body := `{"topic":"demo-app/demo/general/slow","payload":"late"}`
	conn := dialTCP(t, s)
	head := "POST /internal/publish HTTP/1.1\r\nHost: k\r\nAuthorization: Bearer " + testInternalSecret +
		"\r\nContent-Type: application/json\r\nContent-Length: " + itoa(len(body)) + "\r\n\r\n"
	_, _ = io.WriteString(conn, head+body[:10])
	time.Sleep(50 * time.Millisecond) // a separate segment: the broker waits for the rest
	_, _ = io.WriteString(conn, body[10:])
	resp, got := readResponse(t, conn, bufio.NewReader(conn))
	if resp.StatusCode != 200 || got != `{"success":true,"routedTo":"demo-app/demo/general/slow","via":"unchecked"}` {
		t.Fatalf("= %d %s", resp.StatusCode, got)
	}
	bob.ExpectFields("type", "message", "data", "late")
}

// tokenFileAuth is the token-file backend on the file given, behind the
// token cache, as kraken serves it.
func tokenFileAuth(t *testing.T, contents string) auth.Authenticator {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(contents), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := static.New(static.Config{Path: path, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return auth.NewCache(st, 30*time.Second, 100, nil)
}

// TestInternalPublishToAClientTopic: with the token file, topic may be the
// topic clients use ("demo/general/messages"): it is routed to the key
// their grants resolve it to, and the answer says where; a routing key is
// still taken as it is. A topic no token routes, or one tokens route to
// different keys, is refused with a reason instead of being published to
// nobody.
func TestInternalPublishToAClientTopic(t *testing.T) {
	demo, err := os.ReadFile("../../examples/auth.json")
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, func(c *testConfig) { withSecret(c); c.Auth = tokenFileAuth(t, string(demo)) })
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/messages")
	wild := authed(t, s, "dev-token-alice")
	subscribe(t, wild, "demo/general/+")
	post := func(body string) (int, string) { return postInternal(t, s, "Bearer "+testInternalSecret, body) }

	code, body := post(`{"topic":"demo/general/messages","payload":{"text":"as a client"}}`)
	if code != 200 || body != `{"success":true,"routedTo":"demo-app/demo/general/messages","via":"client_topic"}` {
		t.Fatalf("client topic: %d %s", code, body)
	}
	bob.ExpectFields("type", "message", "topic", "demo/general/messages", "data", map[string]any{"text": "as a client"}, "from", "server")
	wild.ExpectFields("type", "message", "topic", "demo/general/+", "sourceTopic", "demo/general/messages", "data", map[string]any{"text": "as a client"})

	code, body = post(`{"topic":"demo-app/demo/general/messages","payload":"as a key"}`)
	if code != 200 || body != `{"success":true,"routedTo":"demo-app/demo/general/messages","via":"routing_key"}` {
		t.Fatalf("routing key: %d %s", code, body)
	}
	bob.ExpectFields("type", "message", "topic", "demo/general/messages", "data", "as a key")
	wild.ExpectFields("type", "message", "sourceTopic", "demo/general/messages", "data", "as a key")

	for _, topic := range []string{"other/general/messages", "demo-app/other/x", "demo/elsewhere/x"} {
		code, body = post(`{"topic":"` + topic + `","payload":1}`)
		if code != 422 || body != `{"error":"unknown_topic","detail":"no token in force routes this topic, as a routing key or as a client's topic"}` {
			t.Fatalf("%s: %d %s, want 422", topic, code, body)
		}
	}
	bob.ExpectNothing(100 * time.Millisecond)

	// A second app whose tokens cover the same topics: which key is meant
	// cannot be told, so the request is refused with the candidates.
	two := strings.Replace(string(demo), `"dev-token-bob": {`, `"dev-token-carol": {
      "actorTokenId": "carol", "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub", "app_id": "other-app"}]
    },
    "dev-token-bob": {`, 1)
	s2 := start(t, func(c *testConfig) { withSecret(c); c.Auth = tokenFileAuth(t, two) })
	code, body = postInternal(t, s2, "Bearer "+testInternalSecret, `{"topic":"demo/general/messages","payload":1}`)
	if code != 409 || body != `{"error":"ambiguous_topic","detail":"tokens in force route this topic to different keys: `+
		`send one of them as topic, or pattern and appId","candidates":["demo-app/demo/general/messages","other-app/demo/general/messages"]}` {
		t.Fatalf("ambiguous: %d %s", code, body)
	}
	code, body = postInternal(t, s2, "Bearer "+testInternalSecret, `{"topic":"other-app/demo/general/messages","payload":1}`)
	if code != 200 || body != `{"success":true,"routedTo":"other-app/demo/general/messages","via":"routing_key"}` {
		t.Fatalf("one of the candidates: %d %s", code, body)
	}
}
