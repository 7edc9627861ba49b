// Package noop is the default control backend (CONTROL_BACKEND=noop,
// wire-reference.md §5.2): it reports nothing to anyone and never blocks a project
// (§6.12).
//
// # Concurrency
//
// A Controller has no state: every method is safe for concurrent use,
// starts no goroutine and returns at once, whatever its context.
package noop
