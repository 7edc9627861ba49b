package local_test

import (
	"testing"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/brokertest"
	"github.com/NoLagApp/kraken/pkg/broker/local"
)

func TestConformance(t *testing.T) {
	brokertest.Run(t, brokertest.Cluster{Single: true, New: func(*testing.T) func(string) broker.Broker {
		return func(string) broker.Broker { return local.Broker{} }
	}})
}
