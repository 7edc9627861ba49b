package store

import (
	"context"
	"errors"
	"time"
)

// ErrInvalidRecord is returned by Append for a nil *Record or one with an
// empty MsgID: a record is keyed by its message id (wire-reference.md §6.4, §6.5).
// Every backend returns it, noop included; test with errors.Is.
var ErrInvalidRecord = errors.New("store: invalid record")

// ErrInvalidAck is returned by Ack for an empty actorID: acks are kept per
// actor (actorTokenId), not per connection (wire-reference.md §6.4). Every backend
// returns it, noop included; test with errors.Is.
var ErrInvalidAck = errors.New("store: invalid ack")

// ErrDuplicate is returned, wrapped with the id, by Append when a record with
// the same MsgID is already held; the held record is kept unchanged. Ids are
// fresh UUIDv4s (wire-reference.md §6.4), so this means a caller bug. A backend that
// records nothing never returns it; test with errors.Is.
var ErrDuplicate = errors.New("store: duplicate message id")

// ErrClosed is returned, possibly wrapped, by Append and Ack on a Store whose
// Close has been called. Test with errors.Is.
var ErrClosed = errors.New("store: closed")

// Record is one accepted publish (wire-reference.md §6.5). It holds the routing
// facts of the message, never its payload (decisions.md OQ-31).
type Record struct {
	// MsgID is the message id delivered as msgId with requiresAck:true: a
	// lowercase UUIDv4 in 8-4-4-4-12 form (wire-reference.md §6.4). Required.
	MsgID string
	// ProjectID and AppID scope the publisher (wire-reference.md §4.2, §6.5).
	ProjectID, AppID string
	// RoomID is the room of an exact-resolved topic, "" for a topic that was
	// resolved through a wildcard rule (wire-reference.md §4.6, §6.5).
	RoomID string
	// Topic is the routing key: the broker topic the publish was fanned out
	// on (wire-reference.md §4.7).
	Topic string
	// Pattern is the topic exactly as the client sent it in publish
	// (wire-reference.md §6.5).
	Pattern string
	// Sender is the publisher's actorTokenId (wire-reference.md §6.5).
	Sender string
	// PayloadSize is the size in bytes of data as packed msgpack
	// (wire-reference.md §6.5). It is not the JSON size reported as usage to a
	// control plane (decisions.md OQ-48).
	PayloadSize int
	// Timestamp is when the publish was accepted; the wire form is Unix
	// milliseconds (wire-reference.md §6.5). A backend may fill a zero Timestamp
	// with its own clock.
	Timestamp time.Time
}

// Store records accepted publishes and the acks of their recipients
// (wire-reference.md §6.4, §6.5). Implementations are safe for concurrent use and
// never block on I/O for long: Append is called on the publish path. See the
// package documentation for the full contract.
type Store interface {
	// Append records r, copying it; the caller may reuse r afterwards.
	// It returns ErrInvalidRecord for a nil r or an empty MsgID, an error
	// wrapping ErrDuplicate when MsgID is already held, and ErrClosed after
	// Close. A bounded backend makes room by dropping its oldest records
	// rather than failing.
	Append(ctx context.Context, r *Record) error
	// Ack marks msgIDs acknowledged by actorID (ack / batchAck,
	// wire-reference.md §6.4). Unknown, expired and empty ids are ignored and
	// acking twice is a no-op; it returns ErrInvalidAck for an empty
	// actorID and ErrClosed after Close. Nothing is ever re-sent, acked or
	// not (decisions.md OQ-66).
	Ack(ctx context.Context, actorID string, msgIDs ...string) error
	// Get returns a copy of the record and the actors that acked it, in the
	// order of their first ack (nil when none did); ok=false when msgID is
	// unknown or expired.
	Get(ctx context.Context, msgID string) (r Record, ackedBy []string, ok bool)
	// Len returns the number of records held.
	Len() int
}

// Closer is optional: whoever built the Store closes it once the node that
// used it has shut down (cmd/kraken does, as it does the auth backend), when
// the Store implements it. Close releases the Store's goroutines and resources, is
// safe to call more than once and returns nil on success. After it, Append
// and Ack return an error wrapping ErrClosed.
type Closer interface {
	Close() error
}
