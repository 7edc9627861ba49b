package server

import (
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// The cluster-wide presence and connection-limit tests run on any three
// nodes joined by a broker: the in-memory bus here, NATS in
// e2e_nats_test.go.

// presenceAcrossNodes: a member joining on node 0 is seen joining by a
// member on node 1 and by a lobby watcher on node 2, listed by
// getPresence and the lobby snapshot on node 2 with the local member, its
// update and its leave reach both, and kill(0) (the node stops without a
// goodbye, or closes) makes a second member of node 0 leave on node 1
// and node 2.
func presenceAcrossNodes(t *testing.T, nodes []*Server, kill func(i int)) {
	t.Helper()
	bob := authed(t, nodes[1], "dev-token-bob")
	bob.Send("type", "presence", "roomId", "general", "data", "bob")
	bob.ExpectFields("type", "presence", "event", "join", "data", map[string]any{"actor_token_id": "bob", "presence": "bob"})
	bob.ExpectFields("type", "presence", "event", "update")
	watcher := authed(t, nodes[2], "dev-token-bob")
	waitFor(t, 5*time.Second, func() bool {
		// The watcher's snapshot lists bob once node 1's presence reached node 2.
		watcher.Send("type", "getLobbyPresence", "lobbyId", "all-rooms")
		f := watcher.ExpectFields("type", "lobbyPresenceList")
		return len(lobbyMembers(f, "general")) == 1
	})
	watcher.Send("type", "lobbySubscribe", "lobbyId", "all-rooms")
	watcher.ExpectFields("type", "lobbySubscribed")

	alice := authed(t, nodes[0], "dev-token-alice")
	began := time.Now()
	alice.Send("type", "presence", "roomId", "general", "data", map[string]any{"name": "alice"})
	want := map[string]any{"actor_token_id": "alice", "presence": map[string]any{"name": "alice"}}
	bob.ExpectFields("type", "presence", "event", "join", "data", want)
	t.Logf("a join on node 0 reached node 1 in %v", time.Since(began).Round(time.Microsecond))
	bob.ExpectFields("type", "presence", "event", "update", "data", want)
	watcher.ExpectFields("type", "lobbyPresence", "event", "join", "lobbyId", "all-rooms", "roomId", "general")
	watcher.ExpectFields("type", "lobbyPresence", "event", "update")
	// Node 0 lists the member it learnt from node 1, with its own.
	alice.ExpectFields("type", "presence", "event", "join", "data", want)
	alice.ExpectFields("type", "presence", "event", "update")
	alice.Send("type", "getPresence", "roomId", "general")
	list := alice.ExpectFields("type", "presenceList", "roomId", "general")
	if items, _ := list.Map["data"].([]any); len(items) != 2 {
		t.Fatalf("node 0 lists %d members of general, want 2 (bob on node 1, alice): %s", len(items), list)
	}
	watcher.Send("type", "getLobbyPresence", "lobbyId", "all-rooms")
	if ms := lobbyMembers(watcher.ExpectFields("type", "lobbyPresenceList"), "general"); len(ms) != 2 {
		t.Fatalf("node 2's lobby snapshot lists %d members of general, want 2", len(ms))
	}

	alice.Send("type", "presence", "roomId", "general", "data", "away")
	bob.ExpectFields("type", "presence", "event", "update", "data", map[string]any{"actor_token_id": "alice", "presence": "away"})
	watcher.ExpectFields("type", "lobbyPresence", "event", "update")
	_ = alice.Conn.Close()
	bob.ExpectFields("type", "presence", "event", "leave", "data", map[string]any{"actor_token_id": "alice"})
	watcher.ExpectFields("type", "lobbyPresence", "event", "leave")

	carol := authed(t, nodes[0], "dev-token-alice")
	carol.Send("type", "presence", "roomId", "general", "data", "carol")
	bob.ExpectFields("type", "presence", "event", "join", "data", map[string]any{"actor_token_id": "alice", "presence": "carol"})
	bob.ExpectFields("type", "presence", "event", "update")
	watcher.ExpectFields("type", "lobbyPresence", "event", "join")
	watcher.ExpectFields("type", "lobbyPresence", "event", "update")
	began = time.Now()
	kill(0)
	bob.ExpectFields("type", "presence", "event", "leave", "data", map[string]any{"actor_token_id": "alice"})
	t.Logf("the leave of a member of the stopped node 0 reached node 1 in %v", time.Since(began).Round(time.Microsecond))
	watcher.ExpectFields("type", "lobbyPresence", "event", "leave")
	bob.Send("type", "getPresence", "roomId", "general")
	if items, _ := bob.ExpectFields("type", "presenceList").Map["data"].([]any); len(items) != 1 {
		t.Fatalf("node 1 lists %d members after node 0 stopped, want only bob", len(items))
	}
	bob.ExpectNothing(200 * time.Millisecond)
}

// lobbyMembers returns the members of room slug in a lobby state frame, by
// actor.
func lobbyMembers(f testpeer.Frame, slug string) map[string]any {
	rooms, _ := f.Map["presence"].(map[string]any)
	ms, _ := rooms[slug].(map[string]any)
	return ms
}

// connectionLimitAcrossNodes: an organisation limit of 3 holds across the
// nodes. With one connection on each node, a fourth on any node is refused;
// once one closes, a new one gets in on another node.
func connectionLimitAcrossNodes(t *testing.T, nodes []*Server) {
	t.Helper()
	var held []*testpeer.Peer
	for i := range 3 {
		held = append(held, authed(t, nodes[i], "dev-token-alice"))
		waitFor(t, 5*time.Second, func() bool { return orgTotal(nodes[(i+1)%3], "demo-org") == i+1 })
	}
	for i := range 3 {
		p := testpeer.Dial(t, nodes[i].Addr().String())
		p.Send("type", "auth", "token", "dev-token-bob")
		p.ExpectFields("type", "auth", "success", false, "error", "connection_limit_reached")
	}
	_ = held[0].Conn.Close()
	waitFor(t, 5*time.Second, func() bool { return orgTotal(nodes[2], "demo-org") == 2 })
	authed(t, nodes[2], "dev-token-bob")
}

// orgTotal is the organisation's connection count as node s sees it: its
// own and the other nodes'.
func orgTotal(s *Server, org string) int { return s.proto.Connections(org) }

func limitedPresenceTokens(limit int) tokens {
	ts := presenceTokens()
	for _, g := range ts {
		g.MaxConnections = limit
	}
	return ts
}

func TestPresenceAcrossNodes(t *testing.T) {
	nodes := cluster(t, 3, func(c *testConfig) { c.Auth = presenceTokens() })
	presenceAcrossNodes(t, nodes, func(i int) { _ = nodes[i].node.Broker().Close() })
}

func TestConnectionLimitAcrossNodes(t *testing.T) {
	nodes := cluster(t, 3, func(c *testConfig) { c.Auth = limitedPresenceTokens(3) })
	connectionLimitAcrossNodes(t, nodes)
}

var _ auth.Authenticator = tokens(nil)
