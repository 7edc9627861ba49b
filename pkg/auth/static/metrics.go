package static

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/metrics"
)

// Collect reports the token file's kraken_* metrics (metrics.Component):
// its reloads by result, the tokens in force, and whether the last reload
// failed.
func (s *Static) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	ss := s.Stats()
	metrics.Counter(ch, d.Reloads, ss.Reloads, "ok")
	metrics.Counter(ch, d.Reloads, ss.ReloadFailures, "failed")
	metrics.Gauge(ch, d.Tokens, float64(ss.Tokens))
	metrics.Gauge(ch, d.TokenFileFailing, metrics.Bool(ss.Failing))
}
