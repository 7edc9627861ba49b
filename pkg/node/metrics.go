package node

import (
	"context"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
)

// Metrics returns the node's part of the kraken_* metrics
// (metrics.Sources.Components): readiness, connections and closes by
// transport, auth outcomes and latency, messages and refusals,
// subscriptions, resumable sessions, the workers' figures (gathered on
// each worker within the scrape's bound), presence, the message store's
// size (when it has a Len() int method) and the broker's state.
// authBackend and brokerBackend are the `backend` label values: "static",
// "http" or "allow_all"; "local" or "nats".
func (n *Node) Metrics(authBackend, brokerBackend string) metrics.Component {
	return nodeMetrics{n: n, auth: authBackend, broker: brokerBackend}
}

type nodeMetrics struct {
	n            *Node
	auth, broker string
}

func (m nodeMetrics) Collect(ctx context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	n := m.n
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) { metrics.Counter(ch, desc, v, labels...) }
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) { metrics.Gauge(ch, desc, v, labels...) }
	st := n.Stats()
	h := st.Hub
	gauge(d.Ready, metrics.Bool(len(n.NotReady()) == 0))
	gauge(d.Draining, metrics.Bool(n.lameDuck.Load()))

	// Connections.
	ws, mq := st.Open[KindWebSocket], st.Open[KindMQTT]
	gauge(d.Connections, float64(ws), KindWebSocket.String())
	gauge(d.Connections, float64(max(h.Connections-ws-mq-int64(st.Resume.Parked)-n.kept(), 0)), KindHTTP.String())
	gauge(d.Connections, float64(mq), KindMQTT.String())
	gauge(d.Authenticated, float64(st.AuthenticatedConns))
	counter(d.Accepted, n.hub.Accepted())
	refused := n.Refused()
	for r := 1; r < edge.NumRefusals; r++ {
		counter(d.ConnectionsRefused, refused[r], edge.Refusal(r).String())
	}
	for k := 1; k < NumKinds; k++ {
		for r := 0; r < disconnect.NumReasons; r++ {
			counter(d.Closed, st.Closed[k][r], Kind(k).String(), disconnect.Reason(r).String())
		}
	}
	for c := hub.SlowCause(0); c < hub.NumSlowCauses; c++ {
		counter(d.SlowConsumers, h.Slow[c], c.String())
	}
	counter(d.InputOverflows, h.Closed[disconnect.InputOverflow])
	counter(d.InputPauses, n.hub.InputPauses())

	// Auth.
	for _, o := range session.AuthOutcomes {
		counter(d.AuthResults, st.Auth[o], m.auth, "auth", o.String())
	}
	for _, o := range session.ReauthOutcomes {
		counter(d.AuthResults, st.Reauth[o], m.auth, "reauth", o.String())
	}
	buckets := make(map[float64]uint64, len(session.AuthBuckets))
	for i, ub := range session.AuthBuckets {
		buckets[ub] = st.AuthLatency.Buckets[i]
	}
	ch <- prometheus.MustNewConstHistogram(d.AuthDuration, st.AuthLatency.Count, st.AuthLatency.SumSeconds, buckets, m.auth)

	// Messages.
	for s := 1; s < session.NumSources; s++ {
		counter(d.MessagesIn, st.Published[s], session.Source(s).String())
		counter(d.MessageBytesIn, st.PublishedBytes[s], session.Source(s).String())
	}
	counter(d.Publications, h.Publications)
	counter(d.Deliveries, h.Deliveries)
	for _, r := range session.PublishRefusals {
		counter(d.PublishRefused, st.PublishRefused[r], r.String())
	}
	for _, r := range session.SubscribeRefusals {
		counter(d.SubscribeRefused, st.SubscribeRefused[r], r.String())
	}
	gauge(d.Subscriptions, float64(h.Subscriptions))
	gauge(d.Groups, float64(h.Groups))

	// Resumable sessions.
	gauge(d.ResumeParked, float64(st.Resume.Parked))
	for i, r := range resume.ReplayResults {
		counter(d.ResumeReplays, st.Resume.Replays[i], r)
	}
	counter(d.ResumeRedelivered, st.Resume.GivenBack, "given_back")
	counter(d.ResumeRedelivered, st.Resume.Lost, "lost")
	counter(d.ResumeSaved, st.Resume.Saved, "ok")
	counter(d.ResumeSaved, st.Resume.SaveErrors, "error")
	counter(d.ResumeTakenOver, st.Resume.TakenOver)

	m.collectWorkers(ctx, d, ch)
	if rooms, members, watches, ok := n.proto.PresenceCounts(ctx); ok {
		gauge(d.PresenceRooms, float64(rooms))
		gauge(d.PresenceMembers, float64(members))
		gauge(d.LobbyWatches, float64(watches))
	}
	if l, ok := n.proto.Config().Store.(interface{ Len() int }); ok {
		gauge(d.StoreMessages, float64(l.Len()))
	}

	// Between nodes.
	up := true
	if r, ok := n.broker.(interface{ Ready() error }); ok {
		up = r.Ready() == nil
	}
	gauge(d.BrokerUp, metrics.Bool(up), m.broker)
	stateFailing := false
	if r, ok := n.broker.(broker.StateReporter); ok {
		stateFailing = r.StateReady() != nil
	}
	gauge(d.BrokerStateFailing, metrics.Bool(stateFailing))
	counter(d.BrokerDropped, st.RemoteDropped, "in")
}

// collectWorkers reports the figures gathered on each worker, bounded by
// ctx.
func (m nodeMetrics) collectWorkers(ctx context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) { metrics.Gauge(ch, desc, v, labels...) }
	var topics, retained, stale int
	var queued int64
	var queuedMax int
	var delivered uint64
	busy := false
	for _, w := range m.n.hub.WorkerStats(ctx) {
		id := strconv.Itoa(w.Worker)
		gauge(d.Inbox, float64(w.Inbox), id)
		gauge(d.InboxPubs, float64(w.InboxPublications), id)
		gauge(d.WorkerBusy, metrics.Bool(w.Busy), id)
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
	metrics.Counter(ch, d.DeliveredBytes, delivered)
	gauge(d.Busy, metrics.Bool(busy))
	gauge(d.Unresponsive, float64(stale))
	gauge(d.Topics, float64(topics))
	gauge(d.Retained, float64(retained))
	gauge(d.Queued, float64(queued))
	gauge(d.QueuedMax, float64(queuedMax))
}

// kept is the hub connections the transports keep for themselves
// (Keeper), none of them a client's.
func (n *Node) kept() int64 {
	var k int64
	for _, t := range n.transportList() {
		if kp, ok := t.(Keeper); ok {
			k += int64(kp.KeptConnections())
		}
	}
	return k
}
