package acl

import "testing"

func TestResolve(t *testing.T) {
	demo := Rules{demoRule}
	wildFirst := Rules{
		{Pattern: "acme/#", Permission: PermPubSub, AppID: "acme"},
		{Pattern: "acme/lobby/chat", Topic: "room-1/chat", Permission: PermPubSub, RoomID: "room-1", AppID: "acme"},
	}
	tests := []struct {
		name   string
		rules  Rules
		give   string
		want   Resolution
		wantOK bool
	}{
		{"demo concrete", demo, "demo/general/messages",
			Resolution{Key: "demo-app/demo/general/messages", AppID: "demo-app"}, true},
		{"demo plus", demo, "demo/general/+",
			Resolution{Key: "demo-app/demo/general/+", AppID: "demo-app"}, true},
		{"demo literal rule pattern is not exact", demo, "demo/general/#",
			Resolution{Key: "demo-app/demo/general/#", AppID: "demo-app"}, true},
		{"demo parent", demo, "demo/general",
			Resolution{Key: "demo-app/demo/general", AppID: "demo-app"}, true},
		{"demo other", demo, "demo/other/x", Resolution{}, false},
		{"demo uncovered wildcard", demo, "demo/+/x", Resolution{}, false},
		{"exact beats earlier wildcard", wildFirst, "acme/lobby/chat",
			Resolution{Key: "room-1/chat", AppID: "acme", RoomID: "room-1", Exact: true, Rule: 1}, true},
		{"wildcard next to exact", wildFirst, "acme/lobby/other",
			Resolution{Key: "acme/acme/lobby/other", AppID: "acme"}, true},
		{"exact rule as wildcard match", wildFirst[1:], "acme/lobby/chat",
			Resolution{Key: "room-1/chat", AppID: "acme", RoomID: "room-1", Exact: true}, true},
		{"first exact wins", Rules{
			{Pattern: "a/b", Topic: "t1", RoomID: "r1"},
			{Pattern: "a/b", Topic: "t2", RoomID: "r2"},
		}, "a/b", Resolution{Key: "t1", AppID: "unscoped", RoomID: "r1", Exact: true}, true},
		{"equal pattern without topic is not exact", Rules{
			{Pattern: "a/#", AppID: "one"},
			{Pattern: "a/b", AppID: "two"},
			{Pattern: "a/b", Topic: "t3", AppID: "three"},
		}, "a/b", Resolution{Key: "t3", AppID: "three", Exact: true, Rule: 2}, true},
		{"first matching wildcard in list order", Rules{
			{Pattern: "x/#", AppID: "x"},
			{Pattern: "a/+", AppID: "plus"},
			{Pattern: "a/#", AppID: "hash"},
		}, "a/b", Resolution{Key: "plus/a/b", AppID: "plus", Rule: 1}, true},
		{"wildcard pattern needs covering rule", Rules{
			{Pattern: "a/+", AppID: "plus"},
			{Pattern: "a/#", AppID: "hash"},
		}, "a/#", Resolution{Key: "hash/a/#", AppID: "hash", Rule: 1}, true},
		{"permission ignored", Rules{{Pattern: "a/#", Permission: PermNone, AppID: "app"}},
			"a/b", Resolution{Key: "app/a/b", AppID: "app"}, true},
		{"unscoped", Rules{{Pattern: "#", Permission: PermPubSub}},
			"x/y", Resolution{Key: "unscoped/x/y", AppID: "unscoped"}, true},
		{"rule apps kept apart", Rules{
			{Pattern: "one/#", AppID: "app-one"},
			{Pattern: "two/#", AppID: "app-two"},
		}, "two/r/t", Resolution{Key: "app-two/two/r/t", AppID: "app-two", Rule: 1}, true},
		{"empty rules", Rules{}, "a", Resolution{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.rules.Resolve(tt.give)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("Resolve(%q) = %+v, %v; want %+v, %v", tt.give, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRoomBySlug(t *testing.T) {
	rules := Rules{
		{Pattern: "a/#"},
		demoRule,
		{Pattern: "demo/general/x", RoomSlug: "general", RoomID: "room-later"},
		{Pattern: "demo/lobby/#", RoomSlug: "lobby", RoomID: "room-lobby"},
	}
	tests := []struct {
		give   string
		want   string
		wantOK bool
	}{
		{"general", "room-general", true},
		{"lobby", "room-lobby", true},
		{"General", "", false},
		{"missing", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			got, ok := rules.RoomBySlug(tt.give)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("RoomBySlug(%q) = %q, %v; want %q, %v", tt.give, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}
