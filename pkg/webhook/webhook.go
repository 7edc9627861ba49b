package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Defaults of Config (wire-reference.md §5.3).
const (
	// DefaultQueueSize bounds the webhooks waiting for a sender.
	DefaultQueueSize = 10000
	// DefaultWorkers is the number of sender goroutines.
	DefaultWorkers = 16
	// DefaultAttemptTimeout bounds one attempt, answer included.
	DefaultAttemptTimeout = 30 * time.Second
	// DefaultMaxResponseBytes (1 MiB) bounds a hydration answer.
	DefaultMaxResponseBytes = 1 << 20
)

// DefaultBackoff is the pause before each retry: 1 s, then 2 s, for three
// attempts in all (wire-reference.md §5.3).
var DefaultBackoff = []time.Duration{time.Second, 2 * time.Second}

// MessageMaxRetries is the ErrorMessage of a failure whose retries ran out
// (wire-reference.md §5.3); its ResponseStatus is 0.
const MessageMaxRetries = "max_retries_exceeded"

// maxErrorMessage bounds the ErrorMessage taken from an answer's body.
const maxErrorMessage = 1024

// Config configures a Dispatcher. The zero value works.
type Config struct {
	// Client makes the requests. nil means a client of the Dispatcher's own:
	// certificates verified, proxies from the environment, redirects not
	// followed (a 3xx answer is a final failure), its idle connections
	// closed by Close. A Client given here is used as it is (its redirect
	// policy included) and never closed.
	Client *http.Client
	// AttemptTimeout bounds each attempt, answer body included (default
	// 30 s).
	AttemptTimeout time.Duration
	// Backoff is the pause before each retry; len(Backoff)+1 attempts are
	// made in all. nil means DefaultBackoff (1 s, 2 s: three attempts); an
	// empty non-nil slice means a single attempt. A 5xx answer or a
	// transport error (timeouts included) is retried; a 2xx is success; any
	// other status (4xx, and 3xx or 1xx-final answers) is a final failure
	// and not retried. v0.4.0 also slept 3 s after the last failed attempt
	// before giving up; that pause delayed nothing but the failure report
	// and is not reproduced: the failure is final as soon as the last
	// attempt fails.
	Backoff []time.Duration
	// QueueSize bounds the webhooks waiting for a sender (default 10000);
	// Hydrate and Trigger drop and count a webhook that finds it full.
	QueueSize int
	// Workers is the number of sender goroutines, which bounds the
	// requests in flight (default 16).
	Workers int
	// MaxResponseBytes bounds the hydration answer (default 1 MiB); a
	// longer answer is a failure and nothing is delivered. Trigger answers
	// are read and discarded up to this bound.
	MaxResponseBytes int64
	// OnFailure is called once for each trigger webhook that finally
	// failed, from a sender goroutine; it must not block (e.g.
	// control.Batcher.RecordWebhookFailure). nil means failures are only
	// counted and logged. Hydration failures are never reported (§5.3).
	OnFailure func(control.WebhookFailure)
	// Node fills control.WebhookFailure.Node.
	Node string
	// Logger receives failed webhooks (warn) and retries (debug); nil
	// means zap.NewNop(). The Dispatcher logs under the name "webhook".
	// URLs are logged without their query and user information.
	Logger *zap.Logger
	// Context is the node's base context: every request and every pause
	// between attempts is bound to a context derived from it, so
	// cancelling it abandons what is in flight (counted as dropped, as
	// when Close runs out of time). nil means context.Background().
	Context context.Context
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	c.Backoff = slices.Clone(c.Backoff)
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.MaxResponseBytes <= 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Context == nil {
		c.Context = context.Background()
	}
	return c
}

// newClient is the default Client of a Dispatcher with workers senders. Its
// transport has no TLSClientConfig: certificates are verified against the
// system roots.
func newClient(workers int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   workers,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Scope is the actor's access scope as webhook bodies show it (§5.3,
// OQ-40): {"accessScopeId","slug","name"}, or null for an unscoped actor,
// that is one whose Slug is empty. An empty ID or Name renders null.
type Scope struct {
	// ID is auth.Grant.ScopeID, Slug auth.Grant.ScopeSlug and Name
	// auth.Grant.ScopeName.
	ID, Slug, Name string
}

// HydrateRequest is one hydration webhook call, made after a successful
// live subscribe (§5.3). Its body is
// {"actorId","roomName","topicName","scope"}.
type HydrateRequest struct {
	// Webhook is the configuration to call (auth.App.HydrationFor); it is
	// shared with the grant and only read. Its Headers are set on the
	// request after Content-Type: application/json, so a configured
	// Content-Type replaces it. A nil Webhook or an empty URL makes Hydrate
	// a no-op.
	Webhook *auth.Webhook
	// ActorID is the subscriber's actorTokenId.
	ActorID string
	// RoomName is RoomName's result for the subscription, TopicName
	// TopicName's.
	RoomName, TopicName string
	// Scope is the subscriber's scope.
	Scope Scope
}

// TriggerRequest is one trigger webhook call, made after an accepted
// publish (§5.3). Its body is {"roomName","topicName","actorId","data",
// "scope"}; the other fields fill the failure report (§5.2).
type TriggerRequest struct {
	// Webhook is the configuration to call (auth.App.TriggerFor); shared
	// and only read. A nil Webhook or an empty URL makes Trigger a no-op.
	Webhook *auth.Webhook
	// OrganizationID, ProjectID and AppID (the resolved app) of the
	// publisher, and RoomID, the room of an exact resolution ("" for a
	// wildcard one), go into the failure report only.
	OrganizationID, ProjectID, AppID, RoomID string
	// ActorID is the publisher's actorTokenId.
	ActorID string
	// RoomName and TopicName as for HydrateRequest.
	RoomName, TopicName string
	// Scope is the publisher's scope.
	Scope Scope
	// Data is the publish's data as raw MessagePack; the body carries its
	// JSON rendering (wire.AppendJSON, OQ-1). Trigger copies it.
	Data []byte
	// DataJSON, when non-empty, is used as the body's data instead of
	// rendering Data: a caller that rendered it already for the usage count
	// passes it here. Trigger copies it. It must be valid JSON; invalid
	// JSON falls back to rendering Data.
	DataJSON json.RawMessage
}

// Stats are a Dispatcher's counters since New. Every webhook accepted by
// Hydrate or Trigger ends up in exactly one of Sent, Failed and Dropped, and
// is counted there only after its deliver or OnFailure call has returned.
type Stats struct {
	// Sent counts webhooks answered 2xx (for hydration: with a valid JSON
	// body, delivered).
	Sent uint64
	// Failed counts webhooks that finally failed: retries ran out, a final
	// status, an invalid URL, or a hydration answer that was too long or
	// not JSON.
	Failed uint64
	// Dropped counts webhooks never completed: the queue was full, Close
	// had been called, or Close ran out of time before or while they ran.
	Dropped uint64
	// Retried counts retry attempts (attempts after the first).
	Retried uint64
}

// job is one queued webhook.
type job struct {
	hook    *auth.Webhook
	trigger bool
	hydrate HydrateRequest
	deliver func(json.RawMessage)
	trig    TriggerRequest
}

// Dispatcher calls customer webhooks (wire-reference.md §5.3) from a fixed pool
// of sender goroutines fed by a bounded queue, with the retry policy of
// Config.Backoff. See the package documentation for the concurrency
// contract.
type Dispatcher struct {
	cfg       Config
	client    *http.Client
	ownClient bool
	log       *zap.Logger

	mu     sync.RWMutex // guards closed and the sends on queue
	closed bool
	queue  chan *job

	base   context.Context // Config.Context's child, cancelled when Close runs out of time
	cancel context.CancelFunc
	wg     sync.WaitGroup // the senders; Close waits for them

	sent, failed, dropped, retried atomic.Uint64
}

// New returns a Dispatcher for cfg, with defaults for zero fields, and
// starts its Config.Workers sender goroutines. Call Close when done.
func New(cfg Config) *Dispatcher {
	cfg = cfg.withDefaults()
	d := &Dispatcher{
		cfg:    cfg,
		client: cfg.Client,
		log:    cfg.Logger.Named("webhook"),
		queue:  make(chan *job, cfg.QueueSize),
	}
	if d.client == nil {
		d.client, d.ownClient = newClient(cfg.Workers), true
	}
	d.base, d.cancel = context.WithCancel(cfg.Context)
	d.wg.Add(cfg.Workers)
	for range cfg.Workers {
		go d.worker() // owned by wg: Close waits for every sender
	}
	return d
}

// Hydrate queues the hydration webhook of r and returns at once; it never
// blocks and never fails the subscribe. When the webhook answers 2xx with a
// valid JSON body (at most Config.MaxResponseBytes), deliver is called with
// that body, once, from a sender goroutine; the caller owns the slice.
// deliver must not block (it should queue the hydration frame, as the
// connection's outbound queue does) and may be nil. On any failure nothing
// is delivered; the failure is logged and counted. A webhook that finds the
// queue full, or comes after Close, is dropped and counted.
func (d *Dispatcher) Hydrate(r HydrateRequest, deliver func(data json.RawMessage)) {
	if r.Webhook == nil || r.Webhook.URL == "" {
		return
	}
	d.enqueue(&job{hook: r.Webhook, hydrate: r, deliver: deliver})
}

// Trigger queues the trigger webhook of r and returns at once; it never
// blocks. r.Data and r.DataJSON are copied, so the caller may reuse them.
// The answer is ignored; a webhook that finally fails is passed to
// Config.OnFailure once, with its header values left out (OQ-63). A webhook
// that finds the queue full, or comes after Close, is dropped and counted.
func (d *Dispatcher) Trigger(r TriggerRequest) {
	if r.Webhook == nil || r.Webhook.URL == "" {
		return
	}
	r.Data = bytes.Clone(r.Data)
	r.DataJSON = bytes.Clone(r.DataJSON)
	d.enqueue(&job{hook: r.Webhook, trigger: true, trig: r})
}

// enqueue hands j to a sender without waiting.
func (d *Dispatcher) enqueue(j *job) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		d.dropped.Add(1)
		return
	}
	select {
	case d.queue <- j:
	default:
		d.dropped.Add(1)
	}
}

// Stats returns the current counters. It is safe to call at any time.
func (d *Dispatcher) Stats() Stats {
	return Stats{Sent: d.sent.Load(), Failed: d.failed.Load(), Dropped: d.dropped.Load(), Retried: d.retried.Load()}
}

// Close stops accepting webhooks and lets the senders finish what is queued
// and in flight, retries included, until ctx is done; then it cancels the
// requests in flight and the pauses between attempts, counts what was left
// as dropped (without calling OnFailure) and returns ctx.Err(). Either way
// every sender goroutine has exited when Close returns, and a Dispatcher
// that owns its Client has closed the idle connections. Close is safe to
// call more than once.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	if !d.closed {
		d.closed = true
		close(d.queue)
	}
	d.mu.Unlock()

	done := make(chan struct{})
	// Ends with the senders, which end once the queue is drained or
	// abandoned; Close waits for it below either way.
	go func() {
		d.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		d.cancel()
		<-done
	}
	d.cancel()
	if d.ownClient {
		d.client.CloseIdleConnections()
	}
	return err
}

// worker is one sender goroutine.
func (d *Dispatcher) worker() {
	defer d.wg.Done()
	for j := range d.queue {
		if d.base.Err() != nil {
			d.dropped.Add(1)
			continue
		}
		if j.trigger {
			d.runTrigger(j)
		} else {
			d.runHydrate(j)
		}
	}
}

// runHydrate makes one hydration call and delivers its answer.
func (d *Dispatcher) runHydrate(j *job) {
	body, err := marshal(hydrateBody{
		ActorID:   j.hydrate.ActorID,
		RoomName:  j.hydrate.RoomName,
		TopicName: j.hydrate.TopicName,
		Scope:     j.hydrate.Scope.render(),
	})
	if err != nil { // cannot happen: strings only
		d.failed.Add(1)
		return
	}
	res := d.call(j.hook, body, true)
	switch {
	case res.abandoned:
		d.dropped.Add(1)
	case !res.ok:
		d.failed.Add(1)
		d.logFailure("hydration webhook failed", j.hook, res)
	case !json.Valid(res.body):
		d.failed.Add(1)
		d.logFailure("hydration webhook answered invalid JSON", j.hook, res)
	default:
		if j.deliver != nil {
			j.deliver(json.RawMessage(res.body))
		}
		d.sent.Add(1)
	}
}

// runTrigger makes one trigger call and reports its final failure.
func (d *Dispatcher) runTrigger(j *job) {
	r := &j.trig
	body, err := marshal(triggerBody{
		RoomName:  r.RoomName,
		TopicName: r.TopicName,
		ActorID:   r.ActorID,
		Data:      d.renderData(r),
		Scope:     r.Scope.render(),
	})
	if err != nil { // cannot happen: data is valid JSON
		d.failed.Add(1)
		return
	}
	res := d.call(j.hook, body, false)
	switch {
	case res.abandoned:
		d.dropped.Add(1)
		return
	case res.ok:
		d.sent.Add(1)
		return
	}
	defer d.failed.Add(1)
	d.logFailure("trigger webhook failed", j.hook, res)
	if d.cfg.OnFailure == nil {
		return
	}
	names := make([]string, 0, len(j.hook.Headers))
	for name := range j.hook.Headers {
		names = append(names, name)
	}
	slices.Sort(names)
	d.cfg.OnFailure(control.WebhookFailure{
		OrganizationID: r.OrganizationID,
		ProjectID:      r.ProjectID,
		AppID:          r.AppID,
		RoomID:         r.RoomID,
		Type:           control.FailureTypeTrigger,
		WebhookURL:     j.hook.URL,
		RequestHeaders: names,
		RequestBody:    body,
		ResponseStatus: res.status,
		ErrorMessage:   res.message,
		Node:           d.cfg.Node,
		Timestamp:      time.Now(),
	})
}

// renderData returns the JSON of a trigger's data: DataJSON when valid,
// else the rendering of Data, else null.
func (d *Dispatcher) renderData(r *TriggerRequest) json.RawMessage {
	if len(r.DataJSON) > 0 && json.Valid(r.DataJSON) {
		return r.DataJSON
	}
	if len(r.Data) == 0 {
		return json.RawMessage("null")
	}
	out, err := wire.AppendJSON(nil, r.Data)
	if err != nil {
		d.log.Warn("trigger data is not valid MessagePack; sent as null", zap.Error(err))
		return json.RawMessage("null")
	}
	return out
}

// result is the outcome of call.
type result struct {
	ok bool
	// abandoned reports a call cut short by Close.
	abandoned bool
	// body is the 2xx answer when call was asked for it.
	body []byte
	// status and message describe a failure: status 0 with
	// MessageMaxRetries when the retries ran out.
	status  int
	message string
	// last is the error of the last attempt, for the log.
	last error
}

// outcome of one attempt.
const (
	attemptOK = iota + 1
	attemptRetry
	attemptFinal
)

// call POSTs body to hook with the retry policy of Config.Backoff.
func (d *Dispatcher) call(hook *auth.Webhook, body []byte, wantBody bool) result {
	if u, err := url.Parse(hook.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return result{message: "invalid webhook url", last: errors.New("webhook: URL must be absolute http or https")}
	}
	for attempt := 0; ; attempt++ {
		kind, res := d.attempt(hook, body, wantBody)
		if d.base.Err() != nil && kind != attemptOK {
			return result{abandoned: true}
		}
		switch kind {
		case attemptOK:
			return res
		case attemptFinal:
			return res
		}
		if attempt == len(d.cfg.Backoff) {
			return result{status: 0, message: MessageMaxRetries, last: res.last}
		}
		d.log.Debug("webhook attempt failed; retrying", zap.String("webhook_url", safeURL(hook.URL)),
			zap.Int("attempt", attempt+1), zap.Duration("backoff", d.cfg.Backoff[attempt]), zap.Error(res.last))
		pause := time.NewTimer(d.cfg.Backoff[attempt])
		select {
		case <-pause.C:
		case <-d.base.Done():
			pause.Stop()
			return result{abandoned: true}
		}
		d.retried.Add(1)
	}
}

// attempt makes one request.
func (d *Dispatcher) attempt(hook *auth.Webhook, body []byte, wantBody bool) (int, result) {
	ctx, cancel := context.WithTimeout(d.base, d.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(body))
	if err != nil {
		return attemptFinal, result{message: "invalid webhook url", last: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for name, value := range hook.Headers {
		req.Header.Set(name, value)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return attemptRetry, result{last: err}
	}
	defer resp.Body.Close()
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		if !wantBody {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, d.cfg.MaxResponseBytes))
			return attemptOK, result{ok: true}
		}
		answer, err := io.ReadAll(io.LimitReader(resp.Body, d.cfg.MaxResponseBytes+1))
		if err != nil {
			return attemptRetry, result{last: fmt.Errorf("webhook: reading the answer: %w", err)}
		}
		if int64(len(answer)) > d.cfg.MaxResponseBytes {
			return attemptFinal, result{status: code, message: "response too large",
				last: fmt.Errorf("webhook: answer longer than %d bytes", d.cfg.MaxResponseBytes)}
		}
		return attemptOK, result{ok: true, body: answer}
	case code >= 500:
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorMessage))
		return attemptRetry, result{last: fmt.Errorf("webhook: status %d", code)}
	default:
		head, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorMessage))
		msg := strings.TrimSpace(strings.ToValidUTF8(string(head), string(utf8.RuneError)))
		if msg == "" {
			msg = fmt.Sprintf("status %d", code)
		}
		return attemptFinal, result{status: code, message: msg, last: fmt.Errorf("webhook: status %d", code)}
	}
}

// logFailure logs one failed webhook.
func (d *Dispatcher) logFailure(msg string, hook *auth.Webhook, res result) {
	if ce := d.log.Check(zap.WarnLevel, msg); ce != nil {
		ce.Write(zap.String("webhook_url", safeURL(hook.URL)), zap.Int("status", res.status),
			zap.String("reason", res.message), zap.Error(res.last))
	}
}

// safeURL returns raw without user information, query and fragment, for
// logs.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid url)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// scopeJSON is the JSON of a Scope.
type scopeJSON struct {
	AccessScopeID *string `json:"accessScopeId"`
	Slug          string  `json:"slug"`
	Name          *string `json:"name"`
}

// render returns the JSON form of s, nil for an unscoped actor.
func (s Scope) render() *scopeJSON {
	if s.Slug == "" {
		return nil
	}
	out := &scopeJSON{Slug: s.Slug}
	if s.ID != "" {
		out.AccessScopeID = &s.ID
	}
	if s.Name != "" {
		out.Name = &s.Name
	}
	return out
}

// hydrateBody is the body of a hydration call (§5.3).
type hydrateBody struct {
	ActorID   string     `json:"actorId"`
	RoomName  string     `json:"roomName"`
	TopicName string     `json:"topicName"`
	Scope     *scopeJSON `json:"scope"`
}

// triggerBody is the body of a trigger call (§5.3).
type triggerBody struct {
	RoomName  string          `json:"roomName"`
	TopicName string          `json:"topicName"`
	ActorID   string          `json:"actorId"`
	Data      json.RawMessage `json:"data"`
	Scope     *scopeJSON      `json:"scope"`
}

// marshal encodes v as compact JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
