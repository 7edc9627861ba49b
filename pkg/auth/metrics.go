package auth

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/metrics"
)

// Collect reports the token cache's kraken_* metrics (metrics.Component):
// the entries it holds (Len).
func (c *Cache) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	metrics.Gauge(ch, d.TokenCache, float64(c.Len()))
}
