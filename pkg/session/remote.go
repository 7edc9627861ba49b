package session

import (
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/presence"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// The broker hand-off (package broker, "What crosses nodes"): accepted
// publishes, this node's room presence and its connection counts go out
// through the Broker; the other nodes' come in through remote, the
// Protocol's broker.Handler. Everything presence touches runs on the hub's
// shared worker, which owns the registry.

// remote receives what other nodes publish and share, from the Broker.
type remote struct{ p *Protocol }

// HandleMessage fans a message from another node out to this node's
// broadcast subscribers (its groups get their copy through
// HandleGroupMessage).
func (r remote) HandleMessage(m *broker.Message) {
	if pub := r.publication(m); pub != nil {
		pub.NoGroups = true
		r.p.hub.Publish(pub)
	}
}

// HandleGroupMessage hands a message to one local member of a group: the
// bus picked this node for it, once cluster-wide.
func (r remote) HandleGroupMessage(m *broker.Message, name, key string) {
	if pub := r.publication(m); pub != nil {
		r.p.hub.PublishGroup(pub, name, key)
	}
}

// HandleRetained updates the retained stores with another node's retained
// publish, delivering nothing.
func (r remote) HandleRetained(m *broker.Message) {
	if pub := r.publication(m); pub != nil {
		pub.StoreOnly = true
		r.p.hub.Publish(pub)
	}
}

// publication builds the hub publication of a message from the bus, or
// returns nil when it must be dropped: the workers are behind (hub.Busy;
// the backend's goroutine must not wait), which is counted.
func (r remote) publication(m *broker.Message) *hub.Publication {
	p := r.p
	if p.hub.Busy() {
		p.obs.remoteDropped.Add(1)
		if ce := p.log.Check(zap.DebugLevel, "message from another node dropped: workers behind"); ce != nil {
			ce.Write(zap.String("topic", m.Topic))
		}
		return nil
	}
	pub := &hub.Publication{Key: m.Key, Topic: m.Topic, Filter: m.Filter, Echo: true,
		Retain: m.Retain, ClearRetained: m.ClearRetained, AtMostOnce: m.AtMostOnce, ExactlyOnce: m.ExactlyOnce}
	pub.Msg = wire.Message{Topic: m.Topic, Data: m.Data, MsgID: m.MsgID, Filter: m.Filter,
		From: m.From, FromType: m.FromType, Timestamp: m.Timestamp.UnixMilli()}
	return pub
}

// HandlePresence applies another node's presence change: this node's
// members of the room and its lobby watchers get `join`/`update`.
func (r remote) HandlePresence(bp *broker.Presence) {
	p := r.p
	room := presence.Room{ID: bp.RoomID, Slug: bp.RoomSlug}
	m := presence.Member[*hub.Conn]{Node: bp.Node, ID: bp.ID, ActorTokenID: bp.ActorTokenID, Presence: bp.Data, JoinedAt: bp.JoinedAt}
	p.hub.RunShared(func(w hub.Writer) { p.emit(w, p.pres.SetRemote(room, m)) })
}

// HandlePresenceGone applies another node's member leaving its room.
func (r remote) HandlePresenceGone(node, id string) {
	p := r.p
	p.hub.RunShared(func(w hub.Writer) { p.emit(w, p.pres.LeaveRemote(node, id)) })
}

// HandleConnections records another node's connection count of org.
func (r remote) HandleConnections(node, org string, n int) { r.p.orgs.setRemote(node, org, n) }

// HandleNodeDown forgets a stopped node: its members leave their rooms (the
// leaves go to this node's members and watchers) and its connections no
// longer count toward the limits.
func (r remote) HandleNodeDown(node string) {
	p := r.p
	p.log.Info("node down: its presence and connection counts are dropped", zap.String("node", node))
	p.orgs.dropNode(node)
	p.hub.RunShared(func(w hub.Writer) { p.emit(w, p.pres.DropNode(node)) })
}

// toBroker hands an accepted local publish to the other nodes. A single
// node skips building the message at all. A failure is logged and
// returned.
func (p *Protocol) toBroker(pub *hub.Publication, ts int64) error {
	if !p.multi {
		return nil
	}
	m := &broker.Message{Key: pub.Key, Topic: pub.Topic, Filter: pub.Filter, Data: pub.Msg.Data,
		MsgID: pub.Msg.MsgID, From: pub.Msg.From, FromType: pub.Msg.FromType, Retain: pub.Retain,
		ClearRetained: pub.ClearRetained, AtMostOnce: pub.AtMostOnce, ExactlyOnce: pub.ExactlyOnce,
		Node: p.cfg.NodeID, Timestamp: time.UnixMilli(ts)}
	err := p.cfg.Broker.Publish(m)
	if err != nil {
		if ce := p.log.Check(zap.WarnLevel, "fan-out to other nodes failed"); ce != nil {
			ce.Write(zap.String("topic", pub.Topic), zap.Error(err))
		}
	}
	return err
}

// sharePresence tells the other nodes c's presence after a change of it. It
// runs on the shared worker, after the registry changed.
func (p *Protocol) sharePresence(c *hub.Conn) {
	if !p.multi {
		return
	}
	m, r, ok := p.pres.Local(c)
	if !ok {
		return
	}
	p.cfg.Broker.SetPresence(&broker.Presence{Node: p.cfg.NodeID, ID: connKey(c), RoomID: r.ID, RoomSlug: r.Slug,
		ActorTokenID: m.ActorTokenID, Data: m.Presence, JoinedAt: m.JoinedAt})
}

// unsharePresence withdraws c's shared presence when c is in a room; call it
// on the shared worker before the registry forgets c's membership.
func (p *Protocol) unsharePresence(c *hub.Conn) {
	if !p.multi {
		return
	}
	if _, ok := p.pres.RoomOf(c); ok {
		p.cfg.Broker.ClearPresence(connKey(c))
	}
}

// connKey is c's id as the other nodes know it (broker.Presence.ID).
func connKey(c *hub.Conn) string { return strconv.FormatUint(c.ID, 36) }
