package metrics

import (
	"context"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// Sources is what the collector reads. Node and Server are required;
// every other field is optional and its metrics are left out when it is
// nil.
type Sources struct {
	// Node is the broker: its counters, the session's, the hub's and the
	// workers'.
	Node *node.Node
	// Server is the WebSocket transport: its handshakes and bytes.
	Server *server.Server
	// AuthBackend names the auth backend for the `backend` label: "static",
	// "http" or "allow_all".
	AuthBackend string
	// Static is the token-file backend (reload counters, token count).
	Static *static.Static
	// HTTPAuth is the HTTP auth backend (circuit breaker state).
	HTTPAuth *httpauth.Backend
	// TokenCache is the token cache in front of the backend (its size).
	TokenCache *auth.Cache
	// Control is the control plane's batcher; Webhooks the dispatcher.
	Control  *control.Batcher
	Webhooks *webhook.Dispatcher
	// Store is the message store; its size is reported when it has a
	// Len() int method (memstore).
	Store any
	// BrokerBackend names the fan-out broker for the `backend` label
	// ("local", "nats"). Its state is the Server's broker's Ready() error,
	// when it has one (checked by type assertion), and its shared state's
	// StateReady() when it is a broker.StateReporter.
	BrokerBackend string
	// BrokerStats, when set, reads the broker backend's own counters: the
	// hook for a backend between nodes (natsbroker's Stats adapts in three
	// lines). nil leaves those metrics out.
	BrokerStats func() BrokerStats
	// Version is the build's version (kraken_build_info).
	Version string
	// Timeout bounds what is gathered on the workers for one scrape
	// (topics, queued bytes, retained messages, presence); 0 means 1 s.
	// A worker that has not answered by then is counted in
	// kraken_workers_unresponsive and its figures are left out.
	Timeout time.Duration
}

// BrokerStats are the counters a broker backend between nodes reports.
type BrokerStats struct {
	// Published counts messages sent to the bus, Dropped those the backend
	// could not send (disconnected with a full buffer).
	Published, Dropped uint64
	// Received counts messages handed to this node, Duplicates and
	// Malformed those it discarded.
	Received, Duplicates, Malformed uint64
	// Reconnects counts reconnections to the bus.
	Reconnects uint64
	// State counts the shared-state operations (presence, connection
	// counts) by kind: written, dropped (repaired later), failed calls,
	// malformed entries, keys of stopped nodes purged, and rejoins (this
	// node found itself judged stopped and wrote its state again).
	StateWrites, StateDropped, StateErrors, StateMalformed, StatePurged, StateRejoins uint64
	// NodesDown counts the other nodes judged stopped.
	NodesDown uint64
	// RetainedRecaptured counts own retained publishes made before the
	// node followed the retained stream and stored afterwards;
	// RetainedUnkept those that could not be stored (natsbroker.Stats).
	RetainedRecaptured, RetainedUnkept uint64
}

// NewRegistry returns a registry with kraken's collector and the Go runtime
// and process collectors.
func NewRegistry(src Sources) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg in the Prometheus text format (or OpenMetrics when
// asked), for GET /metrics on the admin listener.
func Handler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
}

// collector reads Sources at every scrape. It keeps no state of its own:
// everything it reports is a counter or a gauge the broker already keeps
// (pull, not push), so the delivery path carries nothing for it.
type collector struct {
	src  Sources
	desc descs
}

// NewCollector returns the collector of every kraken_* metric; see
// docs/operations.md for the list.
func NewCollector(src Sources) prometheus.Collector {
	if src.Timeout <= 0 {
		src.Timeout = time.Second
	}
	return &collector{src: src, desc: newDescs()}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.desc.all() {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	d := &c.desc
	src := c.src
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
	}
	boolean := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), src.Timeout)
	defer cancel()

	st := src.Node.Stats()
	ss := src.Server.Stats()
	h := st.Hub
	gauge(d.buildInfo, 1, src.Version, runtime.Version())
	gauge(d.ready, boolean(len(src.Node.NotReady()) == 0))

	// Connections.
	ws, mq := st.Open[node.KindWebSocket], st.Open[node.KindMQTT]
	gauge(d.connections, float64(ws), node.KindWebSocket.String())
	gauge(d.connections, float64(max(h.Connections-ws-mq-int64(st.Resume.Parked), 0)), node.KindHTTP.String())
	gauge(d.connections, float64(mq), node.KindMQTT.String())
	gauge(d.authenticated, float64(st.AuthenticatedConns))
	counter(d.accepted, src.Node.Hub().Accepted())
	for k := 1; k < node.NumKinds; k++ {
		for r := 0; r < disconnect.NumReasons; r++ {
			counter(d.closed, st.Closed[k][r], node.Kind(k).String(), disconnect.Reason(r).String())
		}
	}
	for o := 1; o < server.NumHandshakes; o++ {
		counter(d.handshakes, ss.Handshakes[o], server.Handshake(o).String())
	}
	counter(d.handshakes, h.Closed[disconnect.HandshakeTimeout], "timeout")
	for c := hub.SlowCause(0); c < hub.NumSlowCauses; c++ {
		counter(d.slowConsumers, h.Slow[c], c.String())
	}
	counter(d.inputOverflows, h.Closed[disconnect.InputOverflow])
	counter(d.inputPauses, src.Node.Hub().InputPauses())
	counter(d.receivedBytes, ss.ReceivedBytes)

	// Auth.
	backend := src.AuthBackend
	for _, o := range session.AuthOutcomes {
		counter(d.authResults, st.Auth[o], backend, "auth", o.String())
	}
	for _, o := range session.ReauthOutcomes {
		counter(d.authResults, st.Reauth[o], backend, "reauth", o.String())
	}
	buckets := make(map[float64]uint64, len(session.AuthBuckets))
	for i, ub := range session.AuthBuckets {
		buckets[ub] = st.AuthLatency.Buckets[i]
	}
	ch <- prometheus.MustNewConstHistogram(d.authDuration, st.AuthLatency.Count, st.AuthLatency.SumSeconds, buckets, backend)
	if src.HTTPAuth != nil {
		gauge(d.breakerOpen, boolean(src.HTTPAuth.Ready() != nil), backend)
	}
	if src.TokenCache != nil {
		gauge(d.tokenCache, float64(src.TokenCache.Len()))
	}
	if src.Static != nil {
		ss := src.Static.Stats()
		counter(d.reloads, ss.Reloads, "ok")
		counter(d.reloads, ss.ReloadFailures, "failed")
		gauge(d.tokens, float64(ss.Tokens))
		gauge(d.tokenFileFailing, boolean(ss.Failing))
	}

	// Messages.
	for s := 1; s < session.NumSources; s++ {
		counter(d.messagesIn, st.Published[s], session.Source(s).String())
		counter(d.messageBytesIn, st.PublishedBytes[s], session.Source(s).String())
	}
	counter(d.publications, h.Publications)
	counter(d.deliveries, h.Deliveries)
	for _, r := range session.PublishRefusals {
		counter(d.publishRefused, st.PublishRefused[r], r.String())
	}
	for _, r := range session.SubscribeRefusals {
		counter(d.subscribeRefused, st.SubscribeRefused[r], r.String())
	}
	gauge(d.subscriptions, float64(h.Subscriptions))
	gauge(d.groups, float64(h.Groups))

	// Resumable sessions.
	gauge(d.resumeParked, float64(st.Resume.Parked))
	for i, r := range resume.ReplayResults {
		counter(d.resumeReplays, st.Resume.Replays[i], r)
	}
	counter(d.resumeRedelivered, st.Resume.GivenBack, "given_back")
	counter(d.resumeRedelivered, st.Resume.Lost, "lost")

	// Workers: gathered on each worker, bounded by ctx.
	var topics, retained, stale int
	var queued int64
	var queuedMax int
	var delivered uint64
	busy := false
	for _, w := range src.Node.Hub().WorkerStats(ctx) {
		id := strconv.Itoa(w.Worker)
		gauge(d.inbox, float64(w.Inbox), id)
		gauge(d.inboxPubs, float64(w.InboxPublications), id)
		gauge(d.workerBusy, boolean(w.Busy), id)
		busy = busy || w.Busy
		delivered += w.DeliveredBytes // monotonic, stale or not
		if w.Stale {
			stale++
			continue
		}
		topics += w.Topics
		retained = max(retained, w.Retained)
		queued += w.OutboundBytes
		queuedMax = max(queuedMax, w.OutboundMaxBytes)
	}
	counter(d.deliveredBytes, delivered)
	gauge(d.busy, boolean(busy))
	gauge(d.unresponsive, float64(stale))
	gauge(d.topics, float64(topics))
	gauge(d.retained, float64(retained))
	gauge(d.queued, float64(queued))
	gauge(d.queuedMax, float64(queuedMax))
	if rooms, members, watches, ok := src.Node.Protocol().PresenceCounts(ctx); ok {
		gauge(d.presenceRooms, float64(rooms))
		gauge(d.presenceMembers, float64(members))
		gauge(d.lobbyWatches, float64(watches))
	}
	if l, ok := src.Store.(interface{ Len() int }); ok {
		gauge(d.storeMessages, float64(l.Len()))
	}

	// Between nodes.
	up := true
	if r, ok := src.Node.Broker().(interface{ Ready() error }); ok {
		up = r.Ready() == nil
	}
	gauge(d.brokerUp, boolean(up), src.BrokerBackend)
	stateFailing := false
	if r, ok := src.Node.Broker().(broker.StateReporter); ok {
		stateFailing = r.StateReady() != nil
	}
	gauge(d.brokerStateFailing, boolean(stateFailing))
	counter(d.brokerDropped, st.RemoteDropped, "in")
	if src.BrokerStats != nil {
		bs := src.BrokerStats()
		counter(d.brokerDropped, bs.Dropped, "out")
		counter(d.brokerMessages, bs.Published, "out")
		counter(d.brokerMessages, bs.Received, "in")
		counter(d.brokerDiscarded, bs.Duplicates, "duplicate")
		counter(d.brokerDiscarded, bs.Malformed, "malformed")
		counter(d.brokerReconnects, bs.Reconnects)
		counter(d.brokerState, bs.StateWrites, "write")
		counter(d.brokerState, bs.StateDropped, "dropped")
		counter(d.brokerState, bs.StateErrors, "error")
		counter(d.brokerState, bs.StateMalformed, "malformed")
		counter(d.brokerState, bs.StatePurged, "purged")
		counter(d.brokerState, bs.StateRejoins, "rejoin")
		counter(d.brokerNodesDown, bs.NodesDown)
		counter(d.brokerRetained, bs.RetainedRecaptured, "recaptured")
		counter(d.brokerRetained, bs.RetainedUnkept, "unkept")
	}

	// The user's systems.
	if src.Webhooks != nil {
		ws := src.Webhooks.Stats()
		counter(d.webhooks, ws.Sent, "sent")
		counter(d.webhooks, ws.Failed, "failed")
		counter(d.webhooks, ws.Dropped, "dropped")
		counter(d.webhookRetries, ws.Retried)
	}
	if src.Control != nil {
		cs := src.Control.Stats()
		counter(d.controlReports, cs.UsageReports, "usage", "ok")
		counter(d.controlReports, cs.UsageFailures, "usage", "failed")
		counter(d.controlReports, cs.SubscriptionReports, "subscriptions", "ok")
		counter(d.controlReports, cs.SubscriptionFailures, "subscriptions", "failed")
		counter(d.controlReports, cs.FailureReports, "webhook_failures", "ok")
		counter(d.controlReports, cs.FailureReportFailures, "webhook_failures", "failed")
		counter(d.controlDropped, cs.SubscriptionsDropped, "subscriptions")
		counter(d.controlDropped, cs.FailuresDropped, "webhook_failures")
		gauge(d.blockedProjects, float64(cs.BlockedProjects))
		gauge(d.pendingProjects, float64(cs.PendingProjects))
	}
}
