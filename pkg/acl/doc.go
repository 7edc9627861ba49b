// Package acl decides what a token's grant rules allow and where a pattern
// lives in the broker (wire-reference.md §4.3–§4.6, decisions.md D-2, D-3,
// OQ-21, OQ-25, OQ-38 and OQ-39). Matching is delegated to package topic.
//
// There are no deny rules: access is granted when any rule both matches the
// pattern and carries an adequate permission, and an empty rule list denies
// everything (wire-reference.md §4.3).
//
// Concurrency: everything here is pure. Rules is read-only for its methods,
// so one Rules value may be shared by any number of goroutines as long as no
// goroutine modifies it.
package acl
