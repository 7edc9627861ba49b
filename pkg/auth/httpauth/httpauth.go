package httpauth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

// The defaults of the Config fields left zero.
const (
	// DefaultTimeout bounds /validate and /revalidate (wire-reference.md §5.1).
	DefaultTimeout = 5 * time.Second
	// DefaultRoomAccessTimeout bounds /check-room-access (§4.10, §5.1).
	DefaultRoomAccessTimeout = 2 * time.Second
	// DefaultMaxBodyBytes bounds a response body: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxInFlight caps the HTTP requests in flight at once.
	DefaultMaxInFlight = 64
	// DefaultBreakerThreshold is the number of consecutive failures
	// (transport errors, timeouts, statuses >= 500) that opens the breaker.
	DefaultBreakerThreshold = 5
	// DefaultBreakerCooldown is how long the breaker stays open.
	DefaultBreakerCooldown = 5 * time.Second
	// DefaultRoomDenyTTL is how long a failed check-room-access is
	// remembered per (actor, pattern) (§4.10: acl_deny_cache_ttl_ms).
	DefaultRoomDenyTTL = 5 * time.Second
	// DefaultRoomDenyMaxEntries bounds the check-room-access negative cache.
	DefaultRoomDenyMaxEntries = 10000
)

// The endpoints, joined to Config.BaseURL (OQ-28).
const (
	endpointValidate   = "validate"
	endpointRevalidate = "revalidate"
	endpointRoomAccess = "check-room-access"
)

// Config configures a Backend. The zero value of every field but BaseURL
// works.
type Config struct {
	// BaseURL is AUTH_HTTP_URL, an http:// or https:// URL; required. Its
	// path is kept and the endpoints are joined to it (OQ-28):
	// https://host/v1/kraken-link (or .../kraken-link/) gives
	// https://host/v1/kraken-link/validate. A query or fragment is refused.
	BaseURL string
	// Secret is BACKEND_SECRET, sent as "Authorization: Bearer <Secret>" on
	// every request (§5.1). When empty no Authorization header is sent at
	// all: v0.4.0 sends a bare "Bearer ", which is not a valid credential
	// either (RFC 6750), and New logs a warning.
	Secret string
	// InsecureSkipVerify accepts any server certificate: the explicit
	// development opt-out of OQ-30 (AUTH_HTTP_INSECURE_SKIP_VERIFY in
	// pkg/config; OQ-30 names it BACKEND_TLS_INSECURE). TLS is verified by
	// default (OQ-30, OQ-64).
	InsecureSkipVerify bool
	// RootCAs, when set, replaces the system roots for verifying the
	// backend's certificate.
	RootCAs *x509.CertPool
	// TLSConfig, when set, is the base TLS configuration (cloned);
	// RootCAs and InsecureSkipVerify are applied on top of it.
	TLSConfig *tls.Config
	// Timeout bounds a /validate or /revalidate call, waiting for a request
	// slot included; 0 means DefaultTimeout (5 s).
	Timeout time.Duration
	// RoomAccessTimeout bounds a /check-room-access call; 0 means
	// DefaultRoomAccessTimeout (2 s).
	RoomAccessTimeout time.Duration
	// MaxBodyBytes bounds a response body; a longer one is
	// ErrResponseTooLarge. 0 means DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64
	// MaxInFlight caps concurrent HTTP requests; a caller over the cap waits
	// for a slot until its ctx is done or the endpoint's timeout passes,
	// then gets ErrConnectionFailed. It also sizes the idle-connection pool.
	// 0 means DefaultMaxInFlight (64).
	MaxInFlight int
	// BreakerThreshold is the number of consecutive failures (transport
	// error, timeout, status >= 500) after which the circuit breaker opens
	// for BreakerCooldown; while open, calls fail fast with ErrBreakerOpen
	// and no request. After the cool-down exactly one probe goes through:
	// an answer below 500 closes the breaker, a failure reopens it. 0 means
	// DefaultBreakerThreshold (5); a negative value disables the breaker.
	BreakerThreshold int
	// BreakerCooldown is how long the breaker stays open; 0 means
	// DefaultBreakerCooldown (5 s).
	BreakerCooldown time.Duration
	// RoomDenyTTL is how long a failed check-room-access (a deny or an
	// error) is answered from memory for the same (actor, pattern),
	// wire-reference.md §4.10. 0 means DefaultRoomDenyTTL (5 s); negative
	// disables the negative cache.
	RoomDenyTTL time.Duration
	// RoomDenyMaxEntries bounds the negative cache; when full the oldest
	// entry goes. 0 means DefaultRoomDenyMaxEntries (10,000).
	RoomDenyMaxEntries int
	// Logger receives breaker changes (warn, info) and ignored attributes
	// (debug); nil means zap.NewNop(). Tokens are never logged.
	Logger *zap.Logger
}

// Backend is the HTTP auth backend of wire-reference.md §5.1 (AUTH_BACKEND=http).
// It implements auth.Authenticator and auth.RoomAccessChecker and is safe
// for concurrent use; see the package documentation.
type Backend struct {
	urls        map[string]string // endpoint -> full URL
	auth        string            // the Authorization header, "" for none
	timeout     time.Duration
	roomTimeout time.Duration
	maxBody     int64
	log         *zap.Logger

	client    *http.Client
	transport *http.Transport
	slots     chan struct{}
	breaker   *breaker
	denies    *denyCache
	now       func() time.Time // tests replace it before any call
}

// New returns a Backend for cfg. It fails when BaseURL is empty or is not an
// absolute http:// or https:// URL without query or fragment. It makes no
// request.
func New(cfg Config) (*Backend, error) {
	base, err := parseBase(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.RoomAccessTimeout <= 0 {
		cfg.RoomAccessTimeout = DefaultRoomAccessTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.BreakerThreshold == 0 {
		cfg.BreakerThreshold = DefaultBreakerThreshold
	}
	if cfg.BreakerCooldown <= 0 {
		cfg.BreakerCooldown = DefaultBreakerCooldown
	}
	if cfg.RoomDenyTTL == 0 {
		cfg.RoomDenyTTL = DefaultRoomDenyTTL
	}
	if cfg.RoomDenyMaxEntries <= 0 {
		cfg.RoomDenyMaxEntries = DefaultRoomDenyMaxEntries
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}

	b := &Backend{
		urls:        map[string]string{},
		timeout:     cfg.Timeout,
		roomTimeout: cfg.RoomAccessTimeout,
		maxBody:     cfg.MaxBodyBytes,
		log:         cfg.Logger,
		slots:       make(chan struct{}, cfg.MaxInFlight),
		now:         time.Now,
	}
	clock := func() time.Time { return b.now() }
	b.breaker = newBreaker(cfg.BreakerThreshold, cfg.BreakerCooldown, clock, b.log)
	b.denies = newDenyCache(cfg.RoomDenyTTL, cfg.RoomDenyMaxEntries, clock)
	for _, ep := range []string{endpointValidate, endpointRevalidate, endpointRoomAccess} {
		b.urls[ep] = base.JoinPath(ep).String()
	}
	if cfg.Secret != "" {
		b.auth = "Bearer " + cfg.Secret
	} else {
		b.log.Warn("BACKEND_SECRET is empty: requests to the auth backend carry no Authorization header")
	}
	if cfg.InsecureSkipVerify && base.Scheme == "https" {
		b.log.Warn("TLS verification of the auth backend is off (InsecureSkipVerify): development only")
	}

	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLSConfig != nil {
		tlsConf = cfg.TLSConfig.Clone()
	}
	if cfg.RootCAs != nil {
		tlsConf.RootCAs = cfg.RootCAs
	}
	if cfg.InsecureSkipVerify {
		tlsConf.InsecureSkipVerify = true //nolint:gosec // explicit opt-out, OQ-30
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	b.transport = &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: cfg.Timeout,
		ForceAttemptHTTP2:   true, // h2 over TLS via ALPN, HTTP/1.1 otherwise
		MaxIdleConns:        cfg.MaxInFlight,
		MaxIdleConnsPerHost: cfg.MaxInFlight,
		MaxConnsPerHost:     cfg.MaxInFlight,
		IdleConnTimeout:     90 * time.Second,
	}
	b.client = &http.Client{
		Transport: b.transport,
		// A redirect is an answer other than 200, never followed (the
		// bearer secret must not travel elsewhere).
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return b, nil
}

// parseBase checks BaseURL (§5.1: AUTH_HTTP_URL is required).
func parseBase(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("httpauth: the base URL (AUTH_HTTP_URL) is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("httpauth: the base URL (AUTH_HTTP_URL): %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("httpauth: the base URL (AUTH_HTTP_URL) %q: the scheme must be http or https", raw)
	case u.Host == "":
		return nil, fmt.Errorf("httpauth: the base URL (AUTH_HTTP_URL) %q has no host", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("httpauth: the base URL (AUTH_HTTP_URL) %q must not have a query or a fragment", raw)
	case u.User != nil:
		return nil, fmt.Errorf("httpauth: the base URL (AUTH_HTTP_URL) must not carry credentials; use BACKEND_SECRET")
	}
	return u, nil
}

// Validate asks POST {base}/validate with {"accessToken": token}
// (wire-reference.md §5.1). A 200 answer {"result":"allow","client_attrs":{…}}
// gives the Grant built from client_attrs (§4.2, §5.1), with ExpiresAt from
// client_attrs.auth_expires_at (unix seconds or an RFC 3339 string; absent
// or null: no expiry).
//
// Errors: result "deny", null or absent → wraps auth.ErrDenied
// ("access_denied"); another status, invalid JSON, a result other than
// allow/deny, client_attrs that are not an object or lack a string
// actor_token_id, a body over MaxBodyBytes → wraps ErrAuthenticationFailed
// ("authentication_failed", OQ-29); no answer (transport, timeout, no slot,
// breaker open) → wraps ErrConnectionFailed and auth.ErrUnavailable
// ("connection_failed").
func (b *Backend) Validate(ctx context.Context, token string) (*auth.Grant, error) {
	body, err := b.post(ctx, endpointValidate, b.timeout, struct {
		AccessToken string `json:"accessToken"`
	}{token})
	if err != nil {
		return nil, err
	}
	top, ok := parseObject(body)
	if !ok {
		return nil, malformed(endpointValidate, "the body is %s, want a JSON object", jsonKind(body))
	}
	d := attrDecoder{log: b.log, endpoint: endpointValidate}
	raw, present := top["result"]
	if !present || isNull(raw) {
		return nil, fmt.Errorf("%w: validate: no result", auth.ErrDenied)
	}
	var result string
	if err := json.Unmarshal(raw, &result); err != nil {
		return nil, malformed(endpointValidate, "result is %s, want \"allow\" or \"deny\"", jsonKind(raw))
	}
	switch result {
	case "deny":
		return nil, fmt.Errorf("%w: validate: result deny", auth.ErrDenied)
	case "allow":
	default:
		return nil, malformed(endpointValidate, "result %q, want \"allow\" or \"deny\"", truncate(result))
	}
	attrs, ok := parseObject(top["client_attrs"])
	if !ok {
		return nil, malformed(endpointValidate, "client_attrs is %s, want an object", jsonKind(top["client_attrs"]))
	}
	actor, ok := d.actorID(attrs)
	if !ok {
		return nil, malformed(endpointValidate, "client_attrs has no actor_token_id string")
	}
	g := d.grant(attrs, actor)
	g.ExpiresAt = d.expiry(attrs, "auth_expires_at")
	return g, nil
}

// Revalidate asks POST {base}/revalidate with {"actorTokenId": id}
// (wire-reference.md §4.9, §5.1). A 200 answer {"valid":true, …attributes at the
// top level…} gives the fresh Grant; a missing actor_token_id is taken to be
// actorTokenID, a different one is a malformed answer.
//
// Errors: {"valid":false} → *auth.RevokedError, which wraps auth.ErrDenied
// (close 4001 with its Reason: disconnect_reason, else error, else
// "unknown"; verbatim, so possibly longer than a close frame allows);
// anything else (no answer, another status, a
// malformed body, valid neither true nor false) wraps auth.ErrUnavailable:
// retry later, never revoke on a broken answer (OQ-11 spirit).
func (b *Backend) Revalidate(ctx context.Context, actorTokenID string) (*auth.Grant, error) {
	g, err := b.revalidate(ctx, actorTokenID)
	return g, retryable(err)
}

func (b *Backend) revalidate(ctx context.Context, actorTokenID string) (*auth.Grant, error) {
	body, err := b.post(ctx, endpointRevalidate, b.timeout, struct {
		ActorTokenID string `json:"actorTokenId"`
	}{actorTokenID})
	if err != nil {
		return nil, err
	}
	top, ok := parseObject(body)
	if !ok {
		return nil, malformed(endpointRevalidate, "the body is %s, want a JSON object", jsonKind(body))
	}
	d := attrDecoder{log: b.log, endpoint: endpointRevalidate}
	valid, ok := d.optBool(top, "valid")
	if !ok {
		return nil, malformed(endpointRevalidate, "valid is %s, want a boolean", jsonKind(top["valid"]))
	}
	if !valid {
		reason := d.firstStr(top, "disconnect_reason", "error")
		if reason == "" {
			reason = "unknown"
		}
		return nil, &auth.RevokedError{Reason: reason}
	}
	actor := actorTokenID
	if raw, present := top["actor_token_id"]; present && !isNull(raw) {
		got, ok := d.actorID(top)
		if !ok || got != actorTokenID {
			return nil, malformed(endpointRevalidate, "actor_token_id is not the actor asked about")
		}
	}
	return d.grant(top, actor), nil
}

// CheckRoomAccess asks POST {base}/check-room-access with
// {"actorTokenId", "pattern"} (wire-reference.md §4.10, §5.1). A 200 answer
// {"allow":true,"allowed_topics":[rule…]} gives the rules in order, each with
// its own app_id and app_name (an empty app_id resolves as "unscoped").
//
// Errors: allow false, null or absent, or allow true without any rule →
// wraps auth.ErrDenied; any other failure wraps auth.ErrUnavailable. Both
// count as a deny, and every failure except the caller's own ctx ending is
// remembered for RoomDenyTTL: a second call for the same (actor, pattern)
// within it returns the same error without a request.
func (b *Backend) CheckRoomAccess(ctx context.Context, actorTokenID, pattern string) (acl.Rules, error) {
	if err := b.denies.get(actorTokenID, pattern); err != nil {
		return nil, err
	}
	rules, err := b.checkRoomAccess(ctx, actorTokenID, pattern)
	if err != nil {
		err = retryable(err)
		if ctx.Err() == nil {
			b.denies.put(actorTokenID, pattern, err)
		}
		return nil, err
	}
	return rules, nil
}

func (b *Backend) checkRoomAccess(ctx context.Context, actorTokenID, pattern string) (acl.Rules, error) {
	body, err := b.post(ctx, endpointRoomAccess, b.roomTimeout, struct {
		ActorTokenID string `json:"actorTokenId"`
		Pattern      string `json:"pattern"`
	}{actorTokenID, pattern})
	if err != nil {
		return nil, err
	}
	top, ok := parseObject(body)
	if !ok {
		return nil, malformed(endpointRoomAccess, "the body is %s, want a JSON object", jsonKind(body))
	}
	d := attrDecoder{log: b.log, endpoint: endpointRoomAccess}
	if raw, present := top["allow"]; present && !isNull(raw) && jsonKind(raw) != "a boolean" {
		return nil, malformed(endpointRoomAccess, "allow is %s, want a boolean", jsonKind(raw))
	}
	if !d.boolean(top, "allow") {
		return nil, fmt.Errorf("%w: check-room-access: not allowed", auth.ErrDenied)
	}
	rules := d.rules(top, "allowed_topics")
	if len(rules) == 0 {
		return nil, fmt.Errorf("%w: check-room-access: allowed without any rule", auth.ErrDenied)
	}
	return rules, nil
}

// Close closes the idle keep-alive connections to the backend. Calls made
// afterwards still work and open new connections. It returns nil.
func (b *Backend) Close() error {
	b.transport.CloseIdleConnections()
	return nil
}

// post sends one JSON request to endpoint and returns the body of a 200
// answer. It applies, in order: the breaker's fast fail, the timeout (which
// includes waiting for a slot), the in-flight cap, the breaker's admission,
// and the body bound.
func (b *Backend) post(ctx context.Context, endpoint string, timeout time.Duration, payload any) ([]byte, error) {
	if b.breaker.rejecting() {
		return nil, fmt.Errorf("%w: %s", ErrBreakerOpen, endpoint)
	}
	data, err := json.Marshal(payload)
	if err != nil { // cannot happen with the string-only payloads above
		return nil, fmt.Errorf("httpauth: %s: encoding the request: %w", endpoint, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %s: waiting for a free request slot: %w", ErrConnectionFailed, endpoint, context.Cause(ctx))
	}
	defer func() { <-b.slots }()

	ok, probe := b.breaker.allow()
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrBreakerOpen, endpoint)
	}
	body, o, err := b.do(ctx, endpoint, data)
	if o == outcomeFailure && errors.Is(err, context.Canceled) && ctx.Err() != nil {
		o = outcomeNeutral // the caller gave up; the backend is not to blame
	}
	b.breaker.done(probe, o)
	return body, err
}

// do performs the request and classifies the outcome for the breaker.
func (b *Backend) do(ctx context.Context, endpoint string, data []byte) ([]byte, outcome, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.urls[endpoint], bytes.NewReader(data))
	if err != nil {
		return nil, outcomeNeutral, fmt.Errorf("%w: %s: %w", ErrConnectionFailed, endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if b.auth != "" {
		req.Header.Set("Authorization", b.auth)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, outcomeFailure, fmt.Errorf("%w: %s: %w", ErrConnectionFailed, endpoint, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		drain(resp.Body)
		o := outcomeSuccess
		if resp.StatusCode >= 500 {
			o = outcomeFailure
		}
		return nil, o, &StatusError{Endpoint: endpoint, StatusCode: resp.StatusCode}
	}
	if resp.ContentLength > b.maxBody {
		return nil, outcomeSuccess, fmt.Errorf("%w: %s: %d bytes announced, the bound is %d", ErrResponseTooLarge, endpoint, resp.ContentLength, b.maxBody)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, b.maxBody+1))
	if err != nil {
		return nil, outcomeFailure, fmt.Errorf("%w: %s: reading the answer: %w", ErrConnectionFailed, endpoint, err)
	}
	if int64(len(body)) > b.maxBody {
		return nil, outcomeSuccess, fmt.Errorf("%w: %s: over %d bytes", ErrResponseTooLarge, endpoint, b.maxBody)
	}
	return body, outcomeSuccess, nil
}

// drainBytes is how much of an unwanted body is read so that the
// connection can be reused; a longer body costs the connection instead.
const drainBytes = 64 << 10

func drain(r io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(r, drainBytes)) }

// malformed is an unusable answer (OQ-29).
func malformed(endpoint, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrAuthenticationFailed, endpoint, fmt.Sprintf(format, args...))
}

// truncate shortens a backend string quoted in an error message.
func truncate(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// Interface guards.
var (
	_ auth.Authenticator     = (*Backend)(nil)
	_ auth.RoomAccessChecker = (*Backend)(nil)
)
