package server

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// What the server counts for /metrics (pkg/metrics reads Stats) and how it
// explains refusals in its logs.
//
// Every counter is a plain atomic in a fixed array indexed by a small enum:
// no map, no lock and no allocation on the read or publish path. Nothing
// is counted per delivery here; deliveries are the hub's own counters.
// Label values are the enums' String forms, never a topic, a token, an
// actor or an organisation.

// Refusal is why a publish or a subscribe was refused; its String is the
// `reason` label and log field.
type Refusal uint8

// The refusals.
const (
	RefuseRate          Refusal = iota + 1 // over the rate limit (42910)
	RefuseSize                             // data over the size limit (42930)
	RefuseGrant                            // topic outside the grants (42940)
	RefuseBusy                             // the workers are behind (42910, "the broker is busy")
	RefuseQuota                            // the project is blocked by the control plane (42920)
	RefuseInvalidTopic                     // a malformed topic (invalid_topic)
	RefuseInvalidFilter                    // a rejected filter (42960, too_many_filters, invalid_filter_chars)
	RefuseBadRequest                       // a required field missing (bad_request)

	numRefusals
)

// NumRefusals is one more than the largest Refusal, for arrays indexed by it.
const NumRefusals = int(numRefusals)

var refusalLabels = [numRefusals]string{"", "rate", "size", "grant", "busy", "quota", "invalid_topic",
	"invalid_filter", "bad_request"}

// String returns the refusal's label, e.g. "rate".
func (r Refusal) String() string {
	if r == 0 || r >= numRefusals {
		return "unknown"
	}
	return refusalLabels[r]
}

// classifyPublish returns the Refusal of a refused publish's error frame.
func classifyPublish(e *wire.Error) Refusal {
	switch {
	case e.Code == wire.CodeRateLimited && e.Detail == detailBusy:
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

// AuthOutcome is the result of one `auth` frame; its String is the
// `outcome` label.
type AuthOutcome uint8

// The auth outcomes.
const (
	AuthOK          AuthOutcome = iota + 1 // accepted
	AuthDenied                             // unknown token, or a token that is not a string (access_denied)
	AuthOrgLimit                           // the organisation holds its maximum of connections
	AuthUnavailable                        // the auth service could not be reached (connection_failed)
	AuthError                              // the backend failed or answered badly (authentication_failed)

	numAuthOutcomes
)

// NumAuthOutcomes is one more than the largest AuthOutcome.
const NumAuthOutcomes = int(numAuthOutcomes)

var authLabels = [numAuthOutcomes]string{"", "ok", "denied", "org_limit", "unavailable", "error"}

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
	}
	return AuthError
}

// Handshake is what the first HTTP request of a connection was; its String
// is the `outcome` label of the handshake counter.
type Handshake uint8

// The handshake outcomes. A handshake that did not complete in time is the
// hub's disconnect.HandshakeTimeout close.
const (
	HandshakeWebSocket Handshake = iota + 1 // upgraded to a WebSocket
	HandshakeHealth                         // GET /health answered
	HandshakeReady                          // GET /ready answered
	HandshakeInternal                       // a /internal/publish request
	HandshakeNotFound                       // another path (404)
	HandshakeRejected                       // malformed, too large, or an upgrade refused

	numHandshakes
)

// NumHandshakes is one more than the largest Handshake.
const NumHandshakes = int(numHandshakes)

var handshakeLabels = [numHandshakes]string{"", "websocket", "health", "ready", "internal_publish",
	"not_found", "rejected"}

// String returns the outcome's label, e.g. "websocket".
func (h Handshake) String() string {
	if h == 0 || h >= numHandshakes {
		return "unknown"
	}
	return handshakeLabels[h]
}

// Transport is how a connection was used: its String is the `transport`
// label.
type Transport uint8

// The transports.
const (
	TransportWebSocket Transport = iota + 1 // upgraded to a WebSocket
	TransportHTTP                           // a plain HTTP request, or nothing complete

	numTransports
)

// NumTransports is one more than the largest Transport.
const NumTransports = int(numTransports)

// String returns "websocket" or "http".
func (t Transport) String() string {
	switch t {
	case TransportWebSocket:
		return "websocket"
	case TransportHTTP:
		return "http"
	}
	return "unknown"
}

// Source is where an accepted publish came from: its String is the
// `source` label.
type Source uint8

// The sources. Publications from other nodes are the hub's Publications
// less these.
const (
	SourceClient   Source = iota + 1 // a WebSocket client's publish
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

// Stats is a snapshot of the server's counters and gauges; see pkg/metrics
// for the metric each one becomes.
type Stats struct {
	// Hub holds the worker pool's counters (connections, subscriptions,
	// deliveries, closes by reason).
	Hub hub.Stats
	// ReceivedBytes counts the bytes read from client sockets and
	// processed (requests and frames, headers included).
	ReceivedBytes uint64
	// Handshakes counts first HTTP requests by outcome.
	Handshakes [NumHandshakes]uint64
	// Auth counts `auth` frames by outcome; AuthLatency times the
	// validations that reached the Authenticator (cache included).
	Auth        [NumAuthOutcomes]uint64
	AuthLatency Histogram
	// PublishRefused and SubscribeRefused count refusals by reason.
	PublishRefused, SubscribeRefused [NumRefusals]uint64
	// Published and PublishedBytes count accepted publishes and the bytes
	// of their data, by source.
	Published, PublishedBytes [NumSources]uint64
	// Closed counts the connections that ended, by transport and by the
	// broker's close reason (0, peer_closed: the peer went away first).
	Closed [NumTransports][disconnect.NumReasons]uint64
	// WebSocketConns and AuthenticatedConns are the open WebSocket
	// connections and those of them that are authenticated.
	WebSocketConns, AuthenticatedConns int64
	// RemoteDropped counts messages from other nodes dropped while the
	// workers were behind.
	RemoteDropped uint64
}

// instruments holds the server's counters and its readiness checks. The zero
// value is ready to use.
type instruments struct {
	bytesIn     atomic.Uint64
	handshakes  [numHandshakes]atomic.Uint64
	auth        [numAuthOutcomes]atomic.Uint64
	authLatency latency
	pubRefused  [numRefusals]atomic.Uint64
	subRefused  [numRefusals]atomic.Uint64
	published   [numSources]atomic.Uint64
	pubBytes    [numSources]atomic.Uint64
	closed      [numTransports][disconnect.NumReasons]atomic.Uint64
	ws, authed  atomic.Int64

	checksMu sync.Mutex
	checks   atomic.Pointer[[]ReadyCheck]
}

// Stats returns the current counters. It is safe to call at any time and
// costs a few hundred atomic loads.
func (s *Server) Stats() Stats {
	o := &s.obs
	st := Stats{Hub: s.hub.Stats(), ReceivedBytes: o.bytesIn.Load(), AuthLatency: o.authLatency.snapshot(),
		WebSocketConns: max(o.ws.Load(), 0), AuthenticatedConns: max(o.authed.Load(), 0),
		RemoteDropped: s.remoteDropped.Load()}
	for i := range st.Handshakes {
		st.Handshakes[i] = o.handshakes[i].Load()
	}
	for i := range st.Auth {
		st.Auth[i] = o.auth[i].Load()
	}
	for i := range st.PublishRefused {
		st.PublishRefused[i] = o.pubRefused[i].Load()
		st.SubscribeRefused[i] = o.subRefused[i].Load()
	}
	for i := range st.Published {
		st.Published[i] = o.published[i].Load()
		st.PublishedBytes[i] = o.pubBytes[i].Load()
	}
	for t := range st.Closed {
		for r := range st.Closed[t] {
			st.Closed[t][r] = o.closed[t][r].Load()
		}
	}
	return st
}

// accepted counts an accepted publish of size bytes of data.
func (o *instruments) accepted(src Source, size int) {
	o.published[src].Add(1)
	o.pubBytes[src].Add(uint64(size))
}

// ReadyCheck is one condition of readiness (Server.NotReady): Name is a
// short code shown on the public /ready ("token_file", "auth_service"),
// Check returns why it does not hold, or nil.
type ReadyCheck struct {
	Name  string
	Check func() error
}

// NotReadyReason is a readiness condition that does not hold.
type NotReadyReason struct {
	Name string
	Err  error
}

// AddReadyCheck adds a readiness condition. It is safe at any time; checks
// run on every /ready request and must be quick and not block.
func (s *Server) AddReadyCheck(name string, check func() error) {
	o := &s.obs
	o.checksMu.Lock()
	defer o.checksMu.Unlock()
	var next []ReadyCheck
	if cur := o.checks.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, ReadyCheck{Name: name, Check: check})
	o.checks.Store(&next)
}

// NotReady returns the readiness conditions that do not hold, nil when the
// node is ready: it is not shutting down, its broker backend (when it has
// a Ready() error method, checked by type assertion) is connected, and
// every check added with AddReadyCheck passes.
func (s *Server) NotReady() []NotReadyReason {
	var out []NotReadyReason
	if s.draining.Load() {
		out = append(out, NotReadyReason{Name: "shutting_down", Err: errShuttingDown})
	}
	if r, ok := s.cfg.Broker.(interface{ Ready() error }); ok {
		if err := r.Ready(); err != nil {
			out = append(out, NotReadyReason{Name: "broker", Err: err})
		}
	}
	if checks := s.obs.checks.Load(); checks != nil {
		for _, c := range *checks {
			if err := c.Check(); err != nil {
				out = append(out, NotReadyReason{Name: c.Name, Err: err})
			}
		}
	}
	return out
}

type readyError string

func (e readyError) Error() string { return string(e) }

const errShuttingDown = readyError("the broker is shutting down")

// ReadyJSON renders the answer of /ready: {"status":"ready"}, or
// {"status":"not_ready","failing":[names]} with, when detail is set,
// "reasons":{name: error text} (the admin listener's; the WebSocket port's
// /ready names the failing checks only, since it may face the internet).
func ReadyJSON(failing []NotReadyReason, detail bool) string {
	if len(failing) == 0 {
		return `{"status":"ready"}`
	}
	var b strings.Builder
	b.WriteString(`{"status":"not_ready","failing":[`)
	for i, f := range failing {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(jsonString(f.Name))
	}
	b.WriteByte(']')
	if detail {
		b.WriteString(`,"reasons":{`)
		for i, f := range failing {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(jsonString(f.Name))
			b.WriteByte(':')
			b.WriteString(jsonString(f.Err.Error()))
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.String()
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			const hex = "0123456789abcdef"
			b.WriteString(`\u00`)
			b.WriteByte(hex[r>>4])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Logging. Field keys (stable, snake_case): conn_id, remote_addr,
// actor_token_id, reason, code, error, topic, detail, transport,
// duration, attempt.

// connFields are the fields naming a connection in a log line: its id,
// the peer's address and, once authenticated, the actor. Never the token.
func connFields(c *hub.Conn, extra ...zap.Field) []zap.Field {
	f := make([]zap.Field, 0, 3+len(extra))
	f = append(f, zap.Uint64("conn_id", c.ID))
	if ra := c.RemoteAddr(); ra != nil {
		f = append(f, zap.String("remote_addr", ra.String()))
	}
	if sess := c.Session(); sess != nil {
		if g, ok := sess.Grant.(*auth.Grant); ok {
			f = append(f, zap.String("actor_token_id", g.ActorTokenID))
		}
	}
	return append(f, extra...)
}

// refusedPublish counts and logs a refused publish (publishError).
func (s *Server) refusedPublish(st *connState, e *wire.Error) {
	r := classifyPublish(e)
	s.obs.pubRefused[r].Add(1)
	s.logRefusal(st, "publish refused", r, 0, e)
}

// refuseSubscribe counts and logs a refused subscribe, then answers it.
func (s *Server) refuseSubscribe(st *connState, r Refusal, e *wire.Error) {
	s.obs.subRefused[r].Add(1)
	s.logRefusal(st, "subscribe refused", r, NumRefusals-1, e)
	s.answerError(st, e)
}

// logRefusal logs a refusal: the first of its kind on the connection at
// info, the rest at debug, so a client hammering a limit writes one info
// line, not one per frame. shift places the kind's bit in connState.logged
// (publishes 0, subscribes NumRefusals-1).
func (s *Server) logRefusal(st *connState, msg string, r Refusal, shift int, e *wire.Error) {
	bit := uint16(1) << (int(r) - 1 + shift)
	level := zapcore.InfoLevel
	if st.logged&bit != 0 {
		level = zapcore.DebugLevel
	}
	st.logged |= bit
	ce := s.log.Check(level, msg)
	if ce == nil {
		return
	}
	extra := []zap.Field{zap.Stringer("reason", r), zap.String("error", e.Err)}
	if e.Code != 0 {
		extra = append(extra, zap.Int("code", e.Code))
	}
	if e.HasTopic {
		extra = append(extra, zap.String("topic", e.Topic))
	}
	if e.Detail != "" {
		extra = append(extra, zap.String("detail", e.Detail))
	}
	ce.Write(connFields(st.c, extra...)...)
}

// refusedAuth counts and logs a failed `auth` frame, at info (each is an
// answer the client reads, and a connection gets at most
// Config.MaxAuthFailures of them), or at warn when the backend failed
// rather than refused: then err is its error.
func (s *Server) refusedAuth(st *connState, reason string, err error) {
	outcome := authOutcomeOf(reason)
	s.obs.auth[outcome].Add(1)
	level := zapcore.InfoLevel
	if outcome == AuthUnavailable || outcome == AuthError {
		level = zapcore.WarnLevel
	}
	ce := s.log.Check(level, "auth refused")
	if ce == nil {
		return
	}
	extra := []zap.Field{zap.String("reason", reason), zap.Int("attempt", int(st.failures)+1)}
	if err != nil {
		extra = append(extra, zap.NamedError("error", err))
	}
	ce.Write(connFields(st.c, extra...)...)
}

// opened counts and logs a connection upgraded to a WebSocket; the phase
// is already PhaseOpen, so a close racing it is counted consistently.
func (s *Server) opened(st *connState) {
	s.obs.handshakes[HandshakeWebSocket].Add(1)
	s.obs.ws.Add(1)
	if ce := s.log.Check(zapcore.DebugLevel, "connection opened"); ce != nil {
		ce.Write(connFields(st.c)...)
	}
}

// infoCloses are the close reasons logged at info: the broker refused to
// go on with the connection because of what its client did. The others
// (the client's own close, timeouts, shutdown, a revocation already logged
// by revalidation, plain HTTP) are logged at debug.
var infoCloses = [disconnect.NumReasons]bool{
	disconnect.SlowConsumer:   true,
	disconnect.InputOverflow:  true,
	disconnect.TooManyErrors:  true,
	disconnect.AuthFailures:   true,
	disconnect.ProtocolError:  true,
	disconnect.InvalidPayload: true,
	disconnect.TooLarge:       true,
}

// closed counts and logs a connection that ended; it runs on the
// connection's worker after its subscriptions are gone (Config.OnClose).
func (s *Server) closed(c *hub.Conn) {
	r := c.CloseReason()
	phase := c.Phase()
	tr := TransportHTTP
	if phase != hub.PhaseHandshake {
		tr = TransportWebSocket
		s.obs.ws.Add(-1)
	}
	if phase == hub.PhaseAuthed {
		s.obs.authed.Add(-1)
	}
	if int(r) < disconnect.NumReasons {
		s.obs.closed[tr][r].Add(1)
	}
	level := zapcore.DebugLevel
	if int(r) < disconnect.NumReasons && infoCloses[r] {
		level = zapcore.InfoLevel
	}
	if ce := s.log.Check(level, "connection closed"); ce != nil {
		ce.Write(connFields(c, zap.Stringer("reason", r), zap.Stringer("transport", tr),
			zap.Duration("duration", time.Since(c.OpenedAt())))...)
	}
}

// PresenceCounts is PresenceStats bounded by ctx, for scrapes: ok is false
// when the worker owning the registry did not answer before ctx was done
// (it is behind, or the server has stopped).
func (s *Server) PresenceCounts(ctx context.Context) (rooms, members, watches int, ok bool) {
	type counts struct{ rooms, members, watches int }
	answer := make(chan counts, 1) // never blocks the worker
	s.hub.RunShared(func(hub.Writer) {
		r, m, w := s.pres.Stats()
		answer <- counts{r, m, w}
	})
	select {
	case c := <-answer:
		return c.rooms, c.members, c.watches, true
	case <-ctx.Done():
		return 0, 0, 0, false
	}
}

// Broker returns the fan-out broker the server runs with (Config.Broker,
// local.Broker for a single node), for metrics and readiness.
func (s *Server) Broker() broker.Broker { return s.cfg.Broker }
