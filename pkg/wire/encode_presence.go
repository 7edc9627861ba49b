package wire

import "github.com/tinylib/msgp/msgp"

// PresenceMember is one member of a room as the presence frames show it
// (wire-reference.md §7.1–§7.5).
type PresenceMember struct {
	ActorTokenID string
	// Presence is the raw msgpack value the member sent; nil encodes nil.
	Presence []byte
	// JoinedAt is in unix seconds.
	JoinedAt int64
}

// LobbyRoom is one room of a lobby snapshot: its slug and its members.
type LobbyRoom struct {
	Slug    string
	Members []PresenceMember
}

// AppendPresenceEvent appends a room presence event (wire-reference.md §7.1):
// {type:"presence", event:"join"|"update", data:{actor_token_id, presence}}
// or, for "leave", data:{actor_token_id}. The keys inside data are
// snake_case and there is never an actor_type (OQ-56).
func AppendPresenceEvent(b []byte, event string, m *PresenceMember) []byte {
	b = msgp.AppendMapHeader(b, 3)
	b = appendType(b, "presence")
	b = appendStr(b, "event", event)
	b = msgp.AppendString(b, "data")
	if event == "leave" {
		b = msgp.AppendMapHeader(b, 1)
		return appendStr(b, "actor_token_id", m.ActorTokenID)
	}
	b = msgp.AppendMapHeader(b, 2)
	b = appendStr(b, "actor_token_id", m.ActorTokenID)
	b = msgp.AppendString(b, "presence")
	return appendRawOrNil(b, m.Presence)
}

// AppendPresenceList appends the getPresence reply (wire-reference.md §7.2):
// {type:"presenceList", roomId?, data:[{actorTokenId, presence, joinedAt,
// status:"online"}, ...]}. roomId is omitted when hasRoom is false.
func AppendPresenceList(b []byte, roomID string, hasRoom bool, members []PresenceMember) []byte {
	n := uint32(2)
	if hasRoom {
		n++
	}
	b = msgp.AppendMapHeader(b, n)
	b = appendType(b, "presenceList")
	if hasRoom {
		b = appendStr(b, "roomId", roomID)
	}
	b = msgp.AppendString(b, "data")
	b = msgp.AppendArrayHeader(b, uint32(len(members)))
	for i := range members {
		b = msgp.AppendMapHeader(b, 4)
		b = appendMemberFields(b, &members[i])
		b = appendStr(b, "status", "online")
	}
	return b
}

// AppendLobbyState appends {type:typ, lobbyId, presence:{<room slug>:
// {<actorTokenId>: {actorTokenId, presence, joinedAt}}}} — typ is
// "lobbySubscribed" or "lobbyPresenceList" (wire-reference.md §7.4, §7.5, OQ-47).
// Rooms without members encode {}.
func AppendLobbyState(b []byte, typ, lobbyID string, rooms []LobbyRoom) []byte {
	b = msgp.AppendMapHeader(b, 3)
	b = appendType(b, typ)
	b = appendStr(b, "lobbyId", lobbyID)
	b = msgp.AppendString(b, "presence")
	b = msgp.AppendMapHeader(b, uint32(len(rooms)))
	for _, r := range rooms {
		b = msgp.AppendString(b, r.Slug)
		b = msgp.AppendMapHeader(b, uint32(len(r.Members)))
		for i := range r.Members {
			b = msgp.AppendString(b, r.Members[i].ActorTokenID)
			b = msgp.AppendMapHeader(b, 3)
			b = appendMemberFields(b, &r.Members[i])
		}
	}
	return b
}

// AppendLobbyUnsubscribed appends {type:"lobbyUnsubscribed", lobbyId}.
func AppendLobbyUnsubscribed(b []byte, lobbyID string) []byte {
	b = msgp.AppendMapHeader(b, 2)
	b = appendType(b, "lobbyUnsubscribed")
	return appendStr(b, "lobbyId", lobbyID)
}

// AppendLobbyPresence appends a lobby event (wire-reference.md §7.4, OQ-18):
// {type:"lobbyPresence", event, lobbyId:<the slug the watcher subscribed
// with>, roomId:<room slug>, actorId, data:<presence value; {} for leave>}.
func AppendLobbyPresence(b []byte, event, lobbySlug, roomSlug string, m *PresenceMember) []byte {
	b = msgp.AppendMapHeader(b, 6)
	b = appendType(b, "lobbyPresence")
	b = appendStr(b, "event", event)
	b = appendStr(b, "lobbyId", lobbySlug)
	b = appendStr(b, "roomId", roomSlug)
	b = appendStr(b, "actorId", m.ActorTokenID)
	b = msgp.AppendString(b, "data")
	if event == "leave" {
		return msgp.AppendMapHeader(b, 0)
	}
	return appendRawOrNil(b, m.Presence)
}

func appendMemberFields(b []byte, m *PresenceMember) []byte {
	b = appendStr(b, "actorTokenId", m.ActorTokenID)
	b = msgp.AppendString(b, "presence")
	b = appendRawOrNil(b, m.Presence)
	b = msgp.AppendString(b, "joinedAt")
	return appendInt(b, m.JoinedAt)
}

func appendRawOrNil(b, raw []byte) []byte {
	if len(raw) == 0 {
		return msgp.AppendNil(b)
	}
	return append(b, raw...)
}
