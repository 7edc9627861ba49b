package membus_test

import (
	"testing"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/brokertest"
	"github.com/NoLagApp/kraken/pkg/broker/membus"
)

func TestConformance(t *testing.T) {
	brokertest.Run(t, brokertest.Cluster{New: func(*testing.T) func(string) broker.Broker {
		bus := &membus.Bus{}
		return func(id string) broker.Broker { return bus.Node(id) }
	},
		// An in-memory bus has no liveness timeout: a node that stops
		// without a goodbye and one that closes look the same.
		Kill: func(b broker.Broker) { _ = b.Close() }})
}
