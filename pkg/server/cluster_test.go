package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// bus is an in-memory stand-in for a distributed engine: every node's
// broker publishes to it and it delivers to every other node.
type bus struct {
	mu    sync.Mutex
	nodes []*busBroker
}

// busBroker is one node's broker.Broker on a bus.
type busBroker struct {
	bus *bus
	h   broker.Handler
}

func (b *busBroker) Start(_ context.Context, h broker.Handler) error {
	b.bus.mu.Lock()
	defer b.bus.mu.Unlock()
	b.h = h
	b.bus.nodes = append(b.bus.nodes, b)
	return nil
}

func (b *busBroker) Publish(m *broker.Message) error {
	b.bus.mu.Lock()
	nodes := append([]*busBroker(nil), b.bus.nodes...)
	b.bus.mu.Unlock()
	for _, n := range nodes {
		cp := *m
		n.h.HandleMessage(&cp) // the sender's own node ignores its messages
	}
	return nil
}

func (b *busBroker) Close() error { return nil }

var _ broker.Broker = (*busBroker)(nil)

// TestTwoNodesShareMessagesThroughTheBrokerSlot: with a fan-out backend
// joining two nodes, a subscriber on one node receives a publish made on the
// other, exactly once, with the publisher's fields, while local delivery on
// the publishing node still happens once.
func TestTwoNodesShareMessagesThroughTheBrokerSlot(t *testing.T) {
	b := &bus{}
	nodeA := start(t, func(c *Config) { c.Broker = &busBroker{bus: b}; c.NodeID = "a" })
	nodeB := start(t, func(c *Config) { c.Broker = &busBroker{bus: b}; c.NodeID = "b" })

	bobOnB := authed(t, nodeB, "dev-token-bob")
	subscribe(t, bobOnB, "demo/general/+")
	carolOnA := authed(t, nodeA, "dev-token-bob")
	subscribe(t, carolOnA, "demo/general/cluster")

	alice := authed(t, nodeA, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/cluster", "data", map[string]any{"n": 1}, "filter", "x")
	local := carolOnA.ExpectFields("type", "message", "topic", "demo/general/cluster", "from", "alice")
	remote := bobOnB.ExpectFields("type", "message", "topic", "demo/general/+", "sourceTopic", "demo/general/cluster",
		"data", map[string]any{"n": 1}, "filter", "x", "from", "alice", "fromType", "actor")
	if local.Map["msgId"] != remote.Map["msgId"] || local.Map["timestamp"] != remote.Map["timestamp"] {
		t.Fatalf("the nodes disagree on the message: %s vs %s", local, remote)
	}
	bobOnB.ExpectNothing(200 * time.Millisecond)
	carolOnA.ExpectNothing(100 * time.Millisecond)
}
