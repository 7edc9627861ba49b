// Package noop is the message store that records nothing
// (STORE_BACKEND=noop, wire-reference.md §6.4, §9). Message ids and requiresAck
// are still sent whenever RECORD_MESSAGES is on; only the recording is
// skipped.
//
// # Concurrency
//
// A Store has no state: every method is safe for concurrent use, starts no
// goroutine and returns at once.
package noop
