// Package disconnect is the one table of reasons kraken closes a connection:
// for each, the WebSocket close code (RFC 6455 §7.4), the reason text sent in
// the close frame, whether a client should reconnect, and a short label for
// logs and counters. The hub, the reader and the shutdown path all close
// through it, so a code is chosen in one place.
//
// The codes follow decisions.md D-5 (amended): a close a client
// should recover from never uses 1000 or 1001, because the official Python
// SDK treats those as a final end of the stream and never reconnects
// (wire-reference.md §12.3, "What triggers it"). 1000 only answers a close the
// client sent itself.
//
// The package is pure data and safe for concurrent use.
package disconnect

import (
	"slices"
	"strconv"
	"strings"

	"github.com/gobwas/ws"
)

// StatusServiceRestart is close code 1012, "service restart", from the IANA
// WebSocket close code registry (gobwas/ws names only RFC 6455's codes).
const StatusServiceRestart ws.StatusCode = 1012

// Reason is why a connection is closed. The zero value is not a reason.
type Reason uint8

// The reasons, in the order of the table in docs/protocol.md.
const (
	// ClientClosed answers the client's own close frame; the client's code
	// is echoed (RFC 6455 §5.5.1), 1000 when it sent none.
	ClientClosed Reason = iota + 1
	// Shutdown is SIGTERM/SIGINT: 1012 (service restart, IANA registry), so
	// every SDK reconnects to the restarted or another node.
	Shutdown
	// IdleTimeout: no complete frame for Hub Config.IdleTimeout.
	IdleTimeout
	// FrameTimeout: a frame, or a fragmented message, did not complete in
	// time (a trickling client, slowloris on frames).
	FrameTimeout
	// SlowConsumer: the connection's send queue passed its bound.
	SlowConsumer
	// InputOverflow: the client sent faster than its frames could be handled.
	InputOverflow
	// TooManyErrors: the client provoked error frames far past any honest
	// rate (OQ-67, amended).
	TooManyErrors
	// AuthTimeout: no successful auth within the auth deadline (OQ-44).
	AuthTimeout
	// AuthFailures: too many failed auth attempts (OQ-65, amended: 4004,
	// as @nolag/js-sdk 1.14 reads 4003 as an expired token).
	AuthFailures
	// TokenRevoked: a revalidation found the token no longer valid
	// (wire-reference.md §4.9); the text may carry the backend's reason.
	TokenRevoked
	// TokenExpired: the expiry the auth backend gave the connection's token
	// passed (OQ-65, amended); @nolag/js-sdk 1.14 reconnects at once with a
	// fresh token on 4003 (wire-reference.md §12.5).
	TokenExpired
	// ProtocolError: an RFC 6455 violation; the text names it.
	ProtocolError
	// InvalidPayload: invalid UTF-8 in a text frame or close reason.
	InvalidPayload
	// TooLarge: a frame or reassembled message over the frame cap.
	TooLarge
	// UnsupportedData: a data frame of a kind the connection's protocol
	// does not carry (a text frame on an MQTT-over-WebSocket connection,
	// [MQTT-6.0.0-1]).
	UnsupportedData
	// HandshakeTimeout: the HTTP upgrade request did not complete in time;
	// answered with HTTP 408, no close frame.
	HandshakeTimeout
	// HTTPDone: a plain HTTP request (/health, an error answer) was
	// answered; no close frame.
	HTTPDone
	// SessionTakenOver: a new MQTT connection with the same client
	// identifier (and actor) took the session over [MQTT-3.1.4-2]; 1000
	// for MQTT over WebSocket, and no reconnect (the client would take it
	// back).
	SessionTakenOver
	// EdgeLimit: the node's edge limits refused the connection at its
	// accept (MAX_CONNECTIONS and the like, docs/SECURITY.md); an MQTT
	// client is told with CONNACK 3, no close frame (a WebSocket client is
	// answered in HTTP before any upgrade: HTTPDone).
	EdgeLimit
	// Operator: the admin API disconnected the connection (POST
	// /api/disconnect, docs/operations.md); 1008 "disconnected_by_operator"
	// unless the operator chose another code of OperatorCodes and a text.
	Operator

	numReasons
)

// NumReasons is one more than the largest Reason, for arrays indexed by
// Reason.
const NumReasons = int(numReasons)

type entry struct {
	code      ws.StatusCode // 0: no close frame (the connection never became a WebSocket)
	text      string
	reconnect bool
	label     string
}

// table is the close-reason table; docs/protocol.md "Close codes" shows it.
var table = [numReasons]entry{
	ClientClosed:     {ws.StatusNormalClosure, "", false, "client_closed"},
	Shutdown:         {StatusServiceRestart, "server shutting down", true, "shutdown"},
	IdleTimeout:      {4000, "idle_timeout", true, "idle_timeout"},
	FrameTimeout:     {ws.StatusPolicyViolation, "frame_timeout", true, "frame_timeout"},
	SlowConsumer:     {ws.StatusPolicyViolation, "slow_consumer", true, "slow_consumer"},
	InputOverflow:    {ws.StatusPolicyViolation, "input_overflow", true, "input_overflow"},
	TooManyErrors:    {ws.StatusPolicyViolation, "too_many_errors", true, "too_many_errors"},
	AuthTimeout:      {4008, "auth_timeout", true, "auth_timeout"},
	AuthFailures:     {4004, "too_many_auth_failures", false, "auth_failures"},
	TokenRevoked:     {4001, "token_revoked", false, "token_revoked"},
	TokenExpired:     {4003, "token_expired", true, "token_expired"},
	ProtocolError:    {ws.StatusProtocolError, "protocol error", false, "protocol_error"},
	InvalidPayload:   {ws.StatusInvalidFramePayloadData, "invalid UTF-8", false, "invalid_payload"},
	TooLarge:         {ws.StatusMessageTooBig, "frame too large", false, "too_large"},
	UnsupportedData:  {ws.StatusUnsupportedData, "unsupported data", false, "unsupported_data"},
	HandshakeTimeout: {0, "", true, "handshake_timeout"},
	HTTPDone:         {0, "", false, "http_done"},
	SessionTakenOver: {ws.StatusNormalClosure, "session_taken_over", false, "session_taken_over"},
	EdgeLimit:        {0, "", true, "edge_limit"},
	Operator:         {ws.StatusPolicyViolation, "disconnected_by_operator", true, "operator"},
}

// OperatorCodes are the close codes an operator may choose for a
// disconnect (Operator), with what the official SDKs do on each
// (wire-reference.md §12): every one but 1000 makes them reconnect (1000
// ends the Python SDK's stream for good; the JavaScript and Go SDKs
// reconnect on every code). docs/operations.md shows the table.
var OperatorCodes = map[ws.StatusCode]string{
	ws.StatusNormalClosure:       "normal closure: the Python SDK stops, the others reconnect",
	ws.StatusPolicyViolation:     "policy violation (the default): every SDK reconnects after its interval",
	ws.StatusInternalServerError: "internal error: every SDK reconnects after its interval",
	StatusServiceRestart:         "service restart: every SDK reconnects, to this node or another",
	4000:                         "idle timeout: every SDK reconnects after its interval",
	4003:                         "token expired: @nolag/js-sdk 1.14 reconnects at once with a fresh token",
}

// OperatorCodeList returns the codes of OperatorCodes in order, as text:
// "1000, 1008, …".
func OperatorCodeList() string {
	codes := make([]int, 0, len(OperatorCodes))
	for c := range OperatorCodes {
		codes = append(codes, int(c))
	}
	slices.Sort(codes)
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ", ")
}

// Code returns the close code sent for r, or 0 when r sends no close frame.
func (r Reason) Code() ws.StatusCode { return r.entry().code }

// Text returns the default reason text of r's close frame.
func (r Reason) Text() string { return r.entry().text }

// Reconnect reports whether a client closed for r should reconnect: the
// cause is on the server's side, passes with time, or goes away with a
// fresh token (an expired one). Clients closed for a fault of their own (a
// protocol error, a revoked token) would meet it again.
func (r Reason) Reconnect() bool { return r.entry().reconnect }

// String returns r's label, a stable snake_case word for logs and counter
// labels; the zero Reason (no decision of the broker: the peer closed or the
// connection failed) is "peer_closed".
func (r Reason) String() string {
	switch {
	case r == 0:
		return "peer_closed"
	case r >= numReasons:
		return "unknown"
	}
	return r.entry().label
}

func (r Reason) entry() entry {
	if r >= numReasons {
		return entry{}
	}
	return table[r]
}

// Disconnect is one close decision: a reason, and optionally the code and
// text that replace the reason's defaults (the echoed code of a client's
// close, the backend's reason of a revocation, the violation a protocol
// error names).
type Disconnect struct {
	Reason Reason
	// Code replaces Reason.Code() when non-zero: ClientClosed (the
	// client's own code, echoed) and Operator (one of OperatorCodes) only.
	Code ws.StatusCode
	// Text replaces Reason.Text() when non-empty; at most 123 bytes are sent
	// (RFC 6455 §5.5: a control frame payload is at most 125 bytes).
	Text string
}

// New returns the Disconnect of r with its default code and text.
func New(r Reason) Disconnect { return Disconnect{Reason: r} }

// WithText returns the Disconnect of r with text in place of the default.
func WithText(r Reason, text string) Disconnect { return Disconnect{Reason: r, Text: text} }

// StatusCode returns the close code to send: d.Code, else the reason's.
func (d Disconnect) StatusCode() ws.StatusCode {
	if d.Code != 0 {
		return d.Code
	}
	return d.Reason.Code()
}

// Message returns the reason text to send: d.Text, else the reason's.
func (d Disconnect) Message() string {
	if d.Text != "" {
		return d.Text
	}
	return d.Reason.Text()
}

// SendsFrame reports whether d is announced with a close frame: every
// reason but those of connections that never became a WebSocket.
func (d Disconnect) SendsFrame() bool { return d.StatusCode() != 0 }
