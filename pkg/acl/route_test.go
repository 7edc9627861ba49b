package acl

import (
	"slices"
	"testing"
)

func TestPlace(t *testing.T) {
	demo := Rules{demoRule} // demo/general/# of app demo-app
	other := Rules{{Pattern: "demo/#", Permission: PermPubSub, AppID: "other-app"}}
	exact := Rules{{Pattern: "acme/lobby/chat", Topic: "room-1/chat", Permission: PermPubSub, AppID: "acme"}}
	dev := Rules{{Pattern: "#", Permission: PermPubSub, AppID: "dev-app"}}
	tests := []struct {
		name       string
		sets       []Rules
		give       string
		key, pat   string
		how        Placement
		candidates []string
	}{
		{"a client topic", []Rules{demo}, "demo/general/messages", "demo-app/demo/general/messages", "demo/general/messages", PlacedAsTopic, nil},
		{"its routing key", []Rules{demo}, "demo-app/demo/general/messages", "demo-app/demo/general/messages", "demo/general/messages", PlacedAsKey, nil},
		{"grants that agree", []Rules{demo, demo, exact}, "demo/general/x", "demo-app/demo/general/x", "demo/general/x", PlacedAsTopic, nil},
		{"grants that disagree", []Rules{demo, other}, "demo/general/x", "", "", PlacedAmbiguous,
			[]string{"demo-app/demo/general/x", "other-app/demo/general/x"}},
		{"an exact rule's topic", []Rules{exact}, "room-1/chat", "room-1/chat", "acme/lobby/chat", PlacedAsKey, nil},
		{"an exact rule's pattern", []Rules{exact}, "acme/lobby/chat", "room-1/chat", "acme/lobby/chat", PlacedAsTopic, nil},
		{"no grant routes it", []Rules{demo, exact}, "nowhere/x", "", "", PlacedNowhere, nil},
		{"a key of an app no rule covers", []Rules{demo}, "demo-app/other/x", "", "", PlacedNowhere, nil},
		{"no grants", nil, "demo/general/x", "", "", PlacedNowhere, nil},
		{"# of dev-app: a key first", []Rules{dev}, "dev-app/x/y", "dev-app/x/y", "x/y", PlacedAsKey, nil},
		{"# of dev-app: a topic", []Rules{dev}, "x/y", "dev-app/x/y", "x/y", PlacedAsTopic, nil},
	}
	for _, tt := range tests {
		key, pat, how, keys := Place(tt.sets, tt.give)
		if key != tt.key || pat != tt.pat || how != tt.how || !slices.Equal(keys, tt.candidates) {
			t.Errorf("%s: Place(%q) = %q, %q, %d, %v; want %q, %q, %d, %v", tt.name, tt.give,
				key, pat, how, keys, tt.key, tt.pat, tt.how, tt.candidates)
		}
	}
}
