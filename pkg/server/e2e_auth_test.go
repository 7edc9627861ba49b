package server

import (
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// The authentication handshake (wire-reference.md §2; decisions.md OQ-13,
// OQ-44, OQ-53, OQ-65).

func TestAuthSuccessReplyCarriesTheSession(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	p.Send("type", "auth", "token", "dev-token-alice")
	f := p.ExpectFields("type", "auth", "success", true, "actorTokenId", "alice",
		"projectId", "demo-project", "actorType", "user", "protocolVersion", 1,
		"restoredSubscriptions", []any{})
	if len(f.Map) != 7 {
		t.Fatalf("auth reply has keys beyond §2.3: %s", f)
	}
}

func TestAuthNegotiatesProtocolVersion(t *testing.T) {
	for _, tt := range []struct {
		name string
		give []any // extra auth fields
		want int
	}{
		{name: "absent", want: 1},
		{name: "1", give: []any{"protocolVersion", 1}, want: 1},
		{name: "2", give: []any{"protocolVersion", 2}, want: 2},
		{name: "3", give: []any{"protocolVersion", 3}, want: 2},
		{name: "0", give: []any{"protocolVersion", 0}, want: 1},
		{name: "string", give: []any{"protocolVersion", "2"}, want: 1},
		{name: "float", give: []any{"protocolVersion", 2.0}, want: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := testpeer.Dial(t, s.Addr().String())
			f := p.Auth("dev-token-alice", tt.give...)
			if asInt(t, f.Map["protocolVersion"]) != int64(tt.want) {
				t.Fatalf("protocolVersion = %v, want %d", f.Map["protocolVersion"], tt.want)
			}
		})
	}
}

func TestAuthUnknownTokenIsDeniedAndSocketStaysOpen(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	p.Send("type", "auth", "token", "no-such-token")
	f := p.ExpectFields("type", "auth", "success", false, "error", "access_denied")
	if len(f.Map) != 3 {
		t.Fatalf("failure reply has keys beyond §2.4: %s", f)
	}
	p.Auth("dev-token-alice") // the same socket may try again
}

func TestAuthNonStringTokenIsDenied(t *testing.T) {
	for _, tt := range []struct {
		name string
		give any
	}{
		{name: "int", give: 12345},
		{name: "nil", give: nil},
		{name: "array", give: []any{"dev-token-alice"}},
		{name: "map", give: map[string]any{"token": "dev-token-alice"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := testpeer.Dial(t, s.Addr().String())
			p.Send("type", "auth", "token", tt.give)
			p.ExpectFields("type", "auth", "success", false, "error", "access_denied")
		})
	}
}

func TestAuthTokenSentAsBinIsAccepted(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	// §1.6: a string field may arrive as msgpack bin.
	p.Send("type", "auth", "token", []byte("dev-token-alice"))
	p.ExpectFields("type", "auth", "success", true, "actorTokenId", "alice")
}

func TestAuthFiveFailuresCloseWith4004(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	for i := 1; i <= 4; i++ {
		p.Send("type", "auth", "token", "wrong-"+itoa(i))
		p.ExpectFields("type", "auth", "success", false, "error", "access_denied")
	}
	expectPong(t, p) // four failures leave the socket open
	p.Send("type", "auth", "token", "wrong-5")
	p.ExpectFields("type", "auth", "success", false, "error", "access_denied")
	expectCloseCode(t, p, 4004, "too_many_auth_failures")
	p.ExpectEOF(5 * time.Second)
}

func TestAuthMessagesBeforeAuthGetNotAuthenticated(t *testing.T) {
	for _, tt := range []struct {
		name string
		give []any
	}{
		{name: "subscribe", give: []any{"type", "subscribe", "topic", "demo/general/x"}},
		{name: "publish", give: []any{"type", "publish", "topic", "demo/general/x", "data", "hi"}},
		{name: "auth without token", give: []any{"type", "auth", "reconnect", true}},
		{name: "reauth", give: []any{"type", "reauth", "token", "dev-token-alice"}},
		{name: "unknown type", give: []any{"type", "whatever"}},
		{name: "no type", give: []any{"token", "dev-token-alice"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := testpeer.Dial(t, s.Addr().String())
			p.Send(tt.give...)
			f := p.ExpectFields("type", "error", "error", "not_authenticated")
			if len(f.Map) != 2 {
				t.Fatalf("not_authenticated carries extra keys (§2.5: no code, no topic): %s", f)
			}
			p.Auth("dev-token-alice") // the connection stays open
		})
	}
}

func TestHeartbeatBeforeAuthIsIgnored(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	p.SendBinary(nil)
	expectPong(t, p) // the pong comes first: nothing answered the heartbeat
	p.Auth("dev-token-alice")
}

func TestHeartbeatAfterAuthIsEchoed(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendBinary(nil)
	f := p.Expect()
	if f.OpCode != ws.OpBinary || len(f.Payload) != 0 {
		t.Fatalf("heartbeat reply = %s, want an empty binary frame", f)
	}
}

func TestAuthSecondAuthIsRefusedAndSessionKept(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	subscribe(t, p, "demo/general/second-auth")
	p.Send("type", "auth", "token", "dev-token-bob")
	p.ExpectFields("type", "auth", "success", false, "error", "already_authenticated")
	// Still alice, still subscribed.
	p.Send("type", "publish", "topic", "demo/general/second-auth", "data", "x")
	p.ExpectFields("type", "message", "topic", "demo/general/second-auth", "from", "alice")
}

func TestAuthDeadlineClosesWith4008(t *testing.T) {
	const deadline = 300 * time.Millisecond
	s := start(t, func(c *testConfig) { c.Hub.AuthTimeout = deadline })
	began := time.Now()
	p := testpeer.Dial(t, s.Addr().String())
	expectCloseCode(t, p, 4008, "auth_timeout")
	if elapsed := time.Since(began); elapsed < deadline-50*time.Millisecond {
		t.Fatalf("closed after %v, before the %v auth deadline", elapsed, deadline)
	}
}

func TestAuthDeadlineSparesAuthenticatedConnections(t *testing.T) {
	const deadline = 200 * time.Millisecond
	s := start(t, func(c *testConfig) { c.Hub.AuthTimeout = deadline })
	p := authed(t, s, "dev-token-alice")
	p.ExpectNothing(3 * deadline)
	expectPong(t, p)
}

func restoringTokens(patterns ...string) tokens {
	return demoTokensWith(func(g *auth.Grant) {
		for _, pat := range patterns {
			g.ActiveSubscriptions = append(g.ActiveSubscriptions, auth.Subscription{Pattern: pat})
		}
	})
}

func TestAuthReconnectRestoresBackendListedSubscriptions(t *testing.T) {
	s := startWith(t, restoringTokens("demo/general/restored"), nil)
	alice := testpeer.Dial(t, s.Addr().String())
	f := alice.Auth("dev-token-alice", "reconnect", true)
	want := []any{map[string]any{"name": "demo/general/restored", "loadBalance": false}}
	if !sameJSON(f.Map["restoredSubscriptions"], want) {
		t.Fatalf("restoredSubscriptions = %v, want %v", f.Map["restoredSubscriptions"], want)
	}
	bob := authed(t, s, "dev-token-bob")
	bob.Send("type", "publish", "topic", "demo/general/restored", "data", "after reconnect")
	// The first frame after the auth reply is the message: no `subscribed`.
	alice.ExpectFields("type", "message", "topic", "demo/general/restored", "data", "after reconnect", "from", "bob")
}

func TestAuthWithoutLiteralTrueReconnectRestoresNothing(t *testing.T) {
	for _, tt := range []struct {
		name string
		give []any
	}{
		{name: "absent"},
		{name: "false", give: []any{"reconnect", false}},
		{name: "int", give: []any{"reconnect", 1}},
		{name: "string", give: []any{"reconnect", "true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startWith(t, restoringTokens("demo/general/restored"), nil)
			alice := testpeer.Dial(t, s.Addr().String())
			f := alice.Auth("dev-token-alice", tt.give...)
			if !sameJSON(f.Map["restoredSubscriptions"], []any{}) {
				t.Fatalf("restoredSubscriptions = %v, want []", f.Map["restoredSubscriptions"])
			}
			subscribe(t, alice, "demo/general/marker")
			bob := authed(t, s, "dev-token-bob")
			bob.Send("type", "publish", "topic", "demo/general/restored", "data", "x")
			bob.Send("type", "publish", "topic", "demo/general/marker", "data", "marker")
			// Per-publisher order: had the first publish been delivered, it
			// would come before the marker.
			alice.ExpectFields("type", "message", "topic", "demo/general/marker")
		})
	}
}

func TestAuthReconnectSkipsSubscriptionsOutsideTheGrants(t *testing.T) {
	s := startWith(t, restoringTokens("demo/other/forbidden", "demo/general/kept"), nil)
	alice := testpeer.Dial(t, s.Addr().String())
	f := alice.Auth("dev-token-alice", "reconnect", true)
	want := []any{map[string]any{"name": "demo/general/kept", "loadBalance": false}}
	if !sameJSON(f.Map["restoredSubscriptions"], want) {
		t.Fatalf("restoredSubscriptions = %v, want only the granted %v", f.Map["restoredSubscriptions"], want)
	}
}

func TestAuthOrganisationConnectionLimit(t *testing.T) {
	ts := demoTokensWith(func(g *auth.Grant) { g.MaxConnections = 1 })
	s := startWith(t, ts, nil)
	first := authed(t, s, "dev-token-alice")

	second := testpeer.Dial(t, s.Addr().String())
	second.Send("type", "auth", "token", "dev-token-bob")
	second.ExpectFields("type", "auth", "success", false, "error", "connection_limit_reached")
	expectPong(t, second) // the socket stays open (OQ-43)

	_ = first.Conn.Close()
	// The slot is released once the server has seen the close; a new
	// connection of the organisation then gets in.
	waitFor(t, 5*time.Second, func() bool {
		p := testpeer.Dial(t, s.Addr().String())
		defer p.Conn.Close()
		p.Send("type", "auth", "token", "dev-token-alice")
		f := p.ExpectType("auth")
		return f.Map["success"] == true
	})
}

func TestAuthIgnoresUnknownFields(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	// Python sends loadBalance/loadBalanceGroup in auth, the old Go SDK an id
	// (§2.1).
	p.Auth("dev-token-alice", "projectId", "demo-project", "loadBalance", true,
		"loadBalanceGroup", "workers", "id", 42, "somethingNew", map[string]any{"a": 1})
}
