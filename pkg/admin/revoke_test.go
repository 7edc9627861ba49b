package admin_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// authService is a real HTTP auth service (wire-reference.md §5.1) that
// allows the tokens "tok-<actor>" and records every /validate call.
type authService struct {
	*httptest.Server
	mu    sync.Mutex
	calls []string // the tokens /validate was asked about
}

func newAuthService(t *testing.T) *authService {
	t.Helper()
	s := &authService{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/validate":
			tok, _ := body["accessToken"].(string)
			s.mu.Lock()
			s.calls = append(s.calls, tok)
			s.mu.Unlock()
			actor, ok := strings.CutPrefix(tok, "tok-")
			if !ok {
				_, _ = w.Write([]byte(`{"result":"deny"}`))
				return
			}
			_, _ = w.Write([]byte(`{"result":"allow","client_attrs":{"actor_token_id":"` + actor +
				`","project_id":"p1","apps":[{"app_id":"demo-app","app_name":"demo","allowed_topics":[{"pattern":"demo/general/#","permission":"pubSub"}]}]}}`))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// validations counts the /validate calls for token.
func (s *authService) validations(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c == token {
			n++
		}
	}
	return n
}

// A revoke by token closes every connection of the token's actor with
// {type:"disconnect"} and 4001, and drops the cached validation, so the
// next connection with it is validated by the auth service again; the
// actor is found in the cache (no call for the revoke itself). Another
// actor's connection stays. A token the service does not know is 404.
func TestRevokeAsksTheAuthServiceAgain(t *testing.T) {
	svc := newAuthService(t)
	backend, err := httpauth.New(httpauth.Config{BaseURL: svc.URL})
	if err != nil {
		t.Fatal(err)
	}
	tn := startNode(t, nodeOptions{auth: auth.NewCache(backend, 30*time.Second, 1000, nil)})
	carol1 := tn.client(t, "tok-carol")
	carol2 := tn.client(t, "tok-carol")
	erin := tn.client(t, "tok-erin")
	if got := svc.validations("tok-carol"); got != 1 {
		t.Fatalf("/validate calls for tok-carol before the revoke: %d, want 1 (the second from the cache)", got)
	}

	var res admin.ActionResult
	tn.post(t, "/api/revoke", map[string]any{"token": "tok-carol"}, 200, &res)
	if res.Actor != "carol" || res.Disconnected != 2 || res.Forgotten == nil || *res.Forgotten != 1 {
		t.Fatalf("revoke: %+v", res)
	}
	for _, p := range []*testpeer.Peer{carol1, carol2} {
		p.ExpectFields("type", "disconnect", "reason", "token_revoked")
		if code, reason := p.ExpectClose(); code != 4001 || reason != "token_revoked" {
			t.Fatalf("carol closed %d %q, want 4001 token_revoked", code, reason)
		}
	}
	if got := svc.validations("tok-carol"); got != 1 {
		t.Fatalf("/validate calls for tok-carol after the revoke: %d, want 1 (the actor came from the cache)", got)
	}
	tn.client(t, "tok-carol")
	if got := svc.validations("tok-carol"); got != 2 {
		t.Fatalf("/validate calls for tok-carol after a reconnect: %d, want 2 (validated again)", got)
	}
	erin.Send("type", "subscribe", "topic", "demo/general/x")
	erin.ExpectType("subscribed")

	tn.post(t, "/api/revoke", map[string]any{"actor": "erin", "reason": "account closed"}, 200, &res)
	if res.Actor != "erin" || res.Disconnected != 1 {
		t.Fatalf("revoke by actor: %+v", res)
	}
	erin.ExpectFields("type", "disconnect", "reason", "account closed")
	if code, reason := erin.ExpectClose(); code != 4001 || reason != "account closed" {
		t.Fatalf("erin closed %d %q", code, reason)
	}

	status, body := tn.call(t, http.MethodPost, "/api/revoke", map[string]any{"token": "not-a-token"})
	if status != http.StatusNotFound || !strings.Contains(string(body), "revoke the actor instead") {
		t.Fatalf("unknown token: %d %s, want 404 with the reason", status, body)
	}
	for _, bad := range []any{map[string]any{}, map[string]any{"actor": "a", "token": "b"}} {
		if status, _ := tn.call(t, http.MethodPost, "/api/revoke", bad); status != http.StatusBadRequest {
			t.Errorf("%v: %d, want 400", bad, status)
		}
	}
}
