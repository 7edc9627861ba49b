package session

import (
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// DurableGroups feeds durable load-balanced groups from the durable
// history (Config.Durable; *durable.Groups implements it; decisions.md
// OQ-74).
type DurableGroups interface {
	// Attach gives the feed the hub it delivers to (Protocol.Attach
	// calls it, before any connection).
	Attach(h *hub.Hub)
	// Interest is hub.Config.OnDurableInterest: the durable group on the
	// routing key gained its first member on this node (delta +1; ready
	// called once the group's messages flow) or lost its last (-1, ready
	// nil). It must not block.
	Interest(group, key string, delta int, ready func())
	// Acked tells the feed that connection c acknowledged the messages
	// msgIDs (`ack`, `batchAck`), on c's reader; ids of no durable
	// delivery are ignored. It must not block.
	Acked(c *hub.Conn, msgIDs []string)
}

// durable reports whether the load-balanced subscription spec of a
// connection with grant g joins its group's durable form: with a feed
// (Config.Durable), on an exact topic, for every group (DurableAll) or
// for a token with persistentSession (wire-reference.md §6.6: the trigger
// is the subscriber's persistent session; a wildcard group takes no part).
func (p *Protocol) durable(g *auth.Grant, spec *hub.SubSpec) bool {
	return p.cfg.Durable != nil && !spec.Wildcard && (p.cfg.DurableAll || g.PersistentSession)
}
