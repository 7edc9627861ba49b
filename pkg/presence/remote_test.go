package presence

import (
	"fmt"
	"testing"
)

func remoteMember(node, id, actor string, joined int64) Member[int] {
	return Member[int]{Node: node, ID: id, ActorTokenID: actor, Presence: []byte{0xc0}, JoinedAt: joined}
}

func TestRemoteMembersReachLocalMembersAndWatchersOnly(t *testing.T) {
	tests := []struct {
		name string
		give func(rg *Registry[int]) []Event[int]
		want string
	}{
		{"a remote join and update go to local members and watchers", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.Watch(9, "lobby-a", []Room{general})
			return rg.SetRemote(general, remoteMember("b", "c7", "bob", 11))
		}, "1:join:general:bob 9:join:general:bob@lobby-a 1:update:general:bob 9:update:general:bob@lobby-a "},
		{"a second set of the same remote member only updates", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.SetRemote(general, remoteMember("b", "c7", "bob", 11))
			return rg.SetRemote(general, remoteMember("b", "c7", "bob", 11))
		}, "1:update:general:bob "},
		{"a remote member moving rooms leaves the old one first", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.Set(random, Member[int]{Conn: 2, ActorTokenID: "carol"}, 10)
			rg.SetRemote(general, remoteMember("b", "c7", "bob", 11))
			return rg.SetRemote(random, remoteMember("b", "c7", "bob", 12))
		}, "1:leave:general:bob 2:join:random:bob 2:update:random:bob "},
		{"a remote leave", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.SetRemote(general, remoteMember("b", "c7", "bob", 11))
			return rg.LeaveRemote("b", "c7")
		}, "1:leave:general:bob "},
		{"leaving twice is a no-op", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.SetRemote(general, remoteMember("b", "c7", "bob", 11))
			rg.LeaveRemote("b", "c7")
			return rg.LeaveRemote("b", "c7")
		}, ""},
		{"the same connection id on two nodes is two members", func(rg *Registry[int]) []Event[int] {
			rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
			rg.SetRemote(general, remoteMember("b", "c7", "bob", 11))
			rg.SetRemote(general, remoteMember("c", "c7", "dan", 11))
			return rg.LeaveRemote("c", "c7")
		}, "1:leave:general:dan "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kinds(tt.give(New[int]())); got != tt.want {
				t.Fatalf("events\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestDropNodeLeavesEveryMemberOfThatNode(t *testing.T) {
	rg := New[int]()
	rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 10)
	rg.Watch(9, "lobby-a", []Room{random})
	for i := 0; i < 3; i++ {
		rg.SetRemote(general, remoteMember("b", fmt.Sprint("g", i), fmt.Sprint("bob", i), 11))
		rg.SetRemote(random, remoteMember("b", fmt.Sprint("r", i), fmt.Sprint("rob", i), 11))
	}
	rg.SetRemote(general, remoteMember("c", "x", "carl", 12))
	evs := rg.DropNode("b")
	leaves := map[string]int{}
	for _, e := range evs {
		if e.Kind != Leave || e.Member.Node != "b" {
			t.Fatalf("unexpected event %+v", e)
		}
		leaves[fmt.Sprint(e.To, e.LobbySlug)]++
	}
	if leaves["1"] != 3 || leaves["9lobby-a"] != 3 || len(leaves) != 2 {
		t.Fatalf("leaves by receiver = %v, want 3 to member 1 and 3 to watcher 9", leaves)
	}
	if ms := rg.Members(general.ID); len(ms) != 2 || ms[0].ActorTokenID != "alice" || ms[1].ActorTokenID != "carl" {
		t.Fatalf("general after dropping b: %d members", len(ms))
	}
	if got := rg.DropNode("b"); len(got) != 0 {
		t.Fatalf("dropping b again gave %d events", len(got))
	}
	rg.DropNode("c")
	rg.Disconnect(1)
	rg.Disconnect(9)
	if rooms, members, watches := rg.Stats(); rooms+members+watches != 0 || len(rg.remoteIn)+len(rg.byNode) != 0 {
		t.Fatalf("left behind: rooms=%d members=%d watches=%d remote=%d nodes=%d", rooms, members, watches, len(rg.remoteIn), len(rg.byNode))
	}
}

func TestMembersListsLocalAndRemoteOldestFirst(t *testing.T) {
	rg := New[int]()
	rg.Set(general, Member[int]{Conn: 1, ActorTokenID: "alice"}, 20)
	rg.SetRemote(general, remoteMember("b", "1", "bob", 10))
	rg.SetRemote(general, remoteMember("b", "2", "carol", 30))
	rg.Set(general, Member[int]{Conn: 2, ActorTokenID: "dan"}, 20)
	got := ""
	for _, m := range rg.Members(general.ID) {
		got += m.ActorTokenID + " "
	}
	if got != "bob alice dan carol " {
		t.Fatalf("members = %q, want bob alice dan carol", got)
	}
	snap := rg.Watch(9, "l", []Room{general})
	if len(snap[general]) != 4 {
		t.Fatalf("lobby snapshot lists %d members, want 4 (2 local, 2 remote)", len(snap[general]))
	}
}
