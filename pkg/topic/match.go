package topic

// RuleMatches is the grant matcher of wire-reference.md §4.4. rule and topic are
// split on '/' and compared level by level, byte-exactly. In rule, a "+" level
// matches exactly one level with any content, including an empty one, and a
// "#" LAST level matches all remaining levels, including none:
// "demo/general/#" matches "demo/general", "demo/general/" and
// "demo/general/a/b". A "#" at an earlier position is literal. Every
// character of topic is literal, so a topic level "+" is matched by a rule
// "+", a rule "#" or a literal "+".
func RuleMatches(rule, topic string) bool {
	for {
		r, rrest, rmore := cut(rule)
		if r == "#" && !rmore {
			return true
		}
		t, trest, tmore := cut(topic)
		if r != "+" && r != t {
			return false
		}
		if !tmore {
			return !rmore || rrest == "#"
		}
		if !rmore {
			return false
		}
		rule, topic = rrest, trest
	}
}

// Match reports whether the subscription pattern matches the concrete topic,
// with MQTT semantics (MQTT 3.1.1 §4.7.1; D-2): a "+" level matches one level,
// including an empty one, and a "#" last level matches zero or more remaining
// levels, so "a/#" matches "a". It is the same relation as RuleMatches, so an
// invalid pattern behaves as a rule would: a non-final "#" level and a '+' or
// '#' inside a longer level are literal. '$' topics are not special.
func Match(pattern, topic string) bool {
	return RuleMatches(pattern, topic)
}

// RuleCovers reports whether every concrete topic that the subscription
// pattern can match (Match semantics) is matched by rule (RuleMatches
// semantics). It is the covering check of D-2 / OQ-38 for wildcard
// subscriptions. For a pattern without wildcard levels it equals
// RuleMatches(rule, pattern).
//
// Examples: rule "demo/general/#" covers "demo/general/+", "demo/general/#"
// and "demo/general/+/x", but not "demo/+/x", "#" or "demo/#"; rule "a/+/c"
// covers "a/+/c" but not "a/#". Because every topic has at least one level,
// rule "+/#" covers pattern "#".
func RuleCovers(rule, pattern string) bool {
	for first := true; ; first = false {
		r, rrest, rmore := cut(rule)
		if r == "#" && !rmore {
			return true
		}
		p, prest, pmore := cut(pattern)
		if p == "#" && !pmore {
			return coversTail(rule, first)
		}
		if r != "+" && (p == "+" || r != p) {
			return false
		}
		if !pmore {
			return !rmore || rrest == "#"
		}
		if !rmore {
			return false
		}
		rule, pattern = rrest, prest
	}
}

// coversTail reports whether the rule levels left in rule match every
// sequence of levels that a final "#" of the pattern stands for: one or more
// levels when the "#" is the whole pattern (first), zero or more otherwise.
func coversTail(rule string, first bool) bool {
	return rule == "#" || (first && rule == "+/#")
}
