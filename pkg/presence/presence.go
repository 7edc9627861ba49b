package presence

import (
	"cmp"
	"slices"
)

// Member is one connection's presence in a room (wire-reference.md §7.1).
type Member[C comparable] struct {
	// Conn is the local connection; the zero C for a member held by
	// another node.
	Conn C
	// Node and ID name a member held by another node (its node id and
	// connection id there); both empty for a local member.
	Node, ID     string
	ActorTokenID string
	// Presence is the raw msgpack value the client sent as `data`.
	Presence []byte
	// JoinedAt is when the connection joined the room, in unix seconds.
	JoinedAt int64
}

// Room names a room by its internal id and the slug clients use.
type Room struct{ ID, Slug string }

// EventKind is a presence change.
type EventKind uint8

// The presence events of wire-reference.md §7.1.
const (
	Join EventKind = iota + 1
	Update
	Leave
)

// String returns the wire name: "join", "update" or "leave".
func (k EventKind) String() string {
	switch k {
	case Join:
		return "join"
	case Update:
		return "update"
	case Leave:
		return "leave"
	}
	return "unknown"
}

// Event is one frame to send: a presence change of Member in Room, to be
// delivered to To. LobbySlug is set for a lobby event (`lobbyPresence`, with
// the slug the watcher subscribed with, OQ-18), empty for a room event
// (`presence`).
type Event[C comparable] struct {
	To        C
	Kind      EventKind
	Room      Room
	Member    *Member[C]
	LobbySlug string
}

type room[C comparable] struct {
	info     Room
	members  []*Member[C] // local members, oldest first
	remote   []*Member[C] // other nodes' members, in arrival order
	watchers []watcher[C]
}

type watcher[C comparable] struct {
	conn C
	slug string
}

// Registry holds every room with members or lobby watchers. Not safe for
// concurrent use; see the package doc.
type Registry[C comparable] struct {
	rooms   map[string]*room[C] // by room id
	inRoom  map[C]string        // connection -> room id
	lobbies map[C][]lobbySub    // connection -> lobbies it watches
	// remoteIn maps another node's member (remoteKey) to its room id, and
	// byNode each node to its members' connection ids.
	remoteIn map[remoteKey]string
	byNode   map[string]map[string]struct{}
}

type remoteKey struct{ node, id string }

type lobbySub struct {
	slug  string
	rooms []Room
}

// New returns an empty Registry.
func New[C comparable]() *Registry[C] {
	return &Registry[C]{rooms: map[string]*room[C]{}, inRoom: map[C]string{}, lobbies: map[C][]lobbySub{},
		remoteIn: map[remoteKey]string{}, byNode: map[string]map[string]struct{}{}}
}

// Set records m's presence in r (wire-reference.md §7.1): a connection not yet in
// r joins it (leaving its previous room first, with `leave` there), then
// every member of r, m included, gets `update`; a join also sends `join`
// first. Lobby watchers of the rooms get the same changes.
func (rg *Registry[C]) Set(r Room, m Member[C], now int64) []Event[C] {
	var out []Event[C]
	if cur, ok := rg.inRoom[m.Conn]; ok && cur != r.ID {
		out = rg.leave(m.Conn, out)
	}
	rm := rg.room(r)
	existing := rm.find(m.Conn)
	if existing == nil {
		m.JoinedAt = now
		existing = &Member[C]{Conn: m.Conn, ActorTokenID: m.ActorTokenID, Presence: m.Presence, JoinedAt: now}
		rm.members = append(rm.members, existing)
		rg.inRoom[m.Conn] = r.ID
		out = rg.broadcast(rm, Join, existing, out)
	}
	existing.Presence = m.Presence
	return rg.broadcast(rm, Update, existing, out)
}

// Disconnect removes every trace of conn: its room membership (with `leave`
// to the remaining members and watchers, §7.6) and its lobby watches.
func (rg *Registry[C]) Disconnect(conn C) []Event[C] {
	out := rg.leave(conn, nil)
	for _, ls := range rg.lobbies[conn] {
		rg.unwatch(conn, ls)
	}
	delete(rg.lobbies, conn)
	return out
}

// Local returns conn's own member record and room, as the other nodes are
// to be told of it; ok is false when conn is in no room.
func (rg *Registry[C]) Local(conn C) (m *Member[C], r Room, ok bool) {
	id, ok := rg.inRoom[conn]
	if !ok {
		return nil, Room{}, false
	}
	rm := rg.rooms[id]
	return rm.find(conn), rm.info, true
}

// RoomOf returns the room conn is in.
func (rg *Registry[C]) RoomOf(conn C) (Room, bool) {
	id, ok := rg.inRoom[conn]
	if !ok {
		return Room{}, false
	}
	return rg.rooms[id].info, true
}

// Leave takes conn out of its room, with `leave` to the room's members
// (itself included) and watchers; its lobby watches stay.
func (rg *Registry[C]) Leave(conn C) []Event[C] { return rg.leave(conn, nil) }

// Lobbies returns the lobby slugs conn watches.
func (rg *Registry[C]) Lobbies(conn C) []string {
	subs := rg.lobbies[conn]
	out := make([]string, len(subs))
	for i, ls := range subs {
		out[i] = ls.slug
	}
	return out
}

// Members returns the members of room id, this node's and the other
// nodes', oldest first (by JoinedAt; local before remote on a tie). The
// slice must not be modified.
func (rg *Registry[C]) Members(id string) []*Member[C] {
	rm := rg.rooms[id]
	if rm == nil {
		return nil
	}
	if len(rm.remote) == 0 {
		return rm.members
	}
	out := make([]*Member[C], 0, len(rm.members)+len(rm.remote))
	out = append(append(out, rm.members...), rm.remote...)
	slices.SortStableFunc(out, func(a, b *Member[C]) int { return cmp.Compare(a.JoinedAt, b.JoinedAt) })
	return out
}

// Watch makes conn a watcher of rooms under the lobby slug (lobbySubscribe,
// §7.4, OQ-18, OQ-19); watching the same slug again replaces the room list.
// It returns the snapshot: for each room, its members.
func (rg *Registry[C]) Watch(conn C, slug string, rooms []Room) map[Room][]*Member[C] {
	rg.Unwatch(conn, slug)
	for _, r := range rooms {
		rm := rg.room(r)
		rm.watchers = append(rm.watchers, watcher[C]{conn: conn, slug: slug})
	}
	rg.lobbies[conn] = append(rg.lobbies[conn], lobbySub{slug: slug, rooms: rooms})
	return rg.Snapshot(rooms)
}

// Unwatch stops conn watching the lobby slug. It is a no-op when it was not.
func (rg *Registry[C]) Unwatch(conn C, slug string) {
	subs := rg.lobbies[conn]
	for i, ls := range subs {
		if ls.slug != slug {
			continue
		}
		rg.unwatch(conn, ls)
		subs = append(subs[:i], subs[i+1:]...)
		break
	}
	if len(subs) == 0 {
		delete(rg.lobbies, conn)
		return
	}
	rg.lobbies[conn] = subs
}

// Snapshot returns the members of each room (rooms with none map to nil).
func (rg *Registry[C]) Snapshot(rooms []Room) map[Room][]*Member[C] {
	snap := make(map[Room][]*Member[C], len(rooms))
	for _, r := range rooms {
		snap[r] = rg.Members(r.ID)
	}
	return snap
}

// Stats counts what the registry holds: rooms, members and lobby watches.
func (rg *Registry[C]) Stats() (rooms, members, watches int) {
	for _, rm := range rg.rooms {
		members += len(rm.members) + len(rm.remote)
		watches += len(rm.watchers)
	}
	return len(rg.rooms), members, watches
}

func (rg *Registry[C]) room(r Room) *room[C] {
	rm := rg.rooms[r.ID]
	if rm == nil {
		rm = &room[C]{info: r}
		rg.rooms[r.ID] = rm
	}
	if rm.info.Slug == "" {
		rm.info.Slug = r.Slug
	}
	return rm
}

func (rg *Registry[C]) leave(conn C, out []Event[C]) []Event[C] {
	id, ok := rg.inRoom[conn]
	if !ok {
		return out
	}
	delete(rg.inRoom, conn)
	rm := rg.rooms[id]
	for i, m := range rm.members {
		if m.Conn == conn {
			out = rg.broadcast(rm, Leave, m, out) // the leaver gets its own leave (§7.1)
			rm.members = append(rm.members[:i], rm.members[i+1:]...)
			break
		}
	}
	rg.dropIfEmpty(rm)
	return out
}

func (rg *Registry[C]) unwatch(conn C, ls lobbySub) {
	for _, r := range ls.rooms {
		rm := rg.rooms[r.ID]
		if rm == nil {
			continue
		}
		for i, w := range rm.watchers {
			if w.conn == conn && w.slug == ls.slug {
				rm.watchers = append(rm.watchers[:i], rm.watchers[i+1:]...)
				break
			}
		}
		rg.dropIfEmpty(rm)
	}
}

func (rg *Registry[C]) dropIfEmpty(rm *room[C]) {
	if len(rm.members) == 0 && len(rm.remote) == 0 && len(rm.watchers) == 0 {
		delete(rg.rooms, rm.info.ID)
	}
}

// broadcast appends kind for m to every member of rm and every watcher.
func (rg *Registry[C]) broadcast(rm *room[C], kind EventKind, m *Member[C], out []Event[C]) []Event[C] {
	for _, to := range rm.members {
		out = append(out, Event[C]{To: to.Conn, Kind: kind, Room: rm.info, Member: m})
	}
	for _, w := range rm.watchers {
		out = append(out, Event[C]{To: w.conn, Kind: kind, Room: rm.info, Member: m, LobbySlug: w.slug})
	}
	return out
}

func (rm *room[C]) find(conn C) *Member[C] {
	for _, m := range rm.members {
		if m.Conn == conn {
			return m
		}
	}
	return nil
}

// RoomCount is a room with how many members it has, this node's and the
// other nodes' (Registry.Rooms).
type RoomCount struct {
	Room
	Members int
}

// Rooms returns the rooms with at least one member, sorted by id.
func (rg *Registry[C]) Rooms() []RoomCount {
	out := make([]RoomCount, 0, len(rg.rooms))
	for _, rm := range rg.rooms {
		if n := len(rm.members) + len(rm.remote); n > 0 {
			out = append(out, RoomCount{Room: rm.info, Members: n})
		}
	}
	slices.SortFunc(out, func(a, b RoomCount) int { return cmp.Compare(a.ID, b.ID) })
	return out
}
