package httpauth

import (
	"errors"
	"fmt"

	"github.com/NoLagApp/kraken/pkg/auth"
)

// How the errors of this package map to the `error` of a failed auth reply
// (wire-reference.md §2.4, §5.1, OQ-29). The rule needs only package auth, so the
// connection layer does not import httpauth:
//
//	errors.Is(err, auth.ErrDenied)      → "access_denied"
//	errors.Is(err, auth.ErrUnavailable) → "connection_failed"
//	any other error                     → "authentication_failed"
//
// Validate returns auth.ErrDenied (wrapped) for result "deny" or no result,
// ErrConnectionFailed or ErrBreakerOpen (both wrap auth.ErrUnavailable) when
// no answer came, and ErrAuthenticationFailed (which wraps neither) when the
// backend answered with a status other than 200 or an unusable body.
// Revalidate and CheckRoomAccess add auth.ErrUnavailable to every failure
// that is not a definite "no", so that it is retried (§4.9) or, for
// check-room-access, counted as a deny (§4.10).

// ErrConnectionFailed wraps every failure to get an answer from the backend:
// a transport error, the endpoint's timeout (Config.Timeout,
// Config.RoomAccessTimeout), a caller's context ending while waiting for a
// free request slot (Config.MaxInFlight), or an open circuit breaker
// (ErrBreakerOpen). It wraps auth.ErrUnavailable: wire error
// "connection_failed" at auth, a retry at revalidation (wire-reference.md §2.4,
// §4.9).
var ErrConnectionFailed error = &chainError{msg: "httpauth: connection failed", parent: auth.ErrUnavailable}

// ErrBreakerOpen is returned without any HTTP request while the circuit
// breaker is open (Config.BreakerThreshold). It wraps ErrConnectionFailed and
// so auth.ErrUnavailable: wire error "connection_failed".
var ErrBreakerOpen error = &chainError{msg: "httpauth: circuit breaker open", parent: ErrConnectionFailed}

// ErrAuthenticationFailed wraps every answer of the backend that cannot be
// used: a status other than 200 (see StatusError), a body that is not JSON or
// not an object, a `result` other than "allow" or "deny", a missing or
// non-string actor_token_id, or a body over Config.MaxBodyBytes
// (ErrResponseTooLarge). From Validate it wraps neither auth.ErrDenied nor
// auth.ErrUnavailable: wire error "authentication_failed" (wire-reference.md §2.4,
// OQ-29). Revalidate and CheckRoomAccess also wrap auth.ErrUnavailable.
var ErrAuthenticationFailed = errors.New("httpauth: authentication failed")

// ErrResponseTooLarge means a response body exceeded Config.MaxBodyBytes. It
// wraps ErrAuthenticationFailed.
var ErrResponseTooLarge error = &chainError{msg: "httpauth: response body too large", parent: ErrAuthenticationFailed}

// StatusError is a backend answer with an HTTP status other than 200. It
// wraps ErrAuthenticationFailed ("authentication_failed" at auth, a retry at
// revalidation, wire-reference.md §5.1). Statuses of 500 and above also count as
// failures for the circuit breaker.
type StatusError struct {
	// Endpoint is "validate", "revalidate" or "check-room-access".
	Endpoint string
	// StatusCode is the HTTP status received.
	StatusCode int
}

// Error returns "httpauth: <endpoint>: HTTP status <code>".
func (e *StatusError) Error() string {
	return fmt.Sprintf("httpauth: %s: HTTP status %d", e.Endpoint, e.StatusCode)
}

// Unwrap returns ErrAuthenticationFailed.
func (e *StatusError) Unwrap() error { return ErrAuthenticationFailed }

// chainError is a sentinel with a parent sentinel, so errors.Is matches both
// while the message stays short.
type chainError struct {
	msg    string
	parent error
}

func (e *chainError) Error() string { return e.msg }
func (e *chainError) Unwrap() error { return e.parent }

// retryable marks err, a failure that is not a definite "no", as
// auth.ErrUnavailable without changing its message. Errors that already wrap
// auth.ErrUnavailable or auth.ErrDenied are returned as they are.
func retryable(err error) error {
	if err == nil || errors.Is(err, auth.ErrUnavailable) || errors.Is(err, auth.ErrDenied) {
		return err
	}
	return unavailableError{err}
}

type unavailableError struct{ err error }

func (e unavailableError) Error() string   { return e.err.Error() }
func (e unavailableError) Unwrap() []error { return []error{e.err, auth.ErrUnavailable} }
