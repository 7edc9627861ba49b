package session

import (
	"sync/atomic"
	"time"

	"github.com/NoLagApp/kraken/pkg/wire"
)

// What the session counts for /metrics (pkg/metrics reads it through
// server.Stats). Every counter is a plain atomic in a fixed array indexed
// by a small enum: no map, no lock and no allocation on the read or
// publish path, nothing per delivery. Label values are the enums' String
// forms, never a topic, a token, an actor or an organisation.

// Refusal is why a publish or a subscribe was refused; its String is the
// `reason` label and log field.
type Refusal uint8

// The refusals. PublishRefusals and SubscribeRefusals say which apply to
// which.
const (
	RefuseRate                 Refusal = iota + 1 // over the rate limit (42910)
	RefuseSize                                    // data over the size limit (42930)
	RefuseGrant                                   // topic outside the grants (42940)
	RefuseBusy                                    // the workers are behind (42910, "the broker is busy")
	RefuseQuota                                   // the project is blocked by the control plane (42920)
	RefuseInvalidTopic                            // a malformed topic (invalid_topic)
	RefuseInvalidFilter                           // a rejected filter (42960, too_many_filters, invalid_filter_chars)
	RefuseBadRequest                              // a required field missing (bad_request)
	RefuseTooManySubscriptions                    // the connection holds hub.Config.MaxSubscriptions (too_many_subscriptions)

	numRefusals
)

// NumRefusals is one more than the largest Refusal, for arrays indexed by it.
const NumRefusals = int(numRefusals)

var refusalLabels = [numRefusals]string{"", "rate", "size", "grant", "busy", "quota", "invalid_topic",
	"invalid_filter", "bad_request", "too_many_subscriptions"}

// PublishRefusals are the reasons a publish is refused for: the `reason`
// values of kraken_publish_refused_total (docs/operations.md).
var PublishRefusals = [...]Refusal{RefuseRate, RefuseSize, RefuseGrant, RefuseBusy, RefuseQuota,
	RefuseInvalidTopic, RefuseInvalidFilter, RefuseBadRequest}

// SubscribeRefusals are the reasons a subscribe is refused for: the
// `reason` values of kraken_subscribe_refused_total.
var SubscribeRefusals = [...]Refusal{RefuseGrant, RefuseInvalidTopic, RefuseInvalidFilter,
	RefuseBadRequest, RefuseTooManySubscriptions}

// String returns the refusal's label, e.g. "rate".
func (r Refusal) String() string {
	if r == 0 || r >= numRefusals {
		return "unknown"
	}
	return refusalLabels[r]
}

// classifyPublish returns the Refusal of a refused publish's error.
func classifyPublish(e *wire.Error) Refusal {
	switch {
	case e.Code == wire.CodeRateLimited && e.Detail == DetailBusy:
		return RefuseBusy
	case e.Code == wire.CodeRateLimited:
		return RefuseRate
	case e.Code == wire.CodeMessageTooLarge:
		return RefuseSize
	case e.Code == wire.CodeUnknownTopic:
		return RefuseGrant
	case e.Code == wire.CodeQuotaExceeded:
		return RefuseQuota
	case e.Code == wire.CodeInvalidFilter:
		return RefuseInvalidFilter
	case e.Err == wire.ErrInvalidTopic:
		return RefuseInvalidTopic
	}
	return RefuseBadRequest
}

// AuthOutcome is the result of one `auth` or `reauth`; its String is the
// `outcome` label. AuthOutcomes and ReauthOutcomes say which apply to
// which.
type AuthOutcome uint8

// The auth outcomes.
const (
	AuthOK          AuthOutcome = iota + 1 // accepted
	AuthDenied                             // unknown or expired token, or a token that is not a string (access_denied)
	AuthOrgLimit                           // the organisation holds its maximum of connections
	AuthUnavailable                        // the auth service could not be reached (connection_failed)
	AuthError                              // the backend failed or answered badly (authentication_failed)
	AuthMismatch                           // a reauth token of another actor, organisation, project or app (actor_mismatch)

	numAuthOutcomes
)

// NumAuthOutcomes is one more than the largest AuthOutcome.
const NumAuthOutcomes = int(numAuthOutcomes)

var authLabels = [numAuthOutcomes]string{"", "ok", "denied", "org_limit", "unavailable", "error", "mismatch"}

// AuthOutcomes are the outcomes of an `auth`: the `outcome` values of
// kraken_auth_results_total{type="auth"} (docs/operations.md).
var AuthOutcomes = [...]AuthOutcome{AuthOK, AuthDenied, AuthOrgLimit, AuthUnavailable, AuthError}

// ReauthOutcomes are the outcomes of a `reauth` that carried a token: the
// `outcome` values of kraken_auth_results_total{type="reauth"}. The
// connection already holds its organisation slot, so there is no
// org_limit.
var ReauthOutcomes = [...]AuthOutcome{AuthOK, AuthDenied, AuthMismatch, AuthUnavailable, AuthError}

// String returns the outcome's label, e.g. "denied".
func (o AuthOutcome) String() string {
	if o == 0 || o >= numAuthOutcomes {
		return "unknown"
	}
	return authLabels[o]
}

// authOutcomeOf maps the `error` of a failed auth reply to its outcome.
func authOutcomeOf(reason string) AuthOutcome {
	switch reason {
	case "":
		return AuthOK
	case wire.ErrAccessDenied:
		return AuthDenied
	case wire.ErrConnectionLimitReached:
		return AuthOrgLimit
	case wire.ErrConnectionFailed:
		return AuthUnavailable
	case wire.ErrActorMismatch:
		return AuthMismatch
	}
	return AuthError
}

// Source is where an accepted publish came from: its String is the
// `source` label.
type Source uint8

// The sources. Publications from other nodes are the hub's Publications
// less these.
const (
	SourceClient   Source = iota + 1 // a client's publish
	SourceInternal                   // POST /internal/publish

	numSources
)

// NumSources is one more than the largest Source.
const NumSources = int(numSources)

// String returns "client" or "internal".
func (s Source) String() string {
	switch s {
	case SourceClient:
		return "client"
	case SourceInternal:
		return "internal"
	}
	return "unknown"
}

// AuthBuckets are the upper bounds, in seconds, of the auth latency
// histogram (kraken_auth_duration_seconds): a token-cache hit or the token
// file answers in microseconds, an HTTP auth service in milliseconds, and
// the validation gives up after 5 s.
var AuthBuckets = [...]float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// Histogram is a snapshot of a latency histogram: Buckets[i] counts the
// observations of at most AuthBuckets[i] seconds (cumulative), Count all of
// them.
type Histogram struct {
	Count      uint64
	SumSeconds float64
	Buckets    [len(AuthBuckets)]uint64
}

// latency is a fixed-bucket histogram of atomics.
type latency struct {
	counts [len(AuthBuckets) + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumNs  atomic.Uint64
}

func (l *latency) observe(d time.Duration) {
	s := d.Seconds()
	i := 0
	for i < len(AuthBuckets) && s > AuthBuckets[i] {
		i++
	}
	l.counts[i].Add(1)
	l.sumNs.Add(uint64(max(d, 0)))
}

func (l *latency) snapshot() Histogram {
	var h Histogram
	var cum uint64
	for i := range l.counts {
		cum += l.counts[i].Load()
		if i < len(h.Buckets) {
			h.Buckets[i] = cum
		}
	}
	h.Count = cum
	h.SumSeconds = float64(l.sumNs.Load()) / 1e9
	return h
}

// Stats is a snapshot of the session's counters and gauges; see
// pkg/metrics for the metric each one becomes.
type Stats struct {
	// Auth counts `auth` commands by outcome, Reauth `reauth` commands with
	// a token; AuthLatency times the validations of both that reached the
	// Authenticator (cache included).
	Auth, Reauth [NumAuthOutcomes]uint64
	AuthLatency  Histogram
	// PublishRefused and SubscribeRefused count refusals by reason.
	PublishRefused, SubscribeRefused [NumRefusals]uint64
	// Published and PublishedBytes count accepted publishes and the bytes
	// of their data, by source.
	Published, PublishedBytes [NumSources]uint64
	// AuthenticatedConns is the open authenticated connections.
	AuthenticatedConns int64
	// RemoteDropped counts messages from other nodes dropped while the
	// workers were behind.
	RemoteDropped uint64
}

// counters holds the session's counters. The zero value is ready to use.
type counters struct {
	auth          [numAuthOutcomes]atomic.Uint64
	reauth        [numAuthOutcomes]atomic.Uint64
	authLatency   latency
	pubRefused    [numRefusals]atomic.Uint64
	subRefused    [numRefusals]atomic.Uint64
	published     [numSources]atomic.Uint64
	pubBytes      [numSources]atomic.Uint64
	authed        atomic.Int64
	remoteDropped atomic.Uint64
}

// Stats returns the current counters. It is safe to call at any time and
// costs a few dozen atomic loads.
func (p *Protocol) Stats() Stats {
	o := &p.obs
	st := Stats{AuthLatency: o.authLatency.snapshot(), AuthenticatedConns: max(o.authed.Load(), 0),
		RemoteDropped: o.remoteDropped.Load()}
	for i := range st.Auth {
		st.Auth[i] = o.auth[i].Load()
		st.Reauth[i] = o.reauth[i].Load()
	}
	for i := range st.PublishRefused {
		st.PublishRefused[i] = o.pubRefused[i].Load()
		st.SubscribeRefused[i] = o.subRefused[i].Load()
	}
	for i := range st.Published {
		st.Published[i] = o.published[i].Load()
		st.PublishedBytes[i] = o.pubBytes[i].Load()
	}
	return st
}

// accepted counts an accepted publish of size bytes of data.
func (o *counters) accepted(src Source, size int) {
	o.published[src].Add(1)
	o.pubBytes[src].Add(uint64(size))
}
