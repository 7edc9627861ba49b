package topic

import "testing"

type pair struct{ rule, topic string }

func TestRuleMatches(t *testing.T) {
	tests := []struct {
		name string
		give pair
		want bool
	}{
		// The verified examples of wire-reference.md §4.4.
		{"demo messages", pair{"demo/general/#", "demo/general/messages"}, true},
		{"demo parent", pair{"demo/general/#", "demo/general"}, true},
		{"demo trailing slash", pair{"demo/general/#", "demo/general/"}, true},
		{"demo deep", pair{"demo/general/#", "demo/general/a/b"}, true},
		{"demo plus topic", pair{"demo/general/#", "demo/general/+"}, true},
		{"demo hash topic", pair{"demo/general/#", "demo/general/#"}, true},
		{"demo case", pair{"demo/general/#", "Demo/general/x"}, false},
		{"demo other room", pair{"demo/general/#", "demo/other/x"}, false},
		{"demo sibling prefix", pair{"demo/general/#", "demo/generalx"}, false},
		{"demo too short", pair{"demo/general/#", "demo"}, false},
		{"plus middle", pair{"a/+/c", "a/b/c"}, true},
		{"plus empty level", pair{"a/+/c", "a//c"}, true},
		{"plus too long", pair{"a/+/c", "a/b/c/d"}, false},
		{"plus too short", pair{"a/+/c", "a/c"}, false},
		// Wildcards at each level.
		{"plus first", pair{"+/b/c", "x/b/c"}, true},
		{"plus last", pair{"a/b/+", "a/b/x"}, true},
		{"plus last empty", pair{"a/b/+", "a/b/"}, true},
		{"plus last missing", pair{"a/b/+", "a/b"}, false},
		{"plus alone", pair{"+", "x"}, true},
		{"plus alone empty", pair{"+", ""}, true},
		{"plus alone two levels", pair{"+", "a/b"}, false},
		{"plus alone slash", pair{"+", "/"}, false},
		{"plus then hash", pair{"+/#", "a"}, true},
		{"plus then hash deep", pair{"+/#", "a/b/c"}, true},
		// '#' alone and at other positions.
		{"hash alone", pair{"#", "a/b/c"}, true},
		{"hash alone empty", pair{"#", ""}, true},
		{"hash alone slash", pair{"#", "/"}, true},
		{"hash not last is literal", pair{"a/#/c", "a/b/c"}, false},
		{"hash not last literal match", pair{"a/#/c", "a/#/c"}, true},
		{"hash inside level literal", pair{"a/b#", "a/b#"}, true},
		{"hash inside level no wildcard", pair{"a/b#", "a/bc"}, false},
		// Empty levels and slashes.
		{"empty rule empty topic", pair{"", ""}, true},
		{"empty rule", pair{"", "a"}, false},
		{"leading slash", pair{"/a", "/a"}, true},
		{"leading slash missing", pair{"/a", "a"}, false},
		{"trailing slash", pair{"a/", "a/"}, true},
		{"trailing slash missing", pair{"a/", "a"}, false},
		{"hash after leading slash", pair{"/#", "/x/y"}, true},
		{"hash after leading slash, empty topic", pair{"/#", ""}, true},
		{"hash after leading slash, other first level", pair{"/#", "a"}, false},
		{"double slash", pair{"a//b", "a//b"}, true},
		{"double slash plus", pair{"a/+/b", "a//b"}, true},
		// Topic characters are literal.
		{"topic plus needs rule plus", pair{"a/b", "a/+"}, false},
		{"topic plus literal", pair{"a/+", "a/+"}, true},
		{"topic hash matched by plus", pair{"a/+", "a/#"}, true},
		// '$' is an ordinary character.
		{"dollar matched by hash", pair{"#", "$SYS/x"}, true},
		{"dollar matched by plus", pair{"+/x", "$SYS/x"}, true},
		{"dollar literal", pair{"$SYS/#", "$SYS/broker"}, true},
		{"dollar case", pair{"$sys/#", "$SYS/broker"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RuleMatches(tt.give.rule, tt.give.topic); got != tt.want {
				t.Fatalf("RuleMatches(%q, %q) = %v, want %v", tt.give.rule, tt.give.topic, got, tt.want)
			}
			if got := Match(tt.give.rule, tt.give.topic); got != tt.want {
				t.Fatalf("Match(%q, %q) = %v, want %v", tt.give.rule, tt.give.topic, got, tt.want)
			}
		})
	}
}

func TestMatchMQTT(t *testing.T) {
	// MQTT 3.1.1 §4.7.1 examples.
	tests := []struct {
		name string
		give pair
		want bool
	}{
		{"hash parent", pair{"sport/tennis/player1/#", "sport/tennis/player1"}, true},
		{"hash child", pair{"sport/tennis/player1/#", "sport/tennis/player1/ranking"}, true},
		{"hash grandchild", pair{"sport/tennis/player1/#", "sport/tennis/player1/score/wimbledon"}, true},
		{"sport hash", pair{"sport/#", "sport"}, true},
		{"plus one level", pair{"sport/tennis/+", "sport/tennis/player1"}, true},
		{"plus not two", pair{"sport/tennis/+", "sport/tennis/player1/ranking"}, false},
		{"plus not parent", pair{"sport/+", "sport"}, false},
		{"plus empty", pair{"sport/+", "sport/"}, true},
		{"plus leading", pair{"+/+", "/finance"}, true},
		{"plus slash", pair{"/+", "/finance"}, true},
		{"plus not leading", pair{"+", "/finance"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match(tt.give.rule, tt.give.topic); got != tt.want {
				t.Fatalf("Match(%q, %q) = %v, want %v", tt.give.rule, tt.give.topic, got, tt.want)
			}
		})
	}
}
