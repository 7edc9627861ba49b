package acl

import "strconv"

// Permission is the permission a rule grants (wire-reference.md §4.1 rule objects,
// §4.3).
type Permission uint8

// The permissions. PermNone is what any unknown permission string grants.
const (
	PermNone Permission = iota
	PermSubscribe
	PermPublish
	PermPubSub
)

// ParsePermission maps a rule's `permission` string to a Permission. The
// match is exact and case-sensitive: "subscribe", "publish" or "pubSub";
// anything else is PermNone, and the rule still takes part in resolution
// (wire-reference.md §4.1, §4.6).
func ParsePermission(s string) Permission {
	switch s {
	case "subscribe":
		return PermSubscribe
	case "publish":
		return PermPublish
	case "pubSub":
		return PermPubSub
	}
	return PermNone
}

// String returns "none", "subscribe", "publish" or "pubSub", and
// "Permission(<n>)" for an undefined value.
func (p Permission) String() string {
	switch p {
	case PermNone:
		return "none"
	case PermSubscribe:
		return "subscribe"
	case PermPublish:
		return "publish"
	case PermPubSub:
		return "pubSub"
	}
	return "Permission(" + strconv.Itoa(int(p)) + ")"
}

// Op is an operation that is checked against the rules (wire-reference.md §4.3).
type Op uint8

// The checked operations. The zero Op is not a valid operation and is never
// allowed.
const (
	OpSubscribe Op = iota + 1
	OpPublish
)

// String returns "subscribe" or "publish", and "Op(<n>)" for an undefined
// value. It is the <op> of the permission hint (OQ-25).
func (o Op) String() string {
	switch o {
	case OpSubscribe:
		return "subscribe"
	case OpPublish:
		return "publish"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}
