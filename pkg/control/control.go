package control

import (
	"bytes"
	"context"
	"encoding/json"
	"time"
)

// Controller delivers control-plane reports (wire-reference.md §5.2). It is the
// delivery half of the slot only: timing, batching, retries of usage counts
// and the blocked-project set are the Batcher's (the core owns policy,
// backends only deliver). Built-in implementations: control/noop (the
// default, CONTROL_BACKEND=noop) and control/httpcontrol
// (CONTROL_BACKEND=http).
//
// Implementations are safe for concurrent use, although the Batcher makes at
// most one call of each method at a time. Every method must return promptly
// once ctx is done, with an error (the Batcher bounds each call with
// Config.Timeout and cancels calls in flight when Close runs out of time).
// Slices passed in are owned by the caller and valid only until the method
// returns: a backend that needs them later copies them.
type Controller interface {
	// ReportUsage delivers the publish counts of entries (one entry per
	// project, POST /usage in §5.2). entries may be empty: the Batcher then
	// only asks for the current blocked set.
	//
	// On success (err == nil) the counts are delivered and the Batcher
	// forgets them. replace reports whether the answer carried a blocked
	// set: true means blocked is the complete new set of projects over
	// their monthly quota (§6.12), possibly empty, and replaces the old one;
	// false means the answer said nothing about it (the HTTP answer had no
	// blockedProjects key) and the set stays as it is.
	//
	// A non-nil err means the counts were not delivered; the Batcher keeps
	// them for the next report, so a backend must not have counted them
	// (or must tolerate counting them twice). blocked and replace are then
	// ignored.
	ReportUsage(ctx context.Context, entries []UsageEntry) (blocked []string, replace bool, err error)

	// ReportSubscriptions delivers a batch of subscription changes in the
	// order they happened (POST /subscriptions in §5.2). An error is
	// logged by the Batcher and the batch is dropped: subscriptions are
	// never reported twice.
	ReportSubscriptions(ctx context.Context, changes []SubscriptionChange) error

	// ReportWebhookFailure delivers the report of one trigger webhook that
	// finally failed (POST /webhook-failures in §5.2). An error is logged
	// and the report dropped.
	ReportWebhookFailure(ctx context.Context, f WebhookFailure) error
}

// Closer is optional: a Controller that holds connections or goroutines
// implements it, and the node calls Close once on shutdown, after the
// Batcher's Close. Close releases idle connections and must be safe to call
// more than once.
type Closer interface {
	Close() error
}

// UsageEntry is one project's usage since its last delivered report
// (wire-reference.md §5.2). Its JSON form is
// {"projectId":"…","count":n,"totalBytes":n}.
type UsageEntry struct {
	// ProjectID is the project of the publishers (auth.Grant.ProjectID).
	ProjectID string `json:"projectId"`
	// Count is the number of accepted publishes, one per publish whatever
	// its fan-out (MQTT publishes included).
	Count int64 `json:"count"`
	// TotalBytes is the sum of the lengths in bytes of the compact JSON
	// rendering of each publish's data (wire.AppendJSON, whose length
	// wire.JSONLen computes; decisions.md OQ-48), not of its
	// MessagePack size.
	TotalBytes int64 `json:"totalBytes"`
}

// Action is what a SubscriptionChange did.
type Action string

// The actions of wire-reference.md §5.2.
const (
	// ActionSubscribe is recorded for each live subscribe and each
	// setFilters (then with Filters only, no load-balance fields).
	ActionSubscribe Action = "subscribe"
	// ActionUnsubscribe is recorded for each unsubscribe. Disconnects
	// record nothing.
	ActionUnsubscribe Action = "unsubscribe"
)

// SubscriptionChange is one reported subscription change
// (wire-reference.md §5.2; decisions.md OQ-49 keeps this batch contract).
// Its JSON form is {"actorTokenId","topic","action","loadBalance"?:true,
// "loadBalanceGroup"?,"filters"?}: loadBalance only when true,
// loadBalanceGroup only with loadBalance and when non-empty, filters only
// when non-empty and not JSON null.
type SubscriptionChange struct {
	// ActorTokenID is the subscriber's actor.
	ActorTokenID string
	// Topic is the pattern exactly as the client sent it.
	Topic string
	// Action is ActionSubscribe or ActionUnsubscribe.
	Action Action
	// LoadBalance reports a load-balanced subscription (§6.8).
	LoadBalance bool
	// LoadBalanceGroup is the full scoped group name,
	// "<projectId>_<appId>_<group or actor>" (§4.7); used only with
	// LoadBalance.
	LoadBalanceGroup string
	// Filters is the JSON array of the subscription's filters, as the
	// client sent them (rendered with wire.AppendJSON); nil for none. The
	// Batcher drops Filters that are not valid JSON (the change is kept).
	Filters json.RawMessage
}

// MarshalJSON renders the change in the shape documented on the type.
func (c SubscriptionChange) MarshalJSON() ([]byte, error) {
	type change struct {
		ActorTokenID     string          `json:"actorTokenId"`
		Topic            string          `json:"topic"`
		Action           Action          `json:"action"`
		LoadBalance      bool            `json:"loadBalance,omitempty"`
		LoadBalanceGroup string          `json:"loadBalanceGroup,omitempty"`
		Filters          json.RawMessage `json:"filters,omitempty"`
	}
	out := change{ActorTokenID: c.ActorTokenID, Topic: c.Topic, Action: c.Action, LoadBalance: c.LoadBalance}
	if c.LoadBalance {
		out.LoadBalanceGroup = c.LoadBalanceGroup
	}
	if hasFilters(c.Filters) {
		out.Filters = c.Filters
	}
	return marshalNoHTML(out)
}

// hasFilters reports whether raw is a filters value worth sending: non-empty
// and not null.
func hasFilters(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && !bytes.Equal(t, []byte("null"))
}

// FailureTypeTrigger is the only WebhookFailure.Type: hydration failures are
// only logged (wire-reference.md §5.3).
const FailureTypeTrigger = "trigger"

// RedactedHeaderValue is the value every header of a WebhookFailure's
// requestHeaders carries: configured webhook headers often hold customer
// credentials, so their values never leave the node (OQ-63).
const RedactedHeaderValue = "[redacted]"

// WebhookFailure reports one trigger webhook that finally failed
// (wire-reference.md §5.2 /webhook-failures, §5.3). Its JSON form is
//
//	{"organizationId","projectId","appId","roomId","type":"trigger",
//	 "webhookUrl","requestHeaders":{name:"[redacted]"},"requestBody":{…},
//	 "responseStatus":n,"errorMessage","node","timestamp":ms}
//
// with appId and roomId null when empty.
type WebhookFailure struct {
	// OrganizationID and ProjectID are the publisher's (auth.Grant).
	OrganizationID, ProjectID string
	// AppID is the app the topic resolved to; "" renders null.
	AppID string
	// RoomID is the room of an exact-resolved topic; "" renders null (as
	// v0.4.0 sends for wildcard resolutions).
	RoomID string
	// Type is FailureTypeTrigger.
	Type string
	// WebhookURL is the URL that was called.
	WebhookURL string
	// RequestHeaders are the names of the configured webhook headers. Their
	// values are never carried: each renders as RedactedHeaderValue
	// (OQ-63). Content-Type is not listed.
	RequestHeaders []string
	// RequestBody is the JSON body that was sent,
	// {"roomName","topicName","actorId","data","scope"} (§5.3); nil renders
	// as {}.
	RequestBody json.RawMessage
	// ResponseStatus is the HTTP status of the final answer (a non-2xx,
	// non-5xx one), or 0 when the retries ran out.
	ResponseStatus int
	// ErrorMessage is "max_retries_exceeded" when the retries ran out, else
	// the start of the answer's body (or a short description of the status).
	ErrorMessage string
	// Node names the node that called the webhook.
	Node string
	// Timestamp is when the failure was final; it renders as Unix
	// milliseconds.
	Timestamp time.Time
}

// MarshalJSON renders the failure in the shape documented on the type.
func (f WebhookFailure) MarshalJSON() ([]byte, error) {
	type failure struct {
		OrganizationID string            `json:"organizationId"`
		ProjectID      string            `json:"projectId"`
		AppID          *string           `json:"appId"`
		RoomID         *string           `json:"roomId"`
		Type           string            `json:"type"`
		WebhookURL     string            `json:"webhookUrl"`
		RequestHeaders map[string]string `json:"requestHeaders"`
		RequestBody    json.RawMessage   `json:"requestBody"`
		ResponseStatus int               `json:"responseStatus"`
		ErrorMessage   string            `json:"errorMessage"`
		Node           string            `json:"node"`
		Timestamp      int64             `json:"timestamp"`
	}
	out := failure{
		OrganizationID: f.OrganizationID,
		ProjectID:      f.ProjectID,
		AppID:          nullable(f.AppID),
		RoomID:         nullable(f.RoomID),
		Type:           f.Type,
		WebhookURL:     f.WebhookURL,
		RequestHeaders: make(map[string]string, len(f.RequestHeaders)),
		RequestBody:    f.RequestBody,
		ResponseStatus: f.ResponseStatus,
		ErrorMessage:   f.ErrorMessage,
		Node:           f.Node,
		Timestamp:      f.Timestamp.UnixMilli(),
	}
	for _, name := range f.RequestHeaders {
		out.RequestHeaders[name] = RedactedHeaderValue
	}
	if len(bytes.TrimSpace(out.RequestBody)) == 0 {
		out.RequestBody = json.RawMessage("{}")
	}
	return marshalNoHTML(out)
}

// nullable returns nil for "" and &s otherwise.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// marshalNoHTML is json.Marshal without the escaping of <, > and &.
func marshalNoHTML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
