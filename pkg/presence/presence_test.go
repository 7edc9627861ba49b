package presence

import (
	"fmt"
	"testing"
)

func kinds(evs []Event[int]) string {
	s := ""
	for _, e := range evs {
		s += fmt.Sprintf("%d:%s:%s:%s%s ", e.To, e.Kind, e.Room.Slug, e.Member.ActorTokenID, lobby(e))
	}
	return s
}

func lobby(e Event[int]) string {
	if e.LobbySlug == "" {
		return ""
	}
	return "@" + e.LobbySlug
}

var (
	general = Room{ID: "room-general", Slug: "general"}
	random  = Room{ID: "room-random", Slug: "random"}
)

func TestSetJoinUpdateSwitchLeave(t *testing.T) {
	tests := []struct {
		name string
		give func(rg *Registry[int]) []Event[int]
		want string
	}{
		{"first set joins then updates", func(rg *Registry[int]) []Event[int] {
			return rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
		}, "1:join:general:alice 1:update:general:alice "},
		{"second member reaches both", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			return rg.Set(general, Member[int]{Conn: 2, ActorTokenID: "bob"}, 10)
		}, "1:join:general:bob 2:join:general:bob 1:update:general:bob 2:update:general:bob "},
		{"later set only updates", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			return rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 11)
		}, "1:update:general:alice "},
		{"switching rooms leaves the old one first", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.Set(general, Member[int]{Conn: 2, ActorTokenID: "bob"}, 10)
			return rg.Set(random, Member[int]{Conn: 1, ActorTokenID: "alice"}, 11)
		}, "1:leave:general:alice 2:leave:general:alice 1:join:random:alice 1:update:random:alice "},
		{"disconnect leaves", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.Set(general, Member[int]{Conn: 2, ActorTokenID: "bob"}, 10)
			return rg.Disconnect(2)
		}, "1:leave:general:bob 2:leave:general:bob "},
		{"watchers get lobby events under their slug", func(rg *Registry[int]) []Event[int] {
			rg.Watch(9, "lobby-a", []Room{general, random})
			return rg.Set(random, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
		}, "1:join:random:alice 9:join:random:alice@lobby-a 1:update:random:alice 9:update:random:alice@lobby-a "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kinds(tt.give(New[int]())); got != tt.want {
				t.Fatalf("events\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestWatchSnapshotIsCompleteOnFirstCall(t *testing.T) {
	rg := New[int]()
	rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice", Presence: []byte{0xc0}}, 10)
	snap := rg.Watch(9, "lobby-a", []Room{general, random})
	if len(snap) != 2 || len(snap[general]) != 1 || snap[general][0].ActorTokenID != "alice" || len(snap[random]) != 0 {
		t.Fatalf("snapshot = %v", snap)
	}
}

func TestRegistryEmptiesAfterEveryoneLeaves(t *testing.T) {
	rg := New[int]()
	for i := 0; i < 1000; i++ {
		r := general
		if i%2 == 0 {
			r = random
		}
		rg.Set(r, Member[int]{Conn: i, ActorTokenID: fmt.Sprint(i)}, 1)
		if i%10 == 0 {
			rg.Watch(i, "lobby", []Room{general, random})
		}
	}
	for i := 0; i < 1000; i++ {
		rg.Disconnect(i)
	}
	rooms, members, watches := rg.Stats()
	if rooms+members+watches != 0 || len(rg.inRoom) != 0 || len(rg.lobbies) != 0 {
		t.Fatalf("left behind: rooms=%d members=%d watches=%d inRoom=%d lobbies=%d",
			rooms, members, watches, len(rg.inRoom), len(rg.lobbies))
	}
}

func TestUnwatchStopsEvents(t *testing.T) {
	rg := New[int]()
	rg.Watch(9, "lobby-a", []Room{general})
	rg.Unwatch(9, "lobby-a")
	if got := kinds(rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 1)); got != "1:join:general:alice 1:update:general:alice " {
		t.Fatalf("events after unwatch: %s", got)
	}
}
