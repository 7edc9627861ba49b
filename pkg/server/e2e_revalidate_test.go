package server

import (
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Periodic revalidation of live sessions (wire-reference.md §4.9, §3.5;
// decisions.md OQ-9, OQ-12, OQ-62).

const revalidateEvery = 200 * time.Millisecond

func startRevalidating(t *testing.T, lt *lockedTokens) *Server {
	t.Helper()
	return startWith(t, lt, func(c *testConfig) { c.Hub.RevalidateInterval = revalidateEvery })
}

func TestRevalidationDisconnectsARevokedActorWith4001(t *testing.T) {
	lt := newLockedTokens(demoTokens())
	s := startRevalidating(t, lt)
	p := authed(t, s, "dev-token-alice")
	// A pass that still finds the actor keeps the connection.
	waitFor(t, 5*time.Second, func() bool { return lt.revalidations() >= 1 })
	expectPong(t, p)

	lt.set("dev-token-alice", nil)
	f := p.ExpectFields("type", "disconnect", "reason", "token_revoked")
	if len(f.Map) != 2 {
		t.Fatalf("disconnect frame has extra keys: %s", f)
	}
	expectCloseCode(t, p, 4001, "token_revoked")
	p.ExpectEOF(5 * time.Second)
}

func TestRevalidationDropsSubscriptionsTheNewGrantNoLongerCovers(t *testing.T) {
	for _, tt := range []struct {
		name    string
		version int
		err     string
	}{
		{name: "v1", version: 1, err: "not_authorized"},
		{name: "v2", version: 2, err: "unknown_topic"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lt := newLockedTokens(demoTokens())
			s := startRevalidating(t, lt)
			alice := authed(t, s, "dev-token-alice", "protocolVersion", tt.version)
			subscribe(t, alice, "demo/general/lost")
			subscribe(t, alice, "demo/general/keep")

			narrower := demoGrant("alice")
			narrower.Rules = acl.Rules{{Pattern: "demo/general/keep", Permission: acl.PermPubSub, AppID: "demo-app"}}
			lt.set("dev-token-alice", narrower)
			alice.ExpectFields("type", "error", "code", 42940, "error", tt.err,
				"topic", "demo/general/lost", "detail", "access revoked")

			bob := authed(t, s, "dev-token-bob")
			bob.Send("type", "publish", "topic", "demo/general/lost", "data", "no longer yours")
			bob.Send("type", "publish", "topic", "demo/general/keep", "data", "still yours")
			alice.ExpectFields("type", "message", "topic", "demo/general/keep", "data", "still yours")
		})
	}
}

func TestRevalidationWhenTheBackendIsUnavailableKeepsTheConnection(t *testing.T) {
	lt := newLockedTokens(demoTokens())
	lt.unavailable = true
	s := startRevalidating(t, lt)
	p := authed(t, s, "dev-token-alice")
	subscribe(t, p, "demo/general/kept")
	waitFor(t, 5*time.Second, func() bool { return lt.revalidations() >= 1 })
	p.ExpectNothing(3 * revalidateEvery)
	p.Send("type", "publish", "topic", "demo/general/kept", "data", "x")
	p.ExpectFields("type", "message", "topic", "demo/general/kept")
}

func TestRevalidationAppliesTheNewGrantToLaterRequests(t *testing.T) {
	lt := newLockedTokens(demoTokens())
	s := startRevalidating(t, lt)
	p := authed(t, s, "dev-token-alice")
	wider := demoGrant("alice")
	wider.Rules = append(acl.Rules{{Pattern: "demo/extra/#", Permission: acl.PermPubSub, AppID: "demo-app"}}, wider.Rules...)
	// Calls are sequential per connection: call n+3 starts only once the
	// answer of call n+2, made after the change, is applied.
	n := lt.revalidations()
	lt.set("dev-token-alice", wider)
	waitFor(t, 5*time.Second, func() bool { return lt.revalidations() >= n+3 })
	subscribe(t, p, "demo/extra/room")
}

// TestRevalidationTakesARevokedRoomAndLobbyAway checks OQ-12 for presence: a
// grant that no longer holds the connection's room takes it out of the room
// (leave to the members) and a lobby no longer allowed stops its events.
func TestRevalidationTakesARevokedRoomAndLobbyAway(t *testing.T) {
	lt := newLockedTokens(presenceTokens())
	s := startRevalidating(t, lt)
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "lobbySubscribe", "lobbyId", "all-rooms")
	alice.ExpectFields("type", "lobbySubscribed")
	alice.Send("type", "presence", "roomId", "general", "data", "here")
	alice.ExpectFields("type", "presence", "event", "join")
	alice.ExpectFields("type", "lobbyPresence", "event", "join")
	alice.ExpectFields("type", "presence", "event", "update")
	alice.ExpectFields("type", "lobbyPresence", "event", "update")
	bob := authed(t, s, "dev-token-bob")
	bob.Send("type", "presence", "roomId", "general", "data", "also here")
	for _, p := range []*testpeer.Peer{bob, bob} {
		p.ExpectFields("type", "presence")
	}

	narrower := demoGrant("alice")
	narrower.Rules = acl.Rules{{Pattern: "demo/random/#", Permission: acl.PermPubSub,
		RoomID: "room-random", RoomSlug: "random", AppID: "demo-app"}}
	lt.set("dev-token-alice", narrower)
	bob.ExpectFields("type", "presence", "event", "leave", "data", map[string]any{"actor_token_id": "alice"})
	waitFor(t, 5*time.Second, func() bool {
		_, members, _ := s.proto.PresenceStats()
		return members == 1
	})
	bob.Send("type", "presence", "roomId", "general", "data", "after")
	bob.ExpectFields("type", "presence", "event", "update", "data", map[string]any{"actor_token_id": "bob", "presence": "after"})
	for {
		f, err := alice.Read(300 * time.Millisecond)
		if err != nil {
			break // nothing more
		}
		if f.Map["data"] == "after" || f.Map["actorId"] == "bob" && f.Map["event"] == "update" && f.Map["data"] == "after" {
			t.Fatalf("events of the revoked room or lobby still arrive: %s", f)
		}
	}
}
