package config

import (
	"io"
	"testing"

	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/store/memstore"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// A setting whose value a component also takes for a zero field defaults,
// from an empty environment, to that component's exported default: the
// value has one copy, the component's, which the table derives from.
func TestSettingsDefaultToTheComponentsDefaults(t *testing.T) {
	c, err := Load(nil, env(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		setting   string
		got, want any
	}{
		{"OUTBOUND_MAX_BYTES", c.OutboundMaxBytes, hub.DefaultOutboundMaxBytes},
		{"WRITE_TIMEOUT_SECONDS", c.WriteTimeout, hub.DefaultWriteTimeout},
		{"MAX_SUBSCRIPTIONS", c.MaxSubscriptions, hub.DefaultMaxSubscriptions},
		{"HANDSHAKE_TIMEOUT_SECONDS", c.HandshakeTimeout, hub.DefaultHandshakeTimeout},
		{"AUTH_TIMEOUT_SECONDS", c.AuthTimeout, hub.DefaultAuthTimeout},
		{"IDLE_TIMEOUT_SECONDS", c.IdleTimeout, hub.DefaultIdleTimeout},
		{"FRAME_TIMEOUT_SECONDS", c.FrameTimeout, hub.DefaultFrameTimeout},
		{"REVALIDATE_INTERVAL_SECONDS", c.RevalidateInterval, hub.DefaultRevalidateInterval},
		{"RETAIN_TTL_SECONDS", c.RetainTTL, hub.DefaultRetainTTL},
		{"RATE_LIMIT", c.RateLimit, session.DefaultRateLimit},
		{"ERROR_FRAME_LIMIT", c.ErrorFrameLimit, session.DefaultErrorFrameLimit},
		{"ERROR_FLOOD_LIMIT", c.ErrorFloodLimit, session.DefaultErrorFloodLimit},
		{"MAX_AUTH_FAILURES", c.MaxAuthFailures, session.DefaultMaxAuthFailures},
		{"MAX_MESSAGE_SIZE", c.MaxMessageSize, session.PayloadCeiling},
		{"RESUME_EXPIRY_SECONDS", c.ResumeExpiry, resume.DefaultExpiry},
		{"RESUME_MAX_BYTES", c.ResumeMaxBytes, resume.DefaultMaxBytes},
		{"RESUME_MAX_SESSIONS", c.ResumeMaxSessions, resume.DefaultMaxSessions},
		{"STORE_TTL_SECONDS", c.StoreTTL, memstore.DefaultTTL},
		{"STORE_MAX_MESSAGES", c.StoreMaxMessages, memstore.DefaultMaxMessages},
		{"WEBHOOK_QUEUE_SIZE", c.WebhookQueueSize, webhook.DefaultQueueSize},
		{"WEBHOOK_WORKERS", c.WebhookWorkers, webhook.DefaultWorkers},
		{"AUTH_HTTP_MAX_IN_FLIGHT", c.AuthHTTPMaxInFlight, httpauth.DefaultMaxInFlight},
		{"HISTORY_MAX_BYTES", c.HistoryMaxBytes, history.DefaultMaxBytes},
		{"HISTORY_MAX_PER_TOPIC", c.HistoryMaxPerTopic, history.DefaultMaxMsgsPerTopic},
	} {
		if d.got != d.want {
			t.Errorf("%s defaults to %v, its component's default is %v", d.setting, d.got, d.want)
		}
	}
}
