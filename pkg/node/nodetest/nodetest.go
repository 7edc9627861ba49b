// Package nodetest starts a node and its transports for tests, and stops
// them when the test ends.
package nodetest

import (
	"context"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/node"
)

// Starter is a transport of the node (server.Server, listener.Listener):
// Start opens its listener.
type Starter interface{ Start() error }

// Start starts n and then each transport, in order, failing tb on the
// first error, and shuts n down (its transports with it) when tb ends,
// within 5 s.
func Start(tb testing.TB, n *node.Node, transports ...Starter) {
	tb.Helper()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
	})
	if err := n.Start(); err != nil {
		tb.Fatal(err)
	}
	for _, t := range transports {
		if err := t.Start(); err != nil {
			tb.Fatal(err)
		}
	}
}
