package acl

import "testing"

func TestEffectivePattern(t *testing.T) {
	scoped := Rules{
		{Pattern: "app/acme/+/#", Permission: PermPubSub},
		{Pattern: "app/lobby/#", Permission: PermPubSub},
	}
	pubOnly := Rules{{Pattern: "app/acme/+/#", Permission: PermPublish}}
	subOnly := Rules{{Pattern: "app/acme/+/#", Permission: PermSubscribe}}
	type give struct {
		rules   Rules
		pattern string
		scope   string
		op      Op
	}
	tests := []struct {
		name string
		give give
		want string
	}{
		{"injects", give{scoped, "app/room/chat", "acme", OpSubscribe}, "app/acme/room/chat"},
		{"injects for publish", give{scoped, "app/room/chat", "acme", OpPublish}, "app/acme/room/chat"},
		{"injects wildcard subscribe", give{scoped, "app/room/+", "acme", OpSubscribe}, "app/acme/room/+"},
		{"allowed as sent", give{scoped, "app/lobby/chat", "acme", OpSubscribe}, "app/lobby/chat"},
		{"already scoped", give{scoped, "app/acme/room/chat", "acme", OpSubscribe}, "app/acme/room/chat"},
		{"no scope", give{scoped, "app/room/chat", "", OpSubscribe}, "app/room/chat"},
		{"scoped form denied", give{scoped, "app/room/chat", "other", OpSubscribe}, "app/room/chat"},
		{"no slash", give{Rules{{Pattern: "app/acme", Permission: PermPubSub}}, "app", "acme", OpSubscribe}, "app"},
		{"trailing slash", give{Rules{{Pattern: "app/acme/", Permission: PermPubSub}}, "app/", "acme", OpSubscribe}, "app/acme/"},
		// OQ-21: the permission checked is the one of op.
		{"publish-only grant injects publish", give{pubOnly, "app/room/chat", "acme", OpPublish}, "app/acme/room/chat"},
		{"publish-only grant keeps subscribe", give{pubOnly, "app/room/chat", "acme", OpSubscribe}, "app/room/chat"},
		{"subscribe-only grant keeps publish", give{subOnly, "app/room/chat", "acme", OpPublish}, "app/room/chat"},
		{"wildcard publish never injects", give{scoped, "app/room/+", "acme", OpPublish}, "app/room/+"},
		{"empty rules", give{nil, "app/room/chat", "acme", OpSubscribe}, "app/room/chat"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.give
			if got := g.rules.EffectivePattern(g.pattern, g.scope, g.op); got != tt.want {
				t.Fatalf("EffectivePattern(%q, %q, %v) = %q, want %q", g.pattern, g.scope, g.op, got, tt.want)
			}
		})
	}
}
