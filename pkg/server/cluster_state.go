package server

import (
	"strconv"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/presence"
)

// Shared state between nodes (package broker, "What crosses nodes"): this
// node's room presence and connection counts go out through the Broker, the
// other nodes' come in through remote. Everything presence touches runs on
// the hub's shared worker, which owns the registry.

// sharePresence tells the other nodes c's presence after a change of it. It
// runs on the shared worker, after the registry changed.
func (s *Server) sharePresence(c *hub.Conn) {
	if !s.distributed() {
		return
	}
	m, r, ok := s.pres.Local(c)
	if !ok {
		return
	}
	s.cfg.Broker.SetPresence(&broker.Presence{Node: s.cfg.NodeID, ID: connKey(c), RoomID: r.ID, RoomSlug: r.Slug,
		ActorTokenID: m.ActorTokenID, Data: m.Presence, JoinedAt: m.JoinedAt})
}

// unsharePresence withdraws c's shared presence when c is in a room; call it
// on the shared worker before the registry forgets c's membership.
func (s *Server) unsharePresence(c *hub.Conn) {
	if !s.distributed() {
		return
	}
	if _, ok := s.pres.RoomOf(c); ok {
		s.cfg.Broker.ClearPresence(connKey(c))
	}
}

// connKey is c's id as the other nodes know it (broker.Presence.ID).
func connKey(c *hub.Conn) string { return strconv.FormatUint(c.ID, 36) }

// HandlePresence applies another node's presence change: this node's
// members of the room and its lobby watchers get `join`/`update`.
func (r remote) HandlePresence(p *broker.Presence) {
	s := r.s
	room := presence.Room{ID: p.RoomID, Slug: p.RoomSlug}
	m := presence.Member[*hub.Conn]{Node: p.Node, ID: p.ID, ActorTokenID: p.ActorTokenID, Presence: p.Data, JoinedAt: p.JoinedAt}
	s.hub.RunShared(func(w hub.Writer) { s.emit(w, s.pres.SetRemote(room, m)) })
}

// HandlePresenceGone applies another node's member leaving its room.
func (r remote) HandlePresenceGone(node, id string) {
	s := r.s
	s.hub.RunShared(func(w hub.Writer) { s.emit(w, s.pres.LeaveRemote(node, id)) })
}

// HandleConnections records another node's connection count of org.
func (r remote) HandleConnections(node, org string, n int) { r.s.orgs.setRemote(node, org, n) }

// HandleNodeDown forgets a stopped node: its members leave their rooms (the
// leaves go to this node's members and watchers) and its connections no
// longer count toward the limits.
func (r remote) HandleNodeDown(node string) {
	s := r.s
	s.log.Info("node down: its presence and connection counts are dropped", zap.String("node", node))
	s.orgs.dropNode(node)
	s.hub.RunShared(func(w hub.Writer) { s.emit(w, s.pres.DropNode(node)) })
}
