package acl

import "testing"

func TestParsePermission(t *testing.T) {
	tests := []struct {
		give string
		want Permission
	}{
		{"subscribe", PermSubscribe},
		{"publish", PermPublish},
		{"pubSub", PermPubSub},
		{"pubsub", PermNone},
		{"PubSub", PermNone},
		{"Subscribe", PermNone},
		{" publish", PermNone},
		{"", PermNone},
		{"none", PermNone},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			if got := ParsePermission(tt.give); got != tt.want {
				t.Fatalf("ParsePermission(%q) = %v, want %v", tt.give, got, tt.want)
			}
		})
	}
}

func TestStrings(t *testing.T) {
	tests := []struct {
		give interface{ String() string }
		want string
	}{
		{PermNone, "none"},
		{PermSubscribe, "subscribe"},
		{PermPublish, "publish"},
		{PermPubSub, "pubSub"},
		{Permission(9), "Permission(9)"},
		{OpSubscribe, "subscribe"},
		{OpPublish, "publish"},
		{Op(0), "Op(0)"},
		{Allowed, "allowed"},
		{DeniedNoRule, "denied-no-rule"},
		{DeniedPermission, "denied-permission"},
		{Decision(0), "Decision(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.give.String(); got != tt.want {
				t.Fatalf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPermissionStringRoundTrips(t *testing.T) {
	for _, p := range []Permission{PermSubscribe, PermPublish, PermPubSub} {
		if got := ParsePermission(p.String()); got != p {
			t.Errorf("ParsePermission(%q) = %v, want %v", p.String(), got, p)
		}
	}
}

func TestRuleAllows(t *testing.T) {
	type give struct {
		perm Permission
		op   Op
	}
	tests := []struct {
		give give
		want bool
	}{
		{give{PermSubscribe, OpSubscribe}, true},
		{give{PermSubscribe, OpPublish}, false},
		{give{PermPublish, OpSubscribe}, false},
		{give{PermPublish, OpPublish}, true},
		{give{PermPubSub, OpSubscribe}, true},
		{give{PermPubSub, OpPublish}, true},
		{give{PermNone, OpSubscribe}, false},
		{give{PermNone, OpPublish}, false},
		{give{PermPubSub, Op(0)}, false},
		{give{Permission(9), OpPublish}, false},
	}
	for _, tt := range tests {
		t.Run(tt.give.perm.String()+"/"+tt.give.op.String(), func(t *testing.T) {
			r := Rule{Pattern: "#", Permission: tt.give.perm}
			if got := r.Allows(tt.give.op); got != tt.want {
				t.Fatalf("Allows = %v, want %v", got, tt.want)
			}
		})
	}
}
