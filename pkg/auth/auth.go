package auth

import (
	"context"
	"errors"
)

// ErrDenied means the token is unknown or the actor has been revoked. The
// connection layer answers auth with access_denied, or closes a live
// connection with 4001 token_revoked at revalidation (protocol.md §2.4, §4.9).
// Backends may wrap it; test with errors.Is.
var ErrDenied = errors.New("auth: access denied")

// ErrUnavailable means the backend could not answer now; try again later.
// At revalidation it is a retry and keeps the connection open
// (protocol.md §4.9, OQ-9, OQ-11). Backends may wrap it; test with errors.Is.
var ErrUnavailable = errors.New("auth: backend unavailable")

// Authenticator is the pluggable auth slot (protocol.md §2.2, §4.9).
// Implementations must be safe for concurrent use; Validate may block on I/O
// and should return promptly once ctx is done.
type Authenticator interface {
	// Validate looks up an access token as sent in the auth frame.
	// It returns the Grant, or an error wrapping ErrDenied or ErrUnavailable.
	Validate(ctx context.Context, token string) (*Grant, error)
	// Revalidate fetches fresh data for a live connection's actor
	// (protocol.md §4.9). It returns the Grant, or an error wrapping
	// ErrDenied (revoked: close with 4001) or ErrUnavailable (retry later).
	Revalidate(ctx context.Context, actorTokenID string) (*Grant, error)
}

// Notifier is an optional interface of an Authenticator whose data changes
// at run time, such as a reloaded token file (D-1). The backend calls every
// registered f after the new data is in place, so a Validate issued from f
// already sees it.
type Notifier interface {
	// OnChange registers f; f must not block for long.
	OnChange(f func())
}
