package session

import (
	"context"
	"strconv"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/presence"
)

// Revoke ends c as a revoked token does (wire-reference.md §4.9, OQ-62):
// the client is sent {type:"disconnect", reason}, then c is closed with
// 4001 and reason ("" means token_revoked). It is the revalidation's path,
// and the admin API's (docs/operations.md, "Revoke"). Safe from any
// goroutine.
func (p *Protocol) Revoke(c *hub.Conn, reason string) {
	if reason == "" {
		reason = disconnect.TokenRevoked.Text()
	}
	f := frameFor(c, Reply{Kind: KindDisconnect, Payload: disconnectPayload(reason)})
	p.hub.Run(c, func(c *hub.Conn) { c.WriteFrame(f) })
	p.hub.Close(c, disconnect.WithText(disconnect.TokenRevoked, reason))
}

// PresenceMember is one member of a room as the admin API lists it.
type PresenceMember struct {
	// Node is the node holding the member's connection; ConnID its
	// connection id there (a hub.Conn.ID on this node).
	Node, ConnID string
	ActorTokenID string
	// Presence is the raw MessagePack value the client set.
	Presence []byte
	// JoinedAt is when it joined the room, in unix seconds.
	JoinedAt int64
}

// PresenceRooms returns the rooms with members, this node's and the other
// nodes' (presence is shared across nodes, wire-reference.md §7.1), read on
// the worker that owns the registry; ctx.Err() when it did not answer in
// time.
func (p *Protocol) PresenceRooms(ctx context.Context) ([]presence.RoomCount, error) {
	answer := make(chan []presence.RoomCount, 1) // never blocks the worker
	p.hub.RunShared(func(hub.Writer) { answer <- p.pres.Rooms() })
	select {
	case r := <-answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// PresenceOf returns the members of every room whose id or slug is room
// (a slug can name rooms of several apps), oldest first in each room.
func (p *Protocol) PresenceOf(ctx context.Context, room string) (map[presence.Room][]PresenceMember, error) {
	answer := make(chan map[presence.Room][]PresenceMember, 1) // never blocks the worker
	self := p.cfg.NodeID
	p.hub.RunShared(func(hub.Writer) {
		out := map[presence.Room][]PresenceMember{}
		for _, r := range p.pres.Rooms() {
			if r.ID != room && r.Slug != room {
				continue
			}
			ms := p.pres.Members(r.ID)
			list := make([]PresenceMember, len(ms))
			for i, m := range ms {
				e := PresenceMember{Node: m.Node, ConnID: m.ID, ActorTokenID: m.ActorTokenID,
					Presence: append([]byte(nil), m.Presence...), JoinedAt: m.JoinedAt}
				if m.Conn != nil {
					e.Node, e.ConnID = self, strconv.FormatUint(m.Conn.ID, 10)
				}
				list[i] = e
			}
			out[r.Room] = list
		}
		answer <- out
	})
	select {
	case r := <-answer:
		return r, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// logRevoked logs a revocation of c's actor.
func (p *Protocol) logRevoked(c *hub.Conn, actor, reason string) {
	p.log.Info("token revoked", zap.Uint64("conn_id", c.ID), zap.String("actor_token_id", actor),
		zap.String("reason", reason))
}
