package session

import (
	"context"
	"time"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/presence"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Presence and lobbies (wire-reference.md §7). The registry is owned by the hub's
// shared worker: everything that reads or changes it runs there
// (Hub.RunShared), and so do the replies that carry what it holds.

// presenceSet handles `presence` (wire-reference.md §7.1): with roomId, the room
// slug is resolved through the connection's grants and the change is
// broadcast; an unknown slug, or no roomId (the legacy form), changes
// nothing that anyone can see. A broadcast presence change counts toward
// the connection's publish rate limit (42910) and its data toward the
// message size limit (42930), like a publish.
func (p *Protocol) presenceSet(st *State, out Sink, cmd *wire.Command) {
	if !cmd.HasData {
		p.badRequest(st, out, "presence requires data")
		return
	}
	if !cmd.HasRoomID {
		return
	}
	c := st.Conn
	g := grantOf(c.Session())
	roomID, ok := g.Rules.RoomBySlug(cmd.RoomID)
	if !ok {
		return
	}
	if e := p.checkLimits(st, g, time.Now(), len(cmd.Data)); e != nil {
		p.answerError(st, out, e)
		return
	}
	room := presence.Room{ID: roomID, Slug: cmd.RoomID}
	m := presence.Member[*hub.Conn]{Conn: c, ActorTokenID: g.ActorTokenID, Presence: append([]byte(nil), cmd.Data...)}
	now := time.Now().Unix()
	p.hub.RunShared(func(w hub.Writer) {
		p.emit(w, p.pres.Set(room, m, now))
		p.sharePresence(c)
	})
}

// getPresence answers KindPresenceList (wire-reference.md §7.2) with the members
// of a room inside the caller's grants; other rooms get an empty list
// (OQ-20). A room's list is built and written on the shared worker.
func (p *Protocol) getPresence(st *State, out Sink, cmd *wire.Command) {
	if !cmd.HasRoomID {
		out.Write(Reply{Kind: KindPresenceList, Payload: wire.AppendPresenceList(nil, "", false, nil)})
		return
	}
	slug, c := cmd.RoomID, st.Conn
	roomID, ok := grantOf(c.Session()).Rules.RoomBySlug(slug)
	if !ok {
		out.Write(Reply{Kind: KindPresenceList, Payload: wire.AppendPresenceList(nil, slug, true, nil)})
		return
	}
	t := c.ExpectReply()
	p.hub.RunShared(func(w hub.Writer) {
		w.Answer(c, t, out.Frame(Reply{Kind: KindPresenceList,
			Payload: wire.AppendPresenceList(nil, slug, true, members(p.pres.Members(roomID)))}))
	})
}

// lobby handles lobbySubscribe, getLobbyPresence and lobbyUnsubscribe
// (wire-reference.md §7.4, OQ-18, OQ-19): one KindLobby reply from the shared
// worker, or a not_authorized KindError.
func (p *Protocol) lobby(st *State, out Sink, cmd *wire.Command) {
	if !cmd.HasLobbyID {
		p.badRequest(st, out, cmd.Type+" requires lobbyId")
		return
	}
	slug, c := cmd.LobbyID, st.Conn
	if cmd.Type == "lobbyUnsubscribe" {
		t := c.ExpectReply()
		p.hub.RunShared(func(w hub.Writer) {
			p.pres.Unwatch(c, slug)
			w.Answer(c, t, out.Frame(Reply{Kind: KindLobby, Payload: wire.AppendLobbyUnsubscribed(nil, slug)}))
		})
		return
	}
	rooms, ok := lobbyRooms(grantOf(c.Session()), slug)
	if !ok {
		p.answerError(st, out, &wire.Error{Err: wire.ErrNotAuthorized, LobbyID: slug})
		return
	}
	subscribe := cmd.Type == "lobbySubscribe"
	t := c.ExpectReply()
	p.hub.RunShared(func(w hub.Writer) {
		var snap map[presence.Room][]*presence.Member[*hub.Conn]
		typ := "lobbyPresenceList"
		if subscribe {
			snap, typ = p.pres.Watch(c, slug, rooms), "lobbySubscribed"
		} else {
			snap = p.pres.Snapshot(rooms)
		}
		state := make([]wire.LobbyRoom, 0, len(rooms))
		for _, r := range rooms {
			state = append(state, wire.LobbyRoom{Slug: r.Slug, Members: members(snap[r])})
		}
		w.Answer(c, t, out.Frame(Reply{Kind: KindLobby, Payload: wire.AppendLobbyState(nil, typ, slug, state)}))
	})
}

// emit writes presence events (KindPresence), building each distinct
// event's frame once per encoding of its recipients.
func (p *Protocol) emit(w hub.Writer, evs []presence.Event[*hub.Conn]) {
	var last presence.Event[*hub.Conn]
	var lastEnc uint8
	var lastFrame []byte
	built := false
	for _, ev := range evs {
		enc := ev.To.Transport().Encoding().ID()
		if !built || enc != lastEnc || ev.Kind != last.Kind || ev.Member != last.Member || ev.LobbySlug != last.LobbySlug || ev.Room != last.Room {
			lastFrame = frameFor(ev.To, presenceReply(ev))
			last, lastEnc, built = ev, enc, true
		}
		w.Write(ev.To, lastFrame)
	}
}

// presenceReply is the `join`/`update`/`leave` of ev (wire-reference.md §7.3),
// in its lobby form for a lobby watcher.
func presenceReply(ev presence.Event[*hub.Conn]) Reply {
	m := member(ev.Member)
	if ev.LobbySlug == "" {
		return Reply{Kind: KindPresence, Payload: wire.AppendPresenceEvent(nil, ev.Kind.String(), &m)}
	}
	return Reply{Kind: KindPresence, Payload: wire.AppendLobbyPresence(nil, ev.Kind.String(), ev.LobbySlug, ev.Room.Slug, &m)}
}

func member(m *presence.Member[*hub.Conn]) wire.PresenceMember {
	return wire.PresenceMember{ActorTokenID: m.ActorTokenID, Presence: m.Presence, JoinedAt: m.JoinedAt}
}

func members(ms []*presence.Member[*hub.Conn]) []wire.PresenceMember {
	out := make([]wire.PresenceMember, len(ms))
	for i, m := range ms {
		out[i] = member(m)
	}
	return out
}

// PresenceStats reports what the presence registry holds (rooms, members,
// lobby watches), read on the worker that owns it.
func (p *Protocol) PresenceStats() (rooms, members, watches int) {
	done := make(chan struct{})
	p.hub.RunShared(func(hub.Writer) {
		rooms, members, watches = p.pres.Stats()
		close(done)
	})
	<-done
	return rooms, members, watches
}

// PresenceCounts is PresenceStats bounded by ctx, for scrapes: ok is false
// when the worker owning the registry did not answer before ctx was done
// (it is behind, or the server has stopped).
func (p *Protocol) PresenceCounts(ctx context.Context) (rooms, members, watches int, ok bool) {
	type counts struct{ rooms, members, watches int }
	answer := make(chan counts, 1) // never blocks the worker
	p.hub.RunShared(func(hub.Writer) {
		r, m, w := p.pres.Stats()
		answer <- counts{r, m, w}
	})
	select {
	case c := <-answer:
		return c.rooms, c.members, c.watches, true
	case <-ctx.Done():
		return 0, 0, 0, false
	}
}
