package main

import (
	"testing"

	"github.com/NoLagApp/kraken/pkg/config"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
)

// TestSettingsDefaultsAreTheHubs: the defaults `kraken -h` and
// `kraken print-env` document (pkg/config, which serve passes on as they
// are) are the hub's and the MQTT listener's own defaults for a zero field, so a component built
// without the settings (a test, an embedding program) behaves as the
// broker does, and the two cannot drift apart unnoticed.
func TestSettingsDefaultsAreTheHubs(t *testing.T) {
	c := config.Defaults()
	h := hub.New(hub.Config{}).Config()
	for _, d := range []struct {
		setting   string
		got, want any
	}{
		{"OUTBOUND_MAX_BYTES", c.OutboundMaxBytes, h.OutboundMaxBytes},
		{"WRITE_TIMEOUT_SECONDS", c.WriteTimeout, h.WriteTimeout},
		{"MAX_SUBSCRIPTIONS", c.MaxSubscriptions, h.MaxSubscriptions},
		{"HANDSHAKE_TIMEOUT_SECONDS", c.HandshakeTimeout, h.HandshakeTimeout},
		{"AUTH_TIMEOUT_SECONDS", c.AuthTimeout, h.AuthTimeout},
		{"IDLE_TIMEOUT_SECONDS", c.IdleTimeout, h.IdleTimeout},
		{"FRAME_TIMEOUT_SECONDS", c.FrameTimeout, h.FrameTimeout},
		{"REVALIDATE_INTERVAL_SECONDS", c.RevalidateInterval, h.RevalidateInterval},
		{"RETAIN_TTL_SECONDS", c.RetainTTL, h.RetainTTL},
		{"MQTT_MAX_INFLIGHT", c.MQTTMaxInflight, listener.DefaultMaxInflight},
		{"MQTT_MAX_QUEUED_BYTES", c.MQTTMaxQueuedBytes, listener.DefaultMaxQueuedBytes},
	} {
		if d.got != d.want {
			t.Errorf("%s defaults to %v, the hub's own default is %v", d.setting, d.got, d.want)
		}
	}
}
