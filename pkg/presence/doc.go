// Package presence keeps room presence and lobby watchers (wire-reference.md §7):
// who is in which room, with what presence value, and which connections
// watch which rooms through a lobby.
//
// A Registry is a plain data structure with no locks: it is owned by one
// goroutine (the hub runs every presence operation on one worker), and its
// methods return the events to send instead of sending them. A multi-node
// backend can keep the same interface and replicate the operations.
package presence
