package wire

import "errors"

// DecodeError is a malformed or ill-typed inbound frame (wire-reference.md §1.3,
// decisions.md OQ-46). The connection answers it with a
// bad_request error frame whose `detail` is Reason; the connection stays open.
type DecodeError struct {
	// Type is the decoded `type` of the frame when it was known at the time
	// of the failure, else "".
	Type string
	// Reason is a short lowercase phrase suitable for the `detail` of a
	// bad_request error frame, e.g. "truncated msgpack value",
	// "reserved byte 0xc1", "envelope nesting deeper than 32",
	// "data nesting deeper than 128" or "subscribe: topic must be a string".
	Reason string
}

// Error returns "wire: " followed by Reason.
func (e *DecodeError) Error() string { return "wire: " + e.Reason }

// ErrNotMap is returned by Decode, unwrapped (compare with ==), when the frame
// is exactly one well-formed msgpack value that is not a map. Before
// authentication the connection answers it with not_authenticated, after it
// the frame is ignored (wire-reference.md §1.3, row "Decoded value is not a map").
var ErrNotMap = errors.New("wire: message must be a map")

// Numeric error codes carried in the `code` field of error frames
// (wire-reference.md §3.4; decisions.md D-3, OQ-5).
const (
	// CodeRateLimited goes with ErrRateLimitExceeded (wire-reference.md §6.10).
	CodeRateLimited = 42910
	// CodeQuotaExceeded goes with the monthly quota error (wire-reference.md §6.12).
	CodeQuotaExceeded = 42920
	// CodeMessageTooLarge goes with ErrMessageTooLarge (wire-reference.md §6.11).
	CodeMessageTooLarge = 42930
	// CodeUnknownTopic goes with ErrUnknownTopic (v2) and ErrNotAuthorized
	// (v1) for a topic outside the grants (decisions.md D-3).
	CodeUnknownTopic = 42940
	// CodeWakeFailed is documented for wake_failed (wire-reference.md §3.4).
	CodeWakeFailed = 42950
	// CodeInvalidFilter goes with ErrInvalidFilter for a rejected publish
	// filter (decisions.md OQ-5).
	CodeInvalidFilter = 42960
)

// Numeric codes of a refused reauth, {type:"reauth", success:false, error,
// code} (docs/protocol.md "Auth"): the HTTP status the refusal corresponds
// to, times 100, as the upstream HTTP publish API numbers its errors
// (HTTP status × 100: 400/40000, 401/40100, 403/40300, 503/50300).
const (
	// CodeBadRequest goes with ErrBadRequest: a reauth without a token.
	CodeBadRequest = 40000
	// CodeUnauthorized goes with ErrAccessDenied: the auth backend does not
	// know the token, it is not a string, or it has expired.
	CodeUnauthorized = 40100
	// CodeForbidden goes with ErrActorMismatch: the token is valid but not
	// the connection's actor's.
	CodeForbidden = 40300
	// CodeBadGateway goes with ErrAuthenticationFailed: the auth backend
	// failed or answered unusably.
	CodeBadGateway = 50200
	// CodeServiceUnavailable goes with ErrConnectionFailed: the auth
	// service could not be reached or did not answer in time.
	CodeServiceUnavailable = 50300
)

// Values of the `error` field of error frames and failed auth replies
// (wire-reference.md §2.4, §3.4; decisions.md D-3, OQ-5, OQ-13, OQ-45,
// OQ-46).
const (
	// ErrNotAuthenticated answers any non-auth message before auth (§2.5).
	ErrNotAuthenticated = "not_authenticated"
	// ErrRateLimitExceeded answers a publish over the rate limit (§6.10).
	ErrRateLimitExceeded = "rate_limit_exceeded"
	// ErrMessageTooLarge answers a publish whose data is too large (§6.11).
	ErrMessageTooLarge = "message_too_large"
	// ErrMonthlyQuotaExceeded refuses a publish of a project the control
	// plane blocked (code 42920, §6.12).
	ErrMonthlyQuotaExceeded = "monthly_quota_exceeded"
	// ErrUnknownTopic answers a v2 client for a topic outside the grants (D-3).
	ErrUnknownTopic = "unknown_topic"
	// ErrNotAuthorized answers a v1 client for a topic outside the grants
	// (D-3), and a lobby outside the allowed lobbies (§3.4).
	ErrNotAuthorized = "not_authorized"
	// ErrNotSubscribed answers setFilters on a pattern with no live
	// subscription (§3.4).
	ErrNotSubscribed = "not_subscribed"
	// ErrBadRequest answers a malformed frame or a known type missing a
	// required key; the reason goes in `detail` (OQ-46).
	ErrBadRequest = "bad_request"
	// ErrInvalidJSON answers a text frame that is not valid JSON (OQ-45).
	ErrInvalidJSON = "invalid_json"
	// ErrInvalidFilter answers a publish with a rejected filter, with code
	// CodeInvalidFilter (OQ-5).
	ErrInvalidFilter = "invalid_filter"
	// ErrAlreadyAuthenticated answers a second auth (OQ-13).
	ErrAlreadyAuthenticated = "already_authenticated"
	// ErrAccessDenied is the auth failure for an unknown token (§2.4), or
	// one past the expiry its auth backend gave it.
	ErrAccessDenied = "access_denied"
	// ErrActorMismatch refuses a reauth whose token belongs to another
	// actor, organisation, project or app than the connection's
	// (CodeForbidden).
	ErrActorMismatch = "actor_mismatch"
	// ErrConnectionLimitReached is the auth failure when the organisation
	// holds its maximum number of connections (§2.4).
	ErrConnectionLimitReached = "connection_limit_reached"
	// ErrAuthenticationFailed is the auth failure for a failed or malformed
	// backend answer (§2.4, OQ-29).
	ErrAuthenticationFailed = "authentication_failed"
	// ErrConnectionFailed is the auth failure when the auth service could
	// not be reached or did not answer in time (§2.4, §5.1).
	ErrConnectionFailed = "connection_failed"
	// ErrTooManySubscriptions answers a subscribe over the per-connection
	// subscription limit.
	ErrTooManySubscriptions = "too_many_subscriptions"
	// ErrInvalidTopic answers a topic that is not a valid pattern, e.g. a
	// wildcard in a publish topic (D-2).
	ErrInvalidTopic = "invalid_topic"
)

// HintUnknownTopic is the `hint` of the error frame for a topic outside the
// token's grants, sent to v1 and v2 clients alike (decisions.md D-3).
const HintUnknownTopic = "topic is outside this token's grants"
