package httpcontrol

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/control"
)

// Defaults of Config.
const (
	// DefaultTimeout bounds each request (wire-reference.md §5.2).
	DefaultTimeout = 5 * time.Second
	// MaxResponseBytes bounds how much of an answer's body is read; a
	// /usage answer longer than this is a failure.
	MaxResponseBytes = 1 << 20
)

// ErrInvalidURL is returned, wrapped, by New for a BaseURL that is not an
// absolute http or https URL with a host.
var ErrInvalidURL = errors.New("httpcontrol: invalid base URL")

// StatusError is the error of a request answered with a status that is not
// the expected one (2xx).
type StatusError struct {
	// Endpoint is the path appended to the base URL, e.g. "/usage".
	Endpoint string
	// StatusCode is the HTTP status of the answer.
	StatusCode int
}

// Error returns "httpcontrol: POST /usage: status 500".
func (e *StatusError) Error() string {
	return fmt.Sprintf("httpcontrol: POST %s: status %d", e.Endpoint, e.StatusCode)
}

// Config configures a Controller.
type Config struct {
	// BaseURL is CONTROL_HTTP_URL, e.g. "https://api.example.com/v1/kraken".
	// Required. The endpoints are appended to it with path-join semantics,
	// its path kept (decisions.md OQ-28): POST {BaseURL}/usage,
	// {BaseURL}/subscriptions and {BaseURL}/webhook-failures.
	BaseURL string
	// Secret is BACKEND_SECRET, sent as "Authorization: Bearer <Secret>"
	// on every request ("Bearer " with nothing after it when empty, as
	// v0.4.0 does, wire-reference.md §5.1).
	Secret string
	// InsecureSkipVerify turns off verification of the server's
	// certificate. Verification is on by default, unlike v0.4.0.
	InsecureSkipVerify bool
	// TLSConfig, when set, is cloned as the base TLS configuration (roots,
	// client certificates; tests use it to trust an httptest server).
	// InsecureSkipVerify still applies on top of it.
	TLSConfig *tls.Config
	// Timeout bounds each request, answer included (default 5 s). The
	// caller's context may end it sooner.
	Timeout time.Duration
	// Logger receives, at debug level, 2xx /usage answers whose body is
	// not a JSON object (they leave the blocked set as it is). Failed
	// requests are returned, not logged: the Batcher logs them. nil means
	// zap.NewNop(); the name is "control.http".
	Logger *zap.Logger
}

// Controller is the HTTP control backend (CONTROL_BACKEND=http,
// wire-reference.md §5.2). It implements control.Controller and control.Closer.
// Safe for concurrent use.
type Controller struct {
	usageURL, subscriptionsURL, failuresURL string
	auth                                    string
	timeout                                 time.Duration
	transport                               *http.Transport
	client                                  *http.Client
	log                                     *zap.Logger
}

// Interface guards.
var (
	_ control.Controller = (*Controller)(nil)
	_ control.Closer     = (*Controller)(nil)
)

// New returns a Controller for cfg. It returns an error wrapping
// ErrInvalidURL when cfg.BaseURL is not an absolute http or https URL with a
// host. New opens no connection.
func New(cfg Config) (*Controller, error) {
	base, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidURL, cfg.BaseURL, err)
	}
	if (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("%w %q: want http:// or https:// and a host", ErrInvalidURL, cfg.BaseURL)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLSConfig != nil {
		tlsConfig = cfg.TLSConfig.Clone()
	}
	if cfg.InsecureSkipVerify {
		tlsConfig.InsecureSkipVerify = true
	}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsConfig,
		TLSHandshakeTimeout:   cfg.Timeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          4,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
	}
	return &Controller{
		usageURL:         base.JoinPath("usage").String(),
		subscriptionsURL: base.JoinPath("subscriptions").String(),
		failuresURL:      base.JoinPath("webhook-failures").String(),
		auth:             "Bearer " + cfg.Secret,
		timeout:          cfg.Timeout,
		transport:        transport,
		client: &http.Client{
			Transport: transport,
			// A control plane answers; it does not redirect. Following a
			// redirect would turn the POST into a GET.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log: cfg.Logger.Named("control.http"),
	}, nil
}

// ReportUsage POSTs {"entries":[…]} to {BaseURL}/usage; nil entries are
// sent as []. A 2xx answer is success: when its body is a JSON object with a
// "blockedProjects" array, the array's strings are returned with
// replace=true (other elements are ignored); any other body, including
// none, invalid JSON or a blockedProjects that is null or not an array,
// returns replace=false. A non-2xx status is a *StatusError; transport
// failures, timeouts and an answer over MaxResponseBytes are errors too.
func (c *Controller) ReportUsage(ctx context.Context, entries []control.UsageEntry) ([]string, bool, error) {
	if entries == nil {
		entries = []control.UsageEntry{}
	}
	body, err := encode(struct {
		Entries []control.UsageEntry `json:"entries"`
	}{entries})
	if err != nil {
		return nil, false, fmt.Errorf("httpcontrol: encode usage: %w", err)
	}
	answer, err := c.post(ctx, c.usageURL, "/usage", body)
	if err != nil {
		return nil, false, err
	}
	blocked, replace, ok := parseBlocked(answer)
	if !ok && len(bytes.TrimSpace(answer)) > 0 {
		c.log.Debug("usage answer is not a JSON object; blocked projects unchanged", zap.Int("bytes", len(answer)))
	}
	return blocked, replace, nil
}

// ReportSubscriptions POSTs {"changes":[…]} to {BaseURL}/subscriptions,
// each change in the shape of control.SubscriptionChange.MarshalJSON (a
// change whose Filters is not valid JSON makes it fail before sending). A
// 2xx answer is success; its body is ignored. Other statuses are a
// *StatusError.
func (c *Controller) ReportSubscriptions(ctx context.Context, changes []control.SubscriptionChange) error {
	if changes == nil {
		changes = []control.SubscriptionChange{}
	}
	body, err := encode(struct {
		Changes []control.SubscriptionChange `json:"changes"`
	}{changes})
	if err != nil {
		return fmt.Errorf("httpcontrol: encode subscriptions: %w", err)
	}
	_, err = c.post(ctx, c.subscriptionsURL, "/subscriptions", body)
	return err
}

// ReportWebhookFailure POSTs the failure (control.WebhookFailure.MarshalJSON,
// header values redacted) to {BaseURL}/webhook-failures. The answer's body is
// ignored; a non-2xx status is a *StatusError, which the caller logs (the
// report is not retried, as in v0.4.0).
func (c *Controller) ReportWebhookFailure(ctx context.Context, f control.WebhookFailure) error {
	body, err := encode(f)
	if err != nil {
		return fmt.Errorf("httpcontrol: encode webhook failure: %w", err)
	}
	_, err = c.post(ctx, c.failuresURL, "/webhook-failures", body)
	return err
}

// Close closes the idle connections of the Controller's transport, which
// ends their goroutines. Requests made after Close open new connections.
// It always returns nil.
func (c *Controller) Close() error {
	c.transport.CloseIdleConnections()
	return nil
}

// post sends one request and returns the body of a 2xx answer, read up to
// MaxResponseBytes.
func (c *Controller) post(ctx context.Context, target, endpoint string, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("httpcontrol: POST %s: %w", endpoint, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", c.auth)
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("httpcontrol: POST %s: %w", endpoint, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{Endpoint: endpoint, StatusCode: resp.StatusCode}
	}
	if err != nil {
		return nil, fmt.Errorf("httpcontrol: POST %s: reading the answer: %w", endpoint, err)
	}
	if len(answer) > MaxResponseBytes {
		return nil, fmt.Errorf("httpcontrol: POST %s: answer longer than %d bytes", endpoint, MaxResponseBytes)
	}
	return answer, nil
}

// encode is compact JSON without the HTML escaping of json.Marshal (<, >
// and & stay as they are, as in v0.4.0's bodies).
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// parseBlocked reads the blockedProjects of a /usage answer; object is false
// when the answer is not a JSON object.
func parseBlocked(answer []byte) (blocked []string, replace, object bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(answer, &top) != nil || top == nil {
		return nil, false, false
	}
	raw, ok := top["blockedProjects"]
	if !ok {
		return nil, false, true
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return nil, false, true // null or not an array
	}
	blocked = make([]string, 0, len(items))
	for _, it := range items {
		var id string
		if len(it) > 0 && it[0] == '"' && json.Unmarshal(it, &id) == nil {
			blocked = append(blocked, id)
		}
	}
	return blocked, true, true
}
