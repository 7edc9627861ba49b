package listener_test

import (
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/node/nodetest"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// The rule "nothing spins" for the in-flight window (docs/ARCHITECTURE.md):
// 100 QoS 1 subscribers that never acknowledge, each with a full window
// and messages waiting behind it, leave the broker idle while no
// acknowledgement comes: what waits is not retried, only sent when a slot
// frees. Bound: 10 % of one core over 5 s (the same bound as the
// WebSocket transport's stalled-subscriber test).
func TestFullWindowsLeaveTheBrokerIdle(t *testing.T) {
	if testing.Short() {
		t.Skip("8 s of wall time")
	}
	const subscribers, publishes, window = 100, 200, 5 * time.Second
	n := startNodeWith(t, func(c *testConfig) { c.RateLimit = 1 << 20; c.Hub.Tick = time.Second },
		func(c *listener.Config) { c.MaxInflight = 16 })
	subs := make([]*client, subscribers)
	for i := range subs {
		subs[i] = connected(t, n.mqttAddr(), "dev-token-bob")
		subs[i].send(subscribePkt(1, topic))
		subs[i].expect(0x90)
	}
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	for range publishes {
		ws.Send("type", "publish", "topic", topic, "data", "x", "echo", false, "msgRef", "m")
		ws.ExpectType("published")
	}
	for _, s := range subs { // each got its window's worth; the rest wait
		for range 16 {
			s.expectPublishNoAck()
		}
	}
	time.Sleep(500 * time.Millisecond) // the fan-out's tail
	before := nodetest.ProcessCPU(t)
	time.Sleep(window)
	used := nodetest.ProcessCPU(t) - before
	t.Logf("broker and test CPU over %v with %d full windows: %v", window, subscribers, used)
	if used > window/10 {
		t.Fatalf("%v of CPU in %v while nothing was acknowledged: something spins", used, window)
	}
	if got := n.node.Stats().Hub.SlowConsumers; got != 0 {
		t.Fatalf("%d slow consumers: a full window must wait, not close", got)
	}
}
