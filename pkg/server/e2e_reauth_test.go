package server

import (
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Replacing a live connection's token (reauth), with the token file and
// with an HTTP auth service (docs/protocol.md "Auth"; wire-reference.md §12.5).

// reauthTokens are two tokens of alice granting different rooms besides
// demo/general/#, and bob's, which grants every room.
const reauthTokens = `{"tokens": {
  "tok-alice-old": {"actorTokenId": "alice", "organizationId": "demo-org", "projectId": "demo-project",
    "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "demo-app"},
                      {"pattern": "demo/old/#", "permission": "pubSub", "app_id": "demo-app"}]},
  "tok-alice-new": {"actorTokenId": "alice", "organizationId": "demo-org", "projectId": "demo-project",
    "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "demo-app"},
                      {"pattern": "demo/new/#", "permission": "pubSub", "app_id": "demo-app"}]},
  "tok-bob": {"actorTokenId": "bob", "organizationId": "demo-org", "projectId": "demo-project",
    "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub", "app_id": "demo-app"}]}
}}`

// startReauth runs a server on the reauth token file.
func startReauth(t *testing.T) *Server {
	t.Helper()
	return start(t, func(c *testConfig) { c.Auth = tokenFileAuth(t, reauthTokens) })
}

// expectRefused expects the 42940 refusal of a subscribe to topic (v2).
func expectRefused(t *testing.T, p *testpeer.Peer, topic string) {
	t.Helper()
	p.Send("type", "subscribe", "topic", topic)
	p.ExpectFields("type", "error", "code", 42940, "error", "unknown_topic", "topic", topic)
}

// A token of the same actor replaces the grants in place: the subscription
// only the old token allowed is dropped with the error a revalidation
// sends, before the answer, and a room only the new token allows opens.
func TestReauthWithATokenOfTheSameActorSwapsTheGrants(t *testing.T) {
	s := startReauth(t)
	alice := authed(t, s, "tok-alice-old", "protocolVersion", 2)
	subscribe(t, alice, "demo/old/t")
	subscribe(t, alice, "demo/general/t")
	expectRefused(t, alice, "demo/new/t")

	alice.Send("type", "reauth", "token", "tok-alice-new")
	alice.ExpectFields("type", "error", "code", 42940, "error", "unknown_topic", "topic", "demo/old/t",
		"detail", "access revoked")
	if f := alice.ExpectFields("type", "reauth", "success", true); len(f.Map) != 2 {
		t.Fatalf("reauth answer has keys beyond type and success: %s", f)
	}
	subscribe(t, alice, "demo/new/t")
	expectRefused(t, alice, "demo/old/t")

	bob := authed(t, s, "tok-bob")
	bob.Send("type", "publish", "topic", "demo/old/t", "data", "gone")
	bob.Send("type", "publish", "topic", "demo/new/t", "data", "new")
	bob.Send("type", "publish", "topic", "demo/general/t", "data", "kept")
	alice.ExpectFields("type", "message", "topic", "demo/new/t", "data", "new")
	alice.ExpectFields("type", "message", "topic", "demo/general/t", "data", "kept")
}

// A valid token of another actor is refused, and the connection keeps its
// grants and its subscriptions.
func TestReauthWithAnotherActorsTokenIsRefused(t *testing.T) {
	s := startReauth(t)
	alice := authed(t, s, "tok-alice-old", "protocolVersion", 2)
	subscribe(t, alice, "demo/old/t")
	alice.Send("type", "reauth", "token", "tok-bob")
	f := alice.ExpectFields("type", "reauth", "success", false, "error", "actor_mismatch", "code", 40300)
	if len(f.Map) != 4 {
		t.Fatalf("refusal has keys beyond type, success, error and code: %s", f)
	}
	expectRefused(t, alice, "demo/new/t") // bob's grant did not come along
	bob := authed(t, s, "tok-bob")
	bob.Send("type", "publish", "topic", "demo/old/t", "data", "still yours")
	alice.ExpectFields("type", "message", "topic", "demo/old/t", "data", "still yours")
}

// A token the backend does not know, one that is not a string, and no
// token at all are refused with their codes; the connection stays as it
// was.
func TestReauthWithABadTokenIsRefused(t *testing.T) {
	for _, tt := range []struct {
		name  string
		give  []any
		error string
		code  int
	}{
		{name: "unknown", give: []any{"token", "no-such-token"}, error: "access_denied", code: 40100},
		{name: "not a string", give: []any{"token", 42}, error: "access_denied", code: 40100},
		{name: "no token", error: "bad_request", code: 40000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startReauth(t)
			alice := authed(t, s, "tok-alice-old", "protocolVersion", 2)
			subscribe(t, alice, "demo/old/t")
			alice.Send(append([]any{"type", "reauth"}, tt.give...)...)
			alice.ExpectFields("type", "reauth", "success", false, "error", tt.error, "code", tt.code)
			expectPong(t, alice)
			subscribe(t, alice, "demo/old/more")
			expectRefused(t, alice, "demo/new/t")
		})
	}
}

// A refused reauth token counts as a failed auth attempt: the fifth on a
// connection closes it with 4004.
func TestRefusedReauthTokensCloseWith4004(t *testing.T) {
	s := startReauth(t)
	alice := authed(t, s, "tok-alice-old")
	for i := 1; i <= 4; i++ {
		token := "wrong-" + itoa(i)
		if i == 4 {
			token = "tok-bob" // another actor's token counts too
		}
		alice.Send("type", "reauth", "token", token)
		alice.ExpectFields("type", "reauth", "success", false)
	}
	expectPong(t, alice) // four refusals leave the socket open
	alice.Send("type", "reauth", "token", "wrong-5")
	alice.ExpectFields("type", "reauth", "success", false, "error", "access_denied")
	expectCloseCode(t, alice, 4004, "too_many_auth_failures")
	alice.ExpectEOF(5 * time.Second)
}

// A reauth before the expiry moves it to the new token's: the connection
// outlives the old token, through the revalidations meanwhile.
func TestReauthMovesTheExpiry(t *testing.T) {
	now := time.Now()
	exp := now.Unix() + 2
	later := now.Add(time.Hour).UTC().Format(time.RFC3339) // the string form is read too
	svc := newExpiringAuth(map[string]expiringToken{
		"short": {"alice", "demo-project", exp},
		"long":  {"alice", "demo-project", later},
	})
	s := startWithHTTPAuth(t, svc, revalidateOften)
	alice := authed(t, s, "short")
	alice.Send("type", "reauth", "token", "long")
	alice.ExpectFields("type", "reauth", "success", true)
	alice.ExpectNothing(time.Until(time.Unix(exp+1, 0)))
	expectPong(t, alice)
	if svc.revalidated.Load() == 0 {
		t.Fatal("no revalidation ran")
	}
}

// A reauth token past its expiry is access_denied; a valid token of the
// same actor in another project is actor_mismatch.
func TestReauthWithAnExpiredOrOtherProjectTokenIsRefused(t *testing.T) {
	s := startWithHTTPAuth(t, newExpiringAuth(map[string]expiringToken{
		"stale": {"alice", "demo-project", time.Now().Unix() - 10},
		"fresh": {"alice", "demo-project", nil},
		"other": {"alice", "other-project", nil},
	}), nil)
	p := authed(t, s, "fresh")
	p.Send("type", "reauth", "token", "stale")
	p.ExpectFields("type", "reauth", "success", false, "error", "access_denied", "code", 40100)
	p.Send("type", "reauth", "token", "other")
	p.ExpectFields("type", "reauth", "success", false, "error", "actor_mismatch", "code", 40300)
	subscribe(t, p, "demo/general/t")
}
