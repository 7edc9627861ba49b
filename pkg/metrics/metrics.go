package metrics

import (
	"context"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Sources is what the collector reads: the build's version, the
// components that report their own metrics, and the counters of a broker
// backend between nodes. The collector knows no component: each one
// writes its samples on the Descs it is handed (Component).
type Sources struct {
	// Components report their metrics at every scrape, in this order: the
	// node (node.Node.Metrics), its transports (server.Server), the auth
	// backend and token cache, the control plane, the webhooks. A nil
	// entry is skipped.
	Components []Component
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

// Component is a part of kraken that reports its own metrics.
type Component interface {
	// Collect sends the component's samples to ch, each on its descriptor
	// in d (Counter, Gauge; label values in the descriptor's order). ctx
	// bounds what it gathers from other goroutines (Sources.Timeout). It
	// runs on the scrape's goroutine and must not block past ctx.
	Collect(ctx context.Context, d *Descs, ch chan<- prometheus.Metric)
}

// Counter sends one counter sample of desc, v, with its label values.
func Counter(ch chan<- prometheus.Metric, desc *prometheus.Desc, v uint64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
}

// Gauge sends one gauge sample of desc, v, with its label values.
func Gauge(ch chan<- prometheus.Metric, desc *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
}

// Bool is a gauge's value for b: 1 or 0.
func Bool(b bool) float64 {
	if b {
		return 1
	}
	return 0
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
	desc Descs
}

// NewCollector returns the collector of every kraken_* metric; see
// docs/operations.md for the list.
func NewCollector(src Sources) prometheus.Collector {
	if src.Timeout <= 0 {
		src.Timeout = time.Second
	}
	return &collector{src: src, desc: NewDescs()}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.desc.All() {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	d := &c.desc
	ctx, cancel := context.WithTimeout(context.Background(), c.src.Timeout)
	defer cancel()
	Gauge(ch, d.BuildInfo, 1, c.src.Version, runtime.Version())
	for _, comp := range c.src.Components {
		if comp != nil {
			comp.Collect(ctx, d, ch)
		}
	}
	if c.src.BrokerStats != nil {
		bs := c.src.BrokerStats()
		Counter(ch, d.BrokerDropped, bs.Dropped, "out")
		Counter(ch, d.BrokerMessages, bs.Published, "out")
		Counter(ch, d.BrokerMessages, bs.Received, "in")
		Counter(ch, d.BrokerDiscarded, bs.Duplicates, "duplicate")
		Counter(ch, d.BrokerDiscarded, bs.Malformed, "malformed")
		Counter(ch, d.BrokerReconnects, bs.Reconnects)
		Counter(ch, d.BrokerState, bs.StateWrites, "write")
		Counter(ch, d.BrokerState, bs.StateDropped, "dropped")
		Counter(ch, d.BrokerState, bs.StateErrors, "error")
		Counter(ch, d.BrokerState, bs.StateMalformed, "malformed")
		Counter(ch, d.BrokerState, bs.StatePurged, "purged")
		Counter(ch, d.BrokerState, bs.StateRejoins, "rejoin")
		Counter(ch, d.BrokerNodesDown, bs.NodesDown)
		Counter(ch, d.BrokerRetained, bs.RetainedRecaptured, "recaptured")
		Counter(ch, d.BrokerRetained, bs.RetainedUnkept, "unkept")
	}
}

// TLSHandshakes sends the kraken_tls_handshakes_total samples of a TLS
// listener (listener: "wss", "mqtts"): done succeeded, failed did not.
func TLSHandshakes(ch chan<- prometheus.Metric, d *Descs, listener string, done, failed uint64) {
	Counter(ch, d.TLSHandshakes, done, listener, "ok")
	Counter(ch, d.TLSHandshakes, failed, listener, "failed")
}
