package acl

import "strings"

// EffectivePattern implements scope injection (wire-reference.md §4.5) with OQ-21:
// the permission checked is the one of op, for both forms. When scopeSlug is
// non-empty and Check(pattern, op) is not Allowed, it tries
// "<first level>/<scopeSlug>/<rest>" and returns that form if it is Allowed.
// In every other case, including a pattern without '/', it returns pattern
// unchanged. The display topic stays the pattern as sent (wire-reference.md §6.1).
func (rs Rules) EffectivePattern(pattern, scopeSlug string, op Op) string {
	if scopeSlug == "" || rs.Check(pattern, op) == Allowed {
		return pattern
	}
	first, rest, ok := strings.Cut(pattern, "/")
	if !ok {
		return pattern
	}
	scoped := first + "/" + scopeSlug + "/" + rest
	if rs.Check(scoped, op) == Allowed {
		return scoped
	}
	return pattern
}
