package node

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// DrainTick is how often Drain closes its next share of the connections.
const DrainTick = 100 * time.Millisecond

// ErrDraining is Drain's error when a drain or a shutdown of the node has
// already begun.
var ErrDraining = errors.New("node: a drain or a shutdown has already begun")

const (
	errDrainingReady = readyError("the node is draining: its connections are being closed")
	errDrainedReady  = readyError("the node is drained: it accepts no connection and stays up until it is stopped")
)

// Drain puts the node in lame-duck mode and closes its client
// connections over d: readiness answers "draining" at once, every
// transport stops accepting (Transport.Drain, as at shutdown; LameDuck
// instead for one that implements it, which still answers its /ready
// probes and refuses the rest), then the connections open when Drain
// begins are closed with 1012 "server shutting down" (disconnect.Shutdown:
// the clients reconnect elsewhere), an equal share every DrainTick, the
// first at once and the last d − DrainTick after the start; a d below two
// DrainTicks (0 included) closes them all at once. HTTP requests in their
// handshake are left to end on their own. The connections a transport keeps
// for itself (KindInternal: MQTT persistent sessions whose client is
// away) are left to Shutdown, which ends them as it always does.
//
// Drain runs on the caller's goroutine and starts none: it returns nil
// once every share is closed (or none is left), ctx.Err() when ctx ends
// first, and ErrDraining when a drain or Shutdown has begun before. The
// node keeps serving the connections not closed yet; the caller runs
// Shutdown next, which closes any left and stops the node.
func (n *Node) Drain(ctx context.Context, d time.Duration) error {
	if n.draining.Load() || !n.lameDuck.CompareAndSwap(false, true) {
		return ErrDraining
	}
	defer n.drained.Store(true)
	for _, t := range n.transportList() {
		if ld, ok := t.(LameDuck); ok {
			ld.LameDuck()
		} else {
			t.Drain()
		}
	}
	// An HTTP request in its handshake (a /ready probe) ends on its own.
	skip := func(c *hub.Conn) bool { return c.Phase() == hub.PhaseHandshake || n.kind(c) == KindInternal }
	bye := disconnect.New(disconnect.Shutdown)
	total := int(n.hub.Stats().Connections - n.kept())
	if total <= 0 {
		return nil
	}
	shares := int(d / DrainTick)
	if shares <= 1 {
		n.hub.CloseSome(ctx, math.MaxInt, bye, skip)
		return ctx.Err()
	}
	tick := time.NewTicker(DrainTick)
	defer tick.Stop()
	asked := 0
	for i := 1; i <= shares; i++ {
		want := (total*i+shares-1)/shares - asked
		asked += want
		if want > 0 && n.hub.CloseSome(ctx, want, bye, skip) < want {
			return ctx.Err() // none left (or ctx ended)
		}
		if i == shares {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
