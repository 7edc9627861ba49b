package admin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/node/nodetest"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// tokenFile is examples/auth.json's demo tokens, with a room for
// presence, and a third actor in another project.
const tokenFile = `{"tokens": {
  "dev-token-alice": {"actorTokenId": "alice", "projectId": "demo-project", "organizationId": "demo-org",
    "allowedTopics": [{"pattern": "demo/general/#", "topic": "demo-general", "permission": "pubSub",
      "room_id": "room-general", "room_slug": "general", "app_id": "demo-app", "app_name": "demo"}]},
  "dev-token-bob": {"actorTokenId": "bob", "projectId": "demo-project", "organizationId": "demo-org",
    "allowedTopics": [{"pattern": "demo/general/#", "topic": "demo-general", "permission": "pubSub",
      "room_id": "room-general", "room_slug": "general", "app_id": "demo-app", "app_name": "demo"}]},
  "dev-token-dan": {"actorTokenId": "dan", "projectId": "other-project",
    "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "demo-app", "app_name": "demo"}]}
}}`

// testNode is a live node: its WebSocket server on a loopback port and
// its admin API on an httptest server.
type testNode struct {
	id     string
	n      *node.Node
	ws     string // host:port of the WebSocket server
	admin  *httptest.Server
	secret string
}

type nodeOptions struct {
	id     string
	auth   auth.Authenticator // nil: the static token file, cached
	broker broker.Broker      // nil: local
	secret string
	drain  func(exit bool) error
}

// startNode starts a node with o and stops it when the test ends.
func startNode(t *testing.T, o nodeOptions) *testNode {
	t.Helper()
	if o.id == "" {
		o.id = "node-a"
	}
	if o.auth == nil {
		path := filepath.Join(t.TempDir(), "auth.json")
		if err := os.WriteFile(path, []byte(tokenFile), 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := static.New(static.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		o.auth = auth.NewCache(st, 30*time.Second, 1000, nil)
	}
	n, err := node.New(node.Config{Session: session.Config{Auth: o.auth, Broker: o.broker, NodeID: o.id},
		Hub: hub.Config{Workers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(n, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Start(t, n, srv)
	api := admin.New(n, admin.Config{Secret: o.secret, Version: "test", Drain: o.drain, Wait: 3 * time.Second})
	mux := http.NewServeMux()
	api.Register(mux)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &testNode{id: o.id, n: n, ws: srv.Addr().String(), admin: hs, secret: o.secret}
}

// client opens a WebSocket client to tn, authenticated with token.
func (tn *testNode) client(t *testing.T, token string) *testpeer.Peer {
	t.Helper()
	p := testpeer.Dial(t, tn.ws)
	p.Auth(token)
	return p
}

// call sends method path with body (nil: none) to tn's admin API with
// its secret and returns the status and the body.
func (tn *testNode) call(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	return tn.callWith(t, tn.secret, method, path, body)
}

// callWith is call with secret as the bearer secret ("" for none).
func (tn *testNode) callWith(t *testing.T, secret, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, tn.admin.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// get calls GET path, fails unless it answers 200, and decodes the answer
// into v.
func (tn *testNode) get(t *testing.T, path string, v any) {
	t.Helper()
	status, body := tn.call(t, http.MethodGet, path, nil)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// post calls POST path with body, fails unless it answers want, and
// decodes the answer into v (nil: not decoded).
func (tn *testNode) post(t *testing.T, path string, body any, want int, v any) {
	t.Helper()
	status, out := tn.call(t, http.MethodPost, path, body)
	if status != want {
		t.Fatalf("POST %s %v: %d %s, want %d", path, body, status, out, want)
	}
	if v != nil {
		if err := json.Unmarshal(out, v); err != nil {
			t.Fatalf("POST %s: %v\n%s", path, err, out)
		}
	}
}

// connections lists tn's connections with query (e.g. "actor=bob").
func (tn *testNode) connections(t *testing.T, query string) admin.ConnectionsPage {
	t.Helper()
	var page admin.ConnectionsPage
	tn.get(t, "/api/connections?"+query, &page)
	return page
}

// waitFor polls cond every 20 ms until it holds, failing t after wait.
func waitFor(t *testing.T, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
