package server

import (
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/presence"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// presenceSet handles `presence` (protocol.md §7.1): with roomId, the room
// slug is resolved through the connection's grants and the change is
// broadcast; an unknown slug, or no roomId (the legacy form), changes
// nothing that anyone can see. A broadcast presence change counts toward
// the connection's publish rate limit (42910) and its data toward the
// message size limit (42930), like a publish.
func (s *Server) presenceSet(st *connState, cmd *wire.Command) {
	if !cmd.HasData {
		s.badRequest(st, "presence requires data")
		return
	}
	if !cmd.HasRoomID {
		return
	}
	sess := st.c.Session()
	g := grantOf(sess)
	roomID, ok := g.Rules.RoomBySlug(cmd.RoomID)
	if !ok {
		return
	}
	if e := s.checkLimits(st, g, time.Now(), len(cmd.Data)); e != nil {
		s.answerError(st, e)
		return
	}
	room := presence.Room{ID: roomID, Slug: cmd.RoomID}
	m := presence.Member[*hub.Conn]{Conn: st.c, ActorTokenID: g.ActorTokenID, Presence: append([]byte(nil), cmd.Data...)}
	now := time.Now().Unix()
	s.hub.RunShared(func(w hub.Writer) {
		s.emit(w, s.pres.Set(room, m, now))
		s.sharePresence(st.c)
	})
}

// getPresence answers `presenceList` (protocol.md §7.2) with the members of
// a room inside the caller's grants; other rooms get an empty list (OQ-20).
func (s *Server) getPresence(st *connState, cmd *wire.Command) {
	if !cmd.HasRoomID {
		st.write(frame(wire.AppendPresenceList(nil, "", false, nil)))
		return
	}
	slug := cmd.RoomID
	roomID, ok := grantOf(st.c.Session()).Rules.RoomBySlug(slug)
	if !ok {
		st.write(frame(wire.AppendPresenceList(nil, slug, true, nil)))
		return
	}
	c := st.c
	c.ExpectReply()
	s.hub.RunShared(func(w hub.Writer) {
		w.Write(c, frame(wire.AppendPresenceList(nil, slug, true, members(s.pres.Members(roomID)))))
		c.ReplyDone()
	})
}

// lobby handles lobbySubscribe, getLobbyPresence and lobbyUnsubscribe
// (protocol.md §7.4, OQ-18, OQ-19).
func (s *Server) lobby(st *connState, cmd *wire.Command) {
	if !cmd.HasLobbyID {
		s.badRequest(st, cmd.Type+" requires lobbyId")
		return
	}
	slug, c := cmd.LobbyID, st.c
	if cmd.Type == "lobbyUnsubscribe" {
		c.ExpectReply()
		s.hub.RunShared(func(w hub.Writer) {
			s.pres.Unwatch(c, slug)
			w.Write(c, frame(wire.AppendLobbyUnsubscribed(nil, slug)))
			c.ReplyDone()
		})
		return
	}
	rooms, ok := lobbyRooms(grantOf(c.Session()), slug)
	if !ok {
		s.answerError(st, &wire.Error{Err: wire.ErrNotAuthorized, LobbyID: slug})
		return
	}
	subscribe := cmd.Type == "lobbySubscribe"
	c.ExpectReply()
	s.hub.RunShared(func(w hub.Writer) {
		defer c.ReplyDone()
		var snap map[presence.Room][]*presence.Member[*hub.Conn]
		typ := "lobbyPresenceList"
		if subscribe {
			snap, typ = s.pres.Watch(c, slug, rooms), "lobbySubscribed"
		} else {
			snap = s.pres.Snapshot(rooms)
		}
		state := make([]wire.LobbyRoom, 0, len(rooms))
		for _, r := range rooms {
			state = append(state, wire.LobbyRoom{Slug: r.Slug, Members: members(snap[r])})
		}
		w.Write(c, frame(wire.AppendLobbyState(nil, typ, slug, state)))
	})
}

// lobbyRooms returns the rooms of the lobby slug in the grant: the rooms
// the token file lists for it (by slug or id), else every room of the
// grant's rules (OQ-19). ok is false when the grant does not allow the lobby.
func lobbyRooms(g *auth.Grant, slug string) (rooms []presence.Room, ok bool) {
	seen := map[string]bool{}
	add := func(r presence.Room) {
		if r.ID != "" && !seen[r.ID] {
			seen[r.ID] = true
			rooms = append(rooms, r)
		}
	}
	explicit := false
	for _, l := range g.Lobbies {
		if l.Slug != slug {
			continue
		}
		ok = true
		if l.Rooms != nil {
			explicit = true
			for _, name := range l.Rooms {
				add(roomOf(g, name))
			}
		}
	}
	if ok && !explicit {
		for _, rule := range g.Rules {
			add(presence.Room{ID: rule.RoomID, Slug: slugOr(rule.RoomSlug, rule.RoomID)})
		}
	}
	return rooms, ok
}

// roomOf resolves a lobby's room entry, a slug or an id, through the rules.
func roomOf(g *auth.Grant, name string) presence.Room {
	for _, rule := range g.Rules {
		if rule.RoomSlug == name && rule.RoomID != "" {
			return presence.Room{ID: rule.RoomID, Slug: name}
		}
	}
	for _, rule := range g.Rules {
		if rule.RoomID == name {
			return presence.Room{ID: name, Slug: slugOr(rule.RoomSlug, name)}
		}
	}
	return presence.Room{ID: name, Slug: name}
}

func slugOr(slug, id string) string {
	if slug != "" {
		return slug
	}
	return id
}

// emit writes presence events, building each distinct frame once.
func (s *Server) emit(w hub.Writer, evs []presence.Event[*hub.Conn]) {
	var last presence.Event[*hub.Conn]
	var lastFrame []byte
	for _, ev := range evs {
		if lastFrame == nil || ev.Kind != last.Kind || ev.Member != last.Member || ev.LobbySlug != last.LobbySlug || ev.Room != last.Room {
			m := member(ev.Member)
			if ev.LobbySlug == "" {
				lastFrame = frame(wire.AppendPresenceEvent(nil, ev.Kind.String(), &m))
			} else {
				lastFrame = frame(wire.AppendLobbyPresence(nil, ev.Kind.String(), ev.LobbySlug, ev.Room.Slug, &m))
			}
			last = ev
		}
		w.Write(ev.To, lastFrame)
	}
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
func (s *Server) PresenceStats() (rooms, members, watches int) {
	done := make(chan struct{})
	s.hub.RunShared(func(hub.Writer) {
		rooms, members, watches = s.pres.Stats()
		close(done)
	})
	<-done
	return rooms, members, watches
}
