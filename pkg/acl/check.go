package acl

import (
	"strconv"

	"github.com/NoLagApp/kraken/pkg/topic"
)

// Decision is the outcome of Rules.Check.
type Decision uint8

// The decisions. Both denials are reported with code 42940; they differ in
// the hint (D-3, OQ-25).
const (
	// Allowed means some rule admits the pattern with an adequate permission.
	Allowed Decision = iota + 1
	// DeniedNoRule means no rule admits the pattern at all.
	DeniedNoRule
	// DeniedPermission means some rule admits the pattern, but none with an
	// adequate permission.
	DeniedPermission
)

// hintNoRule is the hint of DeniedNoRule (D-3, OQ-25).
const hintNoRule = "topic is outside this token's grants"

// Check decides op on pattern (wire-reference.md §4.3, §4.4, D-2).
//
// For OpSubscribe, a pattern with wildcard levels needs a rule that
// Allows(op) and whose Pattern topic.RuleCovers it; a pattern without
// wildcards needs a rule that Allows(op) and whose Pattern topic.RuleMatches
// it. OpPublish with a wildcard pattern is DeniedNoRule (D-2). When some rule
// matches or covers but none has an adequate permission the result is
// DeniedPermission, when none matches it is DeniedNoRule. Check does not
// validate pattern; callers run topic.ValidateSubscribe or
// topic.ValidatePublish first.
func (rs Rules) Check(pattern string, op Op) Decision {
	if op == OpPublish && topic.HasWildcard(pattern) {
		return DeniedNoRule
	}
	matched := false
	for _, r := range rs {
		if !r.grants(pattern) {
			continue
		}
		if r.Allows(op) {
			return Allowed
		}
		matched = true
	}
	if matched {
		return DeniedPermission
	}
	return DeniedNoRule
}

// Hint returns the `hint` text of the 42940 error frame for d (D-3, OQ-25):
// "topic is outside this token's grants" for DeniedNoRule, "permission <op>
// not granted for this topic" for DeniedPermission (e.g. "permission publish
// not granted for this topic"), and "" for Allowed or an undefined value.
func (d Decision) Hint(op Op) string {
	switch d {
	case DeniedNoRule:
		return hintNoRule
	case DeniedPermission:
		return "permission " + op.String() + " not granted for this topic"
	}
	return ""
}

// String returns "allowed", "denied-no-rule", "denied-permission", or
// "Decision(<n>)" for an undefined value; it is meant for logs.
func (d Decision) String() string {
	switch d {
	case Allowed:
		return "allowed"
	case DeniedNoRule:
		return "denied-no-rule"
	case DeniedPermission:
		return "denied-permission"
	}
	return "Decision(" + strconv.Itoa(int(d)) + ")"
}
