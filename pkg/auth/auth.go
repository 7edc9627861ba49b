package auth

import (
	"context"
	"errors"

	"github.com/NoLagApp/kraken/pkg/acl"
)

// ErrDenied means the token is unknown or the actor has been revoked. The
// connection layer answers auth with access_denied, or closes a live
// connection with 4001 token_revoked at revalidation (wire-reference.md §2.4, §4.9).
// Backends may wrap it; test with errors.Is.
var ErrDenied = errors.New("auth: access denied")

// ErrUnavailable means the backend could not answer now; try again later.
// At revalidation it is a retry and keeps the connection open
// (wire-reference.md §4.9, OQ-9, OQ-11). Backends may wrap it; test with errors.Is.
var ErrUnavailable = errors.New("auth: backend unavailable")

// RevokedError is the ErrDenied of a revalidation that carries the
// backend's reason (wire-reference.md §4.9: disconnect_reason, else error), which
// becomes the reason text of the 4001 close.
type RevokedError struct {
	// Reason is the backend's reason, e.g. "token_revoked".
	Reason string
}

// Error implements error.
func (e *RevokedError) Error() string { return "auth: revoked: " + e.Reason }

// Unwrap returns ErrDenied, so errors.Is(err, ErrDenied) holds.
func (e *RevokedError) Unwrap() error { return ErrDenied }

// Authenticator is the pluggable auth slot (wire-reference.md §2.2, §4.9).
// Implementations must be safe for concurrent use; Validate may block on I/O
// and should return promptly once ctx is done.
type Authenticator interface {
	// Validate looks up an access token as sent in the auth frame.
	// It returns the Grant, or an error wrapping ErrDenied (access_denied)
	// or ErrUnavailable (connection_failed), or another error when the
	// backend answered unusably (authentication_failed; wire-reference.md §2.4).
	Validate(ctx context.Context, token string) (*Grant, error)
	// Revalidate fetches fresh data for a live connection's actor
	// (wire-reference.md §4.9). It returns the Grant, or an error wrapping
	// ErrDenied (revoked: close with 4001) or ErrUnavailable (retry later).
	Revalidate(ctx context.Context, actorTokenID string) (*Grant, error)
}

// RoomAccessChecker is an optional interface of an Authenticator that can
// widen a live connection's grant when a subscribe falls outside it: the
// subscribe cache-miss fallback of wire-reference.md §4.10 (HTTP
// /check-room-access). The static backend does not implement it.
type RoomAccessChecker interface {
	// CheckRoomAccess asks whether the actor may use pattern (as the client
	// sent it). It returns the rules to prepend to the connection's grant
	// (each carrying its own app), or an error wrapping ErrDenied (not
	// allowed) or ErrUnavailable (no answer); callers treat both as a deny.
	CheckRoomAccess(ctx context.Context, actorTokenID, pattern string) (acl.Rules, error)
}

// Notifier is an optional interface of an Authenticator whose data changes
// at run time, such as a reloaded token file (D-1). The backend calls every
// registered f after the new data is in place, so a Validate issued from f
// already sees it.
type Notifier interface {
	// OnChange registers f; f must not block for long.
	OnChange(f func())
}

// RuleLister is an optional interface of an Authenticator that holds every
// grant it can hand out, as the token file does. POST /internal/publish,
// which has no grant of its own, reads the topic it is given with these
// rules (acl.Place): a routing key, or a client's topic resolved as the
// grants' clients resolve it.
type RuleLister interface {
	// RuleSets returns the distinct rule lists of the grants in force, and
	// ok; ok is false when the backend cannot list its grants (a Cache
	// around one that cannot). The caller must not modify them.
	RuleSets() (sets []acl.Rules, ok bool)
}
