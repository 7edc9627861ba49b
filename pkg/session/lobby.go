package session

import (
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/presence"
)

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
