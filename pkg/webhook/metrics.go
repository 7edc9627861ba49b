package webhook

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/metrics"
)

// Collect reports the dispatcher's kraken_* metrics (metrics.Component):
// webhooks sent, failed and dropped, and the retries.
func (d *Dispatcher) Collect(_ context.Context, ds *metrics.Descs, ch chan<- prometheus.Metric) {
	ws := d.Stats()
	metrics.Counter(ch, ds.Webhooks, ws.Sent, "sent")
	metrics.Counter(ch, ds.Webhooks, ws.Failed, "failed")
	metrics.Counter(ch, ds.Webhooks, ws.Dropped, "dropped")
	metrics.Counter(ch, ds.WebhookRetries, ws.Retried)
}
