package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// presenceTokens adds a second room and a lobby over both rooms to the demo
// grants; "dev-token-eve" may see neither the lobby nor room "random".
func presenceTokens() tokens {
	tk := demoTokens()
	for _, g := range tk {
		g.Rules = append(g.Rules, acl.Rule{Pattern: "demo/random/#", Permission: acl.PermPubSub,
			RoomID: "room-random", RoomSlug: "random", AppID: "demo-app"})
		g.Lobbies = []auth.Lobby{{Slug: "all-rooms", ID: "lobby-1", Rooms: []string{"general", "room-random"}}}
	}
	tk["dev-token-eve"] = demoGrant("eve")
	return tk
}

func startPresence(t *testing.T) string {
	s := start(t, func(c *testConfig) { c.Auth = presenceTokens() })
	return s.Addr().String()
}

// TestPresenceTwoActorsInOneRoom follows the two-actor room of wire-reference.md §7.1.
func TestPresenceTwoActorsInOneRoom(t *testing.T) {
	addr := startPresence(t)
	alice := testpeer.Dial(t, addr)
	alice.Auth("dev-token-alice")
	alice.Send("type", "presence", "roomId", "general", "data", map[string]any{"name": "alice"})
	alice.ExpectFields("type", "presence", "event", "join", "data", map[string]any{"actor_token_id": "alice", "presence": map[string]any{"name": "alice"}})
	alice.ExpectFields("type", "presence", "event", "update")

	bob := testpeer.Dial(t, addr)
	bob.Auth("dev-token-bob")
	bob.Send("type", "presence", "roomId", "general", "data", map[string]any{"name": "bob"})
	for _, p := range []*testpeer.Peer{alice, bob} {
		p.ExpectFields("type", "presence", "event", "join", "data", map[string]any{"actor_token_id": "bob", "presence": map[string]any{"name": "bob"}})
		p.ExpectFields("type", "presence", "event", "update")
	}
	bob.Send("type", "getPresence", "roomId", "general")
	list := bob.ExpectFields("type", "presenceList", "roomId", "general")
	items, _ := list.Map["data"].([]any)
	if len(items) != 2 {
		t.Fatalf("presenceList = %s", list)
	}
	first := items[0].(map[string]any)
	if first["actorTokenId"] != "alice" || first["status"] != "online" || first["joinedAt"] == nil {
		t.Fatalf("first item = %v", first)
	}
	_ = bob.Conn.Close()
	alice.ExpectFields("type", "presence", "event", "leave", "data", map[string]any{"actor_token_id": "bob"})
}

// TestPresenceOneActorTwoConnections checks that presence is per connection
// (OQ-20): both connections are listed, and closing one sends leave.
func TestPresenceOneActorTwoConnections(t *testing.T) {
	addr := startPresence(t)
	a1, a2 := testpeer.Dial(t, addr), testpeer.Dial(t, addr)
	a1.Auth("dev-token-alice")
	a2.Auth("dev-token-alice")
	a1.Send("type", "presence", "roomId", "general", "data", 1)
	a1.ExpectFields("event", "join")
	a1.ExpectFields("event", "update")
	a2.Send("type", "presence", "roomId", "general", "data", 2)
	a1.ExpectFields("event", "join", "data", map[string]any{"actor_token_id": "alice", "presence": 2})
	a1.ExpectFields("event", "update")
	a2.ExpectFields("event", "join")
	a2.ExpectFields("event", "update")
	a2.Send("type", "getPresence", "roomId", "general")
	if items := a2.ExpectFields("type", "presenceList").Map["data"].([]any); len(items) != 2 {
		t.Fatalf("want both connections listed, got %v", items)
	}
	_ = a2.Conn.Close()
	a1.ExpectFields("event", "leave", "data", map[string]any{"actor_token_id": "alice"})
}

// TestPresenceRoomSwitch checks that a connection is in one room at a time:
// switching sends leave in the old room, to the leaver too (§7.1).
func TestPresenceRoomSwitch(t *testing.T) {
	addr := startPresence(t)
	alice, bob := testpeer.Dial(t, addr), testpeer.Dial(t, addr)
	alice.Auth("dev-token-alice")
	bob.Auth("dev-token-bob")
	bob.Send("type", "presence", "roomId", "general", "data", "bob")
	bob.ExpectFields("event", "join")
	bob.ExpectFields("event", "update")
	alice.Send("type", "presence", "roomId", "general", "data", "alice")
	alice.ExpectFields("event", "join")
	alice.ExpectFields("event", "update")
	bob.ExpectFields("event", "join")
	bob.ExpectFields("event", "update")

	alice.Send("type", "presence", "roomId", "random", "data", "alice")
	alice.ExpectFields("event", "leave")
	bob.ExpectFields("event", "leave", "data", map[string]any{"actor_token_id": "alice"})
	alice.ExpectFields("event", "join")
	alice.ExpectFields("event", "update")
	bob.ExpectNothing(100 * time.Millisecond)
}

// TestPresenceACL checks OQ-20: getPresence outside the grants returns an
// empty list, unknown slugs are ignored, no roomId lists nothing.
func TestPresenceACL(t *testing.T) {
	addr := startPresence(t)
	alice, eve := testpeer.Dial(t, addr), testpeer.Dial(t, addr)
	alice.Auth("dev-token-alice")
	eve.Auth("dev-token-eve")
	alice.Send("type", "presence", "roomId", "random", "data", "here")
	alice.ExpectFields("event", "join")
	alice.ExpectFields("event", "update")
	eve.Send("type", "getPresence", "roomId", "random")
	eve.ExpectFields("type", "presenceList", "roomId", "random", "data", []any{})
	eve.Send("type", "presence", "roomId", "random", "data", "sneaking")
	eve.Send("type", "getPresence")
	f := eve.ExpectFields("type", "presenceList", "data", []any{})
	if _, ok := f.Map["roomId"]; ok {
		t.Fatalf("roomId present without one asked: %s", f)
	}
	alice.ExpectNothing(100 * time.Millisecond)
	eve.Send("type", "lobbySubscribe", "lobbyId", "all-rooms")
	eve.ExpectFields("type", "error", "error", "not_authorized", "lobbyId", "all-rooms")
	eve.Send("type", "getLobbyPresence", "lobbyId", "all-rooms")
	eve.ExpectFields("type", "error", "error", "not_authorized", "lobbyId", "all-rooms")
}

// TestLobbySnapshotAndEvents checks OQ-18/OQ-19: the first lobbySubscribe
// carries the complete snapshot, and changes in member rooms arrive as
// lobbyPresence with the slug the client subscribed with.
func TestLobbySnapshotAndEvents(t *testing.T) {
	addr := startPresence(t)
	alice := testpeer.Dial(t, addr)
	alice.Auth("dev-token-alice")
	alice.Send("type", "presence", "roomId", "general", "data", map[string]any{"mood": "ok"})
	alice.ExpectFields("event", "join")
	alice.ExpectFields("event", "update")

	watcher := testpeer.Dial(t, addr)
	watcher.Auth("dev-token-bob")
	watcher.Send("type", "lobbySubscribe", "lobbyId", "all-rooms")
	snap := watcher.ExpectFields("type", "lobbySubscribed", "lobbyId", "all-rooms")
	state := snap.Map["presence"].(map[string]any)
	general := state["general"].(map[string]any)
	if rec := general["alice"].(map[string]any); rec["actorTokenId"] != "alice" || rec["joinedAt"] == nil {
		t.Fatalf("snapshot = %s", snap)
	}
	if random, ok := state["random"].(map[string]any); !ok || len(random) != 0 {
		t.Fatalf("empty room should be {}: %s", snap)
	}

	bob := testpeer.Dial(t, addr)
	bob.Auth("dev-token-bob")
	bob.Send("type", "presence", "roomId", "random", "data", "hi")
	watcher.ExpectFields("type", "lobbyPresence", "event", "join", "lobbyId", "all-rooms", "roomId", "random", "actorId", "bob", "data", "hi")
	watcher.ExpectFields("type", "lobbyPresence", "event", "update", "data", "hi")
	_ = bob.Conn.Close()
	watcher.ExpectFields("type", "lobbyPresence", "event", "leave", "roomId", "random", "data", map[string]any{})

	watcher.Send("type", "getLobbyPresence", "lobbyId", "all-rooms")
	watcher.ExpectFields("type", "lobbyPresenceList", "lobbyId", "all-rooms")
	watcher.Send("type", "lobbyUnsubscribe", "lobbyId", "all-rooms")
	watcher.ExpectFields("type", "lobbyUnsubscribed", "lobbyId", "all-rooms")
	alice.Send("type", "presence", "roomId", "general", "data", "again")
	alice.ExpectFields("event", "update")
	watcher.ExpectNothing(100 * time.Millisecond)
}

// TestPresenceTablesEmptyAfterDisconnects checks §7.6: after 1,000
// connections join a room (some also watching the lobby) and drop, nothing
// of them remains in the presence registry or the hub.
func TestPresenceTablesEmptyAfterDisconnects(t *testing.T) {
	s := start(t, func(c *testConfig) { c.Auth = presenceTokens() })
	addr := s.Addr().String()
	var wg sync.WaitGroup
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				p := testpeer.Dial(t, addr)
				p.Auth("dev-token-bob")
				room := "general"
				if i%2 == 0 {
					room = "random"
				}
				p.Send("type", "presence", "roomId", room, "data", i)
				if i%10 == 0 {
					p.Send("type", "lobbySubscribe", "lobbyId", "all-rooms")
				}
				p.Send("type", "subscribe", "topic", "demo/general/x")
				for {
					if f := p.Expect(); f.Type() == "subscribed" {
						break
					}
				}
				_ = p.Conn.Close()
			}
		}(w)
	}
	wg.Wait()
	waitFor(t, 10*time.Second, func() bool {
		rooms, members, watches := s.proto.PresenceStats()
		st := s.hub.Stats()
		return rooms+members+watches == 0 && st.Connections == 0 && st.Subscriptions == 0
	})
}

// TestPresenceIsRateAndSizeLimitedLikeAPublish: presence changes are
// broadcast, so they count toward the publish rate limit (42910) and their
// data toward the message size limit (42930).
func TestPresenceIsRateAndSizeLimitedLikeAPublish(t *testing.T) {
	tk := presenceTokens()
	tk["dev-token-alice"].RateLimit = 3
	tk["dev-token-alice"].MaxMessageSize = 16
	s := start(t, func(c *testConfig) { c.Auth = tk })
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "presence", "roomId", "general", "data", string(make([]byte, 32)))
	alice.ExpectFields("type", "error", "code", 42930, "error", "message_too_large", "maxSizeBytes", 16)
	limited := 0
	for i := 0; i < 10; i++ {
		alice.Send("type", "presence", "roomId", "general", "data", i)
	}
	for {
		f, err := alice.Read(300 * time.Millisecond)
		if err != nil {
			break
		}
		if f.Type() == "error" && fmt.Sprint(f.Map["code"]) == "42910" {
			limited++
		}
	}
	if limited < 4 { // at most 2 × 3 can pass if the burst straddles a second
		t.Fatalf("%d of 10 presence updates refused, want at least 4", limited)
	}
}
