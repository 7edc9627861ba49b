package httpauth

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/metrics"
)

// Collect reports the auth service's kraken_* metrics (metrics.Component):
// whether its circuit breaker is open (Ready), under the backend label
// "http".
func (b *Backend) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	metrics.Gauge(ch, d.BreakerOpen, metrics.Bool(b.Ready() != nil), "http")
}
