package listener

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/NoLagApp/kraken/pkg/metrics"
)

// Collect reports the MQTT listener's part of the kraken_* metrics
// (metrics.Component): the persistent sessions kept, the wills published,
// the takeovers, and the messages kept sessions dropped past their bounds.
func (l *Listener) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	metrics.Gauge(ch, d.MQTTSessionsKept, float64(l.clients.sessions()))
	metrics.Counter(ch, d.MQTTWills, l.wills.Load())
	metrics.Counter(ch, d.MQTTTakeovers, l.takeovers.Load())
	metrics.Counter(ch, d.MQTTSessionDropped, l.sessionDrops.Load())
	if l.TLSAddr() != nil {
		done, failed := l.TLSHandshakes()
		metrics.TLSHandshakes(ch, d, "mqtts", done, failed)
	}
	if l.cfg.ProxyProtocol || l.cfg.ProxyProtocolTLS {
		metrics.Counter(ch, d.ProxyHeaderErrors, l.loop.ProxyHeaderErrors(), "mqtt")
	}
}
