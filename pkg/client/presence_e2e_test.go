package client_test

import (
	"errors"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/client"
)

func TestPresenceAndLobbies(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	bobEvents := make(chan client.PresenceEvent, 16)
	lobbyEvents := make(chan client.LobbyPresenceEvent, 16)
	bob := b.dial(t, "dev-token-bob", client.Options{
		OnPresence:      func(e client.PresenceEvent) { bobEvents <- e },
		OnLobbyPresence: func(e client.LobbyPresenceEvent) { lobbyEvents <- e },
	})
	state, err := bob.SubscribeLobby(ctxT(t), "all-rooms")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := state["general"]; !ok || len(state["general"]) != 0 {
		t.Fatalf("lobby snapshot %+v", state)
	}
	if _, err := bob.SubscribeLobby(ctxT(t), "not-mine"); !errors.Is(err, client.ErrNotAuthorized) {
		t.Fatalf("lobby outside the grants: %v", err)
	}
	if err := bob.SetPresence(ctxT(t), "general", map[string]string{"name": "bob"}); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, bobEvents); e.Event != "join" || e.ActorTokenID != "bob" {
		t.Fatalf("bob's own join: %+v", e)
	}
	recv(t, bobEvents) // update
	if e := recv(t, lobbyEvents); e.Event != "join" || e.LobbyID != "all-rooms" || e.RoomID != "general" || e.ActorID != "bob" {
		t.Fatalf("lobby event %+v", e)
	}
	recv(t, lobbyEvents) // update

	alice := b.dial(t, "dev-token-alice", client.Options{})
	if err := alice.SetPresence(ctxT(t), "general", map[string]string{"name": "alice"}); err != nil {
		t.Fatal(err)
	}
	e := recv(t, bobEvents)
	if e.Event != "join" || e.ActorTokenID != "alice" || e.Presence.String() != `{"name":"alice"}` {
		t.Fatalf("alice's join as bob saw it: %+v", e)
	}
	members, err := alice.GetPresence(ctxT(t), "general")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, m := range members {
		names[m.ActorTokenID] = m.Presence.String()
		if m.Status != "online" || m.JoinedAt.IsZero() {
			t.Fatalf("member %+v", m)
		}
	}
	if len(members) != 2 || names["alice"] != `{"name":"alice"}` || names["bob"] != `{"name":"bob"}` {
		t.Fatalf("presence list %+v", members)
	}
	snap, err := bob.GetLobbyPresence(ctxT(t), "all-rooms")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap["general"]) != 2 || snap["general"]["bob"].Presence.String() != `{"name":"bob"}` {
		t.Fatalf("lobby presence %+v", snap)
	}
	_ = alice.Close()
	for e := range bobEvents {
		if e.Event == "leave" && e.ActorTokenID == "alice" {
			break
		}
	}
}

// TestPresenceRestoredAfterRestart: after the broker restarts, the client
// sets its presence again and re-subscribes its lobby.
func TestPresenceRestoredAfterRestart(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	connects := make(chan struct{}, 4)
	bob := b.dial(t, "dev-token-bob", client.Options{ReconnectDelay: 10 * time.Millisecond, ReconnectJitter: -1,
		OnConnect: func(client.Info) { connects <- struct{}{} }})
	recv(t, connects)
	if err := bob.SetPresence(ctxT(t), "general", map[string]string{"name": "bob"}); err != nil {
		t.Fatal(err)
	}
	b.restart()
	recv(t, connects)
	alice := b.dial(t, "dev-token-alice", client.Options{})
	waitFor(t, "bob's presence to come back", func() bool {
		m, err := alice.GetPresence(ctxT(t), "general")
		return err == nil && len(m) == 1 && m[0].ActorTokenID == "bob"
	})
}

func TestRetainedMessage(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	alice := b.dial(t, "dev-token-alice", client.Options{})
	if err := alice.Publish(ctxT(t), "demo/general/status", "online", client.Retain()); err != nil {
		t.Fatal(err)
	}
	bob := b.dial(t, "dev-token-bob", client.Options{})
	h, got := collect()
	if err := bob.Subscribe(ctxT(t), "demo/general/status", h); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got); d.data.String() != `"online"` || d.meta.Sender != "alice" {
		t.Fatalf("retained delivery %s %+v", d.data, d.meta)
	}
	// A retained nil clears it (after being delivered as usual).
	if err := alice.Publish(ctxT(t), "demo/general/status", nil, client.Retain()); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, got); !d.data.IsNil() {
		t.Fatalf("nil arrived as %s", d.data)
	}
	carol := b.dial(t, "dev-token-bob", client.Options{})
	h2, got2 := collect()
	if err := carol.Subscribe(ctxT(t), "demo/general/status", h2); err != nil {
		t.Fatal(err)
	}
	nothing(t, got2, 100*time.Millisecond)
}
