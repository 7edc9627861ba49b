package client

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Error is an error the broker sent: a failed auth reply or an error frame
// (wire-reference.md §2.4, §3.4). Subscribe, Publish, SetFilters, Connect and the
// other request methods return it as a *Error; errors.As extracts it.
//
// Compare with errors.Is against the sentinels (ErrUnknownTopic,
// ErrAccessDenied, ...): two *Error values match when their Err strings are
// equal.
type Error struct {
	// Code is the numeric code, e.g. 42940; 0 when the broker sent none.
	Code int
	// Err is the machine-readable `error` string, e.g. "unknown_topic" or
	// "access_denied".
	Err string
	// Hint and Detail explain the error when the broker says more.
	Hint, Detail string
	// Topic is the topic of the refused request, as the client sent it.
	Topic string
	// MsgRef is the msgRef of the refused publish.
	MsgRef string
	// LobbyID is the lobby of a refused lobby request.
	LobbyID string
	// MaxSizeBytes is the data size limit of message_too_large.
	MaxSizeBytes int
	// Limit is the publishes per second a rate_limit_exceeded refusal was
	// measured against (the token's rateLimit, else the broker's
	// RATE_LIMIT); 0 when the broker sent none (docs/protocol.md
	// "Refusals").
	Limit int
	// RetryAfterMs is how many milliseconds to wait before publishing
	// again, from a rate_limit_exceeded refusal; 0 when the broker sent
	// none.
	RetryAfterMs int
}

// Error renders the error for people, e.g.
// `unknown_topic (42940) on "demo/other/x": topic is outside this token's grants`.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Err)
	if e.Code != 0 {
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(e.Code))
		b.WriteString(")")
	}
	if e.Topic != "" {
		fmt.Fprintf(&b, " on %q", e.Topic)
	}
	if e.LobbyID != "" {
		fmt.Fprintf(&b, " on lobby %q", e.LobbyID)
	}
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.MaxSizeBytes != 0 {
		fmt.Fprintf(&b, " (max %d bytes)", e.MaxSizeBytes)
	}
	if e.Limit != 0 {
		fmt.Fprintf(&b, " (limit %d publishes/s per connection)", e.Limit)
	}
	if e.RetryAfterMs != 0 {
		fmt.Fprintf(&b, " (retry after %d ms)", e.RetryAfterMs)
	}
	return b.String()
}

// Is reports whether target is a *Error with the same Err string, so that
// errors.Is(err, client.ErrUnknownTopic) works whatever the other fields.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Err == e.Err
}

// Sentinels for errors.Is. Only their Err strings are compared.
var (
	// ErrAccessDenied: the token is unknown to the broker (wire-reference.md §2.4).
	ErrAccessDenied = &Error{Err: "access_denied"}
	// ErrUnknownTopic: the topic is outside the token's grants, for a
	// connection that negotiated protocol v2 (code 42940).
	ErrUnknownTopic = &Error{Err: "unknown_topic", Code: 42940}
	// ErrNotAuthorized: the v1 form of ErrUnknownTopic, and a lobby outside
	// the token's lobbies.
	ErrNotAuthorized = &Error{Err: "not_authorized"}
	// ErrRateLimited: too many publishes this second (code 42910).
	ErrRateLimited = &Error{Err: "rate_limit_exceeded", Code: 42910}
	// ErrMessageTooLarge: the publish's data is over the limit (code 42930).
	ErrMessageTooLarge = &Error{Err: "message_too_large", Code: 42930}
	// ErrInvalidFilter: a publish filter was refused (code 42960).
	ErrInvalidFilter = &Error{Err: "invalid_filter", Code: 42960}
	// ErrNotSubscribed: SetFilters on a topic the broker holds no
	// subscription for.
	ErrNotSubscribed = &Error{Err: "not_subscribed"}
)

// Client-side errors.
var (
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("client: closed")
	// ErrNotConnected is returned by requests that need a live connection
	// (Publish, Emit, GetPresence, ...) while there is none, and by
	// Subscribe before the first Connect.
	ErrNotConnected = errors.New("client: not connected")
	// ErrAlreadyConnected is returned by Connect on a client that is
	// connected or connecting.
	ErrAlreadyConnected = errors.New("client: already connected")
	// ErrDisconnected is returned by a request whose connection was lost
	// before the broker answered: the request may or may not have taken
	// effect. The error returned matches it with errors.Is and, when the
	// client knows why the connection ended, wraps that reason: a
	// *CloseError (errors.As) when the broker closed it, e.g. 1009 for a
	// message larger than the broker's frame limit.
	ErrDisconnected = errors.New("client: connection lost before the broker answered")
	// ErrReconnectFailed is reported (through Options.OnError and
	// OnDisconnect) when MaxReconnectAttempts attempts have failed; the
	// client is then disconnected and Connect may be called again.
	ErrReconnectFailed = errors.New("client: reconnect attempts exhausted")
)

// disconnectedError is ErrDisconnected with the reason the connection
// ended.
type disconnectedError struct{ cause error }

func (e *disconnectedError) Error() string {
	return ErrDisconnected.Error() + ": " + strings.TrimPrefix(e.cause.Error(), "client: ")
}

// Is makes errors.Is(err, ErrDisconnected) hold.
func (e *disconnectedError) Is(target error) bool { return target == ErrDisconnected }

// Unwrap returns the reason, so errors.As finds a *CloseError.
func (e *disconnectedError) Unwrap() error { return e.cause }

// disconnected is the error of the requests lost with a connection that
// ended for cause (nil when unknown).
func disconnected(cause error) error {
	if cause == nil {
		return ErrDisconnected
	}
	return &disconnectedError{cause: cause}
}

// SlowConsumerError is reported through Options.OnError when deliveries
// were dropped because the handler queue (Options.HandlerQueueSize) was full:
// the handlers are slower than the messages arrive.
type SlowConsumerError struct {
	// Dropped is the number of deliveries dropped since the last report.
	Dropped uint64
}

func (e *SlowConsumerError) Error() string {
	return fmt.Sprintf("client: handler queue full, %d deliveries dropped", e.Dropped)
}

// CloseError is how a connection ended when the broker sent a WebSocket
// close frame, e.g. 4001 token_revoked, 1009 frame too large, or 1012 when
// the broker shuts down. OnDisconnect receives it, and the requests lost
// with the connection return it wrapped in ErrDisconnected.
type CloseError struct {
	// Code is the close code; 1005 (no status) when the frame had none.
	Code int
	// Reason is the close frame's reason text, e.g. "frame too large".
	Reason string
}

func (e *CloseError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("client: connection closed by the broker (%d)", e.Code)
	}
	return fmt.Sprintf("client: connection closed by the broker (%d %s)", e.Code, e.Reason)
}

// permanentAuth reports auth failures that retrying cannot fix.
func permanentAuth(err error) bool {
	return errors.Is(err, ErrAccessDenied)
}

// isSubscribeError reports error strings that a subscribe (or a
// re-subscribe) can get, as opposed to publish-only errors.
func isSubscribeError(s string) bool {
	switch {
	case s == "unknown_topic", s == "not_authorized", s == "invalid_topic",
		s == "too_many_subscriptions", s == "bad_request", s == "invalid_filters",
		strings.HasPrefix(s, "too_many_filters"), strings.HasPrefix(s, "invalid_filter_chars"):
		return true
	}
	return false
}

// isFilterError reports the errors a setFilters can get.
func isFilterError(s string) bool {
	return s == "not_subscribed" || s == "bad_request" || s == "invalid_filters" ||
		strings.HasPrefix(s, "too_many_filters") || strings.HasPrefix(s, "invalid_filter_chars")
}
