package acl

import "testing"

// demoRule is the rule of the demo tokens (wire-reference.md §4.1).
var demoRule = Rule{
	Pattern:    "demo/general/#",
	Topic:      "demo-general",
	Permission: PermPubSub,
	RoomID:     "room-general",
	RoomSlug:   "general",
	AppID:      "demo-app",
	AppName:    "demo",
}

// checkCase is one Rules.Check input.
type checkCase struct {
	rules   Rules
	pattern string
	op      Op
}

func TestCheck(t *testing.T) {
	demo := Rules{demoRule}
	pubOnly := Rules{{Pattern: "chat/+/msgs", Permission: PermPublish}}
	subOnly := Rules{{Pattern: "chat/#", Permission: PermSubscribe}}
	tests := []struct {
		name string
		give checkCase
		want Decision
	}{
		{"demo publish", checkCase{demo, "demo/general/messages", OpPublish}, Allowed},
		{"demo subscribe", checkCase{demo, "demo/general/messages", OpSubscribe}, Allowed},
		{"demo parent", checkCase{demo, "demo/general", OpSubscribe}, Allowed},
		{"demo trailing slash", checkCase{demo, "demo/general/", OpPublish}, Allowed},
		{"demo subscribe plus", checkCase{demo, "demo/general/+", OpSubscribe}, Allowed},
		{"demo subscribe hash", checkCase{demo, "demo/general/#", OpSubscribe}, Allowed},
		{"demo subscribe plus deeper", checkCase{demo, "demo/general/+/x", OpSubscribe}, Allowed},
		{"demo case", checkCase{demo, "Demo/general/x", OpSubscribe}, DeniedNoRule},
		{"demo other room", checkCase{demo, "demo/other/x", OpSubscribe}, DeniedNoRule},
		{"demo other room publish", checkCase{demo, "demo/other/x", OpPublish}, DeniedNoRule},
		{"demo room wildcard", checkCase{demo, "demo/+/x", OpSubscribe}, DeniedNoRule},
		{"demo app wildcard", checkCase{demo, "demo/#", OpSubscribe}, DeniedNoRule},
		{"demo everything", checkCase{demo, "#", OpSubscribe}, DeniedNoRule},
		{"publish plus", checkCase{demo, "demo/general/+", OpPublish}, DeniedNoRule},
		{"publish hash", checkCase{demo, "demo/general/#", OpPublish}, DeniedNoRule},
		{"publish-only subscribe", checkCase{pubOnly, "chat/a/msgs", OpSubscribe}, DeniedPermission},
		{"publish-only publish", checkCase{pubOnly, "chat/a/msgs", OpPublish}, Allowed},
		{"publish-only other", checkCase{pubOnly, "chat/a/other", OpSubscribe}, DeniedNoRule},
		{"subscribe-only publish", checkCase{subOnly, "chat/a", OpPublish}, DeniedPermission},
		{"subscribe-only wildcard", checkCase{subOnly, "chat/+", OpSubscribe}, Allowed},
		{"none permission", checkCase{Rules{{Pattern: "#"}}, "x", OpSubscribe}, DeniedPermission},
		{"any adequate rule", checkCase{append(pubOnly, subOnly...), "chat/a/msgs", OpSubscribe}, Allowed},
		{"empty rules", checkCase{Rules{}, "demo/general/messages", OpSubscribe}, DeniedNoRule},
		{"nil rules", checkCase{nil, "#", OpSubscribe}, DeniedNoRule},
		{"plus rule empty level", checkCase{Rules{{Pattern: "a/+/c", Permission: PermPubSub}}, "a//c", OpPublish}, Allowed},
		{"plus rule too long", checkCase{Rules{{Pattern: "a/+/c", Permission: PermPubSub}}, "a/b/c/d", OpPublish}, DeniedNoRule},
		{"plus rule vs hash", checkCase{Rules{{Pattern: "a/+/c", Permission: PermPubSub}}, "a/#", OpSubscribe}, DeniedNoRule},
		{"undefined op", checkCase{demo, "demo/general/x", Op(0)}, DeniedPermission},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.give.rules.Check(tt.give.pattern, tt.give.op); got != tt.want {
				t.Fatalf("Check(%q, %v) = %v, want %v", tt.give.pattern, tt.give.op, got, tt.want)
			}
		})
	}
}

func TestHint(t *testing.T) {
	type give struct {
		d  Decision
		op Op
	}
	tests := []struct {
		give give
		want string
	}{
		{give{Allowed, OpSubscribe}, ""},
		{give{Allowed, OpPublish}, ""},
		{give{DeniedNoRule, OpSubscribe}, "topic is outside this token's grants"},
		{give{DeniedNoRule, OpPublish}, "topic is outside this token's grants"},
		{give{DeniedPermission, OpSubscribe}, "permission subscribe not granted for this topic"},
		{give{DeniedPermission, OpPublish}, "permission publish not granted for this topic"},
		{give{Decision(0), OpPublish}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.give.d.String()+"/"+tt.give.op.String(), func(t *testing.T) {
			if got := tt.give.d.Hint(tt.give.op); got != tt.want {
				t.Fatalf("Hint = %q, want %q", got, tt.want)
			}
		})
	}
}
