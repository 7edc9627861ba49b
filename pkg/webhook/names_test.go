package webhook_test

import (
	"testing"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

func TestRoomName(t *testing.T) {
	rules := acl.Rules{
		{Pattern: "demo/general/messages", Topic: "room-1/messages", Permission: acl.PermPubSub, RoomID: "room-1", RoomSlug: "general-slug", RoomName: "General"},
		{Pattern: "demo/lobby/#", Permission: acl.PermPubSub, RoomName: "The Lobby"},
		{Pattern: "demo/eu/support/#", Permission: acl.PermPubSub},
		{Pattern: "#", Permission: acl.PermPubSub},
	}
	tests := []struct {
		name      string
		pattern   string
		scopeSlug string
		want      string
	}{
		{name: "exact rule: room slug first", pattern: "demo/general/messages", want: "general-slug"},
		{name: "wildcard rule: its room name", pattern: "demo/lobby/chat", want: "The Lobby"},
		{name: "scoped pattern: the level after app and scope (OQ-22)", pattern: "demo/eu/support/tickets", scopeSlug: "eu", want: "support"},
		{name: "scoped actor, unscoped pattern", pattern: "demo/other/messages", scopeSlug: "eu", want: "other"},
		{name: "scope slug but three levels", pattern: "demo/eu/messages", scopeSlug: "eu", want: "eu"},
		{name: "no scope: second level", pattern: "demo/eu/support/tickets", want: "eu"},
		{name: "two levels", pattern: "demo/messages", want: "messages"},
		{name: "one level", pattern: "messages", want: "messages"},
		{name: "wildcard pattern", pattern: "demo/+/messages", want: "+"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, ok := rules.Resolve(tt.pattern)
			if !ok {
				t.Fatalf("Resolve(%q) failed", tt.pattern)
			}
			if got := webhook.RoomName(rules, res, tt.pattern, tt.scopeSlug); got != tt.want {
				t.Fatalf("RoomName(%q, %q) = %q, want %q", tt.pattern, tt.scopeSlug, got, tt.want)
			}
		})
	}
}

func TestRoomNameWithoutResolution(t *testing.T) {
	rules := acl.Rules{{Pattern: "demo/general/messages", RoomSlug: "never-used"}}
	for _, res := range []acl.Resolution{{}, {Key: "k", Rule: 5}, {Key: "k", Rule: -1}} {
		if got := webhook.RoomName(rules, res, "demo/general/messages", ""); got != "general" {
			t.Fatalf("RoomName with %+v = %q, want the fallback", res, got)
		}
	}
	if got := webhook.RoomName(nil, acl.Resolution{}, "", ""); got != "" {
		t.Fatalf("RoomName of an empty pattern = %q", got)
	}
}

func TestTopicName(t *testing.T) {
	for give, want := range map[string]string{
		"demo/general/messages": "messages",
		"demo/eu/room/chat":     "chat",
		"messages":              "messages",
		"demo/general/":         "",
		"":                      "",
	} {
		if got := webhook.TopicName(give); got != want {
			t.Errorf("TopicName(%q) = %q, want %q", give, got, want)
		}
	}
}

func TestNamesDoNotAllocate(t *testing.T) {
	rules := acl.Rules{{Pattern: "#", Permission: acl.PermPubSub}}
	res, ok := rules.Resolve("demo/eu/room/messages")
	if !ok {
		t.Fatal("no resolution")
	}
	allocs := testing.AllocsPerRun(100, func() {
		_ = webhook.RoomName(rules, res, "demo/eu/room/messages", "eu")
		_ = webhook.TopicName("demo/eu/room/messages")
	})
	if allocs != 0 {
		t.Fatalf("RoomName and TopicName allocate %v times", allocs)
	}
}
