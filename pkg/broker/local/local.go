// Package local is the single-node fan-out backend (BROKER_BACKEND=local,
// the default): there is no other node, so nothing leaves the process and
// nothing comes in. The node's own hub already delivers every publish to its
// connections.
package local

import (
	"context"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// Broker is the single-node broker.Broker. Its zero value is ready to use.
type Broker struct{}

// Start implements broker.Broker; there is nothing to connect to.
func (Broker) Start(context.Context, broker.Handler) error { return nil }

// Publish implements broker.Broker; there is no other node to tell.
func (Broker) Publish(*broker.Message) error { return nil }

// Interest implements broker.Broker; the hub already routes locally.
func (Broker) Interest(string, bool, int) {}

// GroupInterest implements broker.Broker; the hub picks group members
// locally.
func (Broker) GroupInterest(string, string, bool, int) {}

// SetPresence implements broker.Broker; presence stays in this node's
// registry.
func (Broker) SetPresence(*broker.Presence) {}

// ClearPresence implements broker.Broker.
func (Broker) ClearPresence(string) {}

// SetConnections implements broker.Broker; this node's count is the total.
func (Broker) SetConnections(string, int) {}

// Close implements broker.Broker.
func (Broker) Close() error { return nil }

var _ broker.Broker = Broker{}
