package noop

import (
	"context"

	"github.com/NoLagApp/kraken/pkg/store"
)

// Store is a store.Store that records nothing: Append and Ack validate their
// arguments as the interface requires and then discard them, Get never finds
// a record and Len is always 0. The zero value is ready to use.
type Store struct{}

var _ store.Store = Store{}

// Append discards r. It returns store.ErrInvalidRecord for a nil r or an
// empty MsgID, and nil otherwise (never store.ErrDuplicate).
func (Store) Append(_ context.Context, r *store.Record) error {
	if r == nil || r.MsgID == "" {
		return store.ErrInvalidRecord
	}
	return nil
}

// Ack discards the ack. It returns store.ErrInvalidAck for an empty actorID
// and nil otherwise; every id is unknown, and unknown ids are ignored
// (wire-reference.md §6.4).
func (Store) Ack(_ context.Context, actorID string, _ ...string) error {
	if actorID == "" {
		return store.ErrInvalidAck
	}
	return nil
}

// Get always reports ok=false: no record is held.
func (Store) Get(context.Context, string) (store.Record, []string, bool) {
	return store.Record{}, nil, false
}

// Len always returns 0.
func (Store) Len() int { return 0 }
