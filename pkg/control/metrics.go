package control

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/metrics"
)

// Collect reports the control plane's kraken_* metrics
// (metrics.Component): its reports by kind and result, what it dropped,
// and the blocked and pending projects.
func (b *Batcher) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	cs := b.Stats()
	metrics.Counter(ch, d.ControlReports, cs.UsageReports, "usage", "ok")
	metrics.Counter(ch, d.ControlReports, cs.UsageFailures, "usage", "failed")
	metrics.Counter(ch, d.ControlReports, cs.SubscriptionReports, "subscriptions", "ok")
	metrics.Counter(ch, d.ControlReports, cs.SubscriptionFailures, "subscriptions", "failed")
	metrics.Counter(ch, d.ControlReports, cs.FailureReports, "webhook_failures", "ok")
	metrics.Counter(ch, d.ControlReports, cs.FailureReportFailures, "webhook_failures", "failed")
	metrics.Counter(ch, d.ControlDropped, cs.SubscriptionsDropped, "subscriptions")
	metrics.Counter(ch, d.ControlDropped, cs.FailuresDropped, "webhook_failures")
	metrics.Gauge(ch, d.BlockedProjects, float64(cs.BlockedProjects))
	metrics.Gauge(ch, d.PendingProjects, float64(cs.PendingProjects))
}
