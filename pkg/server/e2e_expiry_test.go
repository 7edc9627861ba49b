package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Closing a connection whose token expired with 4003 token_expired, with
// an HTTP auth service that gives the expiry (docs/protocol.md "Token
// expiry"; wire-reference.md §12.5; decisions.md OQ-65, amended).

// expiringAuthService is an HTTP auth service whose /validate answers each
// of its tokens with the demo grant of the token's actor and project and
// the token's auth_expires_at, as nolag-core answers a client token (any
// other token is denied), and whose /revalidate answers every actor with
// the demo grant and no expiry, as nolag-core does.
type expiringAuthService struct {
	tokens      map[string]expiringToken
	revalidated atomic.Int64
}

type expiringToken struct {
	actor, project string
	expires        any // auth_expires_at: unix seconds, a string, or nil
}

func newExpiringAuth(tokens map[string]expiringToken) *expiringAuthService {
	return &expiringAuthService{tokens: tokens}
}

func (a *expiringAuthService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AccessToken  string `json:"accessToken"`
		ActorTokenID string `json:"actorTokenId"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	const grant = `"organization_id":"demo-org","apps":[{"app_id":"demo-app","app_name":"demo",
		"allowed_topics":[{"pattern":"demo/general/#","permission":"pubSub"}]}]`
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/v1/kraken/revalidate" {
		a.revalidated.Add(1)
		fmt.Fprintf(w, `{"valid":true,"actor_token_id":%q,"project_id":"demo-project",%s}`, req.ActorTokenID, grant)
		return
	}
	tok, ok := a.tokens[req.AccessToken]
	if r.URL.Path != "/v1/kraken/validate" || !ok {
		_, _ = w.Write([]byte(`{"result":"deny"}`))
		return
	}
	exp, _ := json.Marshal(tok.expires)
	fmt.Fprintf(w, `{"result":"allow","client_attrs":{"actor_token_id":%q,"project_id":%q,"auth_expires_at":%s,%s}}`,
		tok.actor, tok.project, exp, grant)
}

// revalidateOften makes the server revalidate every session every 100 ms.
func revalidateOften(c *testConfig) { c.Hub.RevalidateInterval = 100 * time.Millisecond }

// A connection is closed with 4003 token_expired once the expiry the auth
// service gave its token passes, not before; the revalidations meanwhile,
// whose answers carry no expiry, do not lift it.
func TestExpiredTokenClosesWith4003(t *testing.T) {
	exp := time.Now().Unix() + 2
	svc := newExpiringAuth(map[string]expiringToken{"short": {"alice", "demo-project", exp}})
	s := startWithHTTPAuth(t, svc, revalidateOften)
	alice := authed(t, s, "short")
	subscribe(t, alice, "demo/general/t")
	expectCloseCode(t, alice, 4003, "token_expired")
	if now := time.Now().Unix(); now < exp {
		t.Fatalf("closed at %d, before the expiry %d", now, exp)
	}
	if svc.revalidated.Load() == 0 {
		t.Fatal("no revalidation ran before the expiry")
	}
	alice.ExpectEOF(5 * time.Second)
	// The grant is still in the token cache, past its expiry now.
	again := testpeer.Dial(t, s.Addr().String())
	again.Send("type", "auth", "token", "short")
	again.ExpectFields("type", "auth", "success", false, "error", "access_denied")
}

// A token the auth service answers with an expiry already past is
// access_denied; the socket stays open for another token.
func TestTokenPastItsExpiryIsDenied(t *testing.T) {
	s := startWithHTTPAuth(t, newExpiringAuth(map[string]expiringToken{
		"stale": {"alice", "demo-project", time.Now().Unix() - 10},
		"fresh": {"alice", "demo-project", nil},
	}), nil)
	p := testpeer.Dial(t, s.Addr().String())
	p.Send("type", "auth", "token", "stale")
	p.ExpectFields("type", "auth", "success", false, "error", "access_denied")
	p.Auth("fresh")
}
