package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tinylib/msgp/msgp"
)

// PresenceEvent is a room presence change (wire-reference.md §7.1): Event is
// "join", "update" or "leave"; Presence is the actor's presence data (nil
// for leave).
type PresenceEvent struct {
	Event        string
	ActorTokenID string
	Presence     Data
}

// PresenceMember is one entry of a room's presence list (wire-reference.md §7.2)
// or of a lobby snapshot (§7.5).
type PresenceMember struct {
	ActorTokenID string
	Presence     Data
	JoinedAt     time.Time
	Status       string
}

// LobbyState is a lobby snapshot: room → actor token id → member
// (wire-reference.md §7.5).
type LobbyState map[string]map[string]PresenceMember

// LobbyPresenceEvent is a presence change in a room of a subscribed lobby
// (wire-reference.md §7.4).
type LobbyPresenceEvent struct {
	Event   string
	LobbyID string
	RoomID  string
	ActorID string
	Data    Data
}

// presenceState is the last SetPresence, re-sent after a reconnect.
type presenceState struct {
	roomID string
	data   Data
}

func (p *presenceState) frame() []byte {
	e := newFrame("presence").raw("data", p.data)
	if p.roomID != "" {
		e.str("roomId", p.roomID)
	}
	return e.bytes()
}

type presenceResult struct {
	members []PresenceMember
	err     error
}

type presenceReq struct {
	roomID string
	ch     chan presenceResult
}

type lobbyResult struct {
	state LobbyState
	err   error
}

type lobbyReq struct {
	kind string // the reply type it waits for
	ch   chan lobbyResult
}

// errNoPresence wraps a timeout of a presence or lobby request.
func errNoPresence(what string, err error) error {
	return fmt.Errorf("client: no %s reply (presence needs a broker that supports it): %w", what, err)
}

// SetPresence sets this connection's presence in room roomID (a room slug;
// "" for the legacy connection-level presence, which is never broadcast).
// The broker sends no reply; members of the room get a presence event. The
// last presence set is sent again after every reconnect.
//
// It needs a broker that implements presence (wire-reference.md §7), as kraken
// does.
func (c *Client) SetPresence(ctx context.Context, roomID string, data any) error {
	raw, err := Marshal(data)
	if err != nil {
		return err
	}
	p := &presenceState{roomID: roomID, data: raw}
	c.mu.Lock()
	if c.status == StatusClosed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.presence = p
	cn := c.cn
	c.mu.Unlock()
	if cn == nil {
		return nil // sent with the next connection
	}
	if err := cn.write(p.frame()); err != nil {
		return nil // sent again with the next connection
	}
	return nil
}

// GetPresence asks for the presence list of room roomID and waits for the
// broker's presenceList (wire-reference.md §7.2). It needs a broker that
// implements presence; against one that does not, it fails when ctx (or
// Options.RequestTimeout) expires, with an error that says so.
func (c *Client) GetPresence(ctx context.Context, roomID string) ([]PresenceMember, error) {
	r := &presenceReq{roomID: roomID, ch: make(chan presenceResult, 1)}
	c.mu.Lock()
	cn, err := c.liveConnLocked()
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.presW = append(c.presW, r)
	c.mu.Unlock()
	e := newFrame("getPresence")
	if roomID != "" {
		e.str("roomId", roomID)
	}
	if err := cn.write(e.bytes()); err != nil {
		return nil, cn.lostError()
	}
	ctx, cancel := c.requestCtx(ctx)
	defer cancel()
	select {
	case res := <-r.ch:
		return res.members, res.err
	case <-ctx.Done():
		c.mu.Lock()
		for i, q := range c.presW {
			if q == r {
				c.presW = append(c.presW[:i], c.presW[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return nil, errNoPresence("presenceList", ctx.Err())
	case <-c.closed:
		return nil, ErrClosed
	}
}

// SubscribeLobby subscribes to lobby lobbyID (a slug) and returns its
// snapshot (wire-reference.md §7.4); lobby events then go to
// Options.OnLobbyPresence. The lobby is subscribed again after every
// reconnect. It needs a broker that implements lobbies.
func (c *Client) SubscribeLobby(ctx context.Context, lobbyID string) (LobbyState, error) {
	st, err := c.lobbyRequest(ctx, "lobbySubscribe", "lobbySubscribed", lobbyID)
	if err == nil {
		c.mu.Lock()
		c.lobbies[lobbyID] = true
		c.mu.Unlock()
	}
	return st, err
}

// UnsubscribeLobby leaves lobby lobbyID.
func (c *Client) UnsubscribeLobby(ctx context.Context, lobbyID string) error {
	c.mu.Lock()
	delete(c.lobbies, lobbyID)
	c.mu.Unlock()
	_, err := c.lobbyRequest(ctx, "lobbyUnsubscribe", "lobbyUnsubscribed", lobbyID)
	if errors.Is(err, ErrNotConnected) {
		return nil
	}
	return err
}

// GetLobbyPresence returns the snapshot of lobby lobbyID without
// subscribing. It needs a broker that implements lobbies.
func (c *Client) GetLobbyPresence(ctx context.Context, lobbyID string) (LobbyState, error) {
	return c.lobbyRequest(ctx, "getLobbyPresence", "lobbyPresenceList", lobbyID)
}

func (c *Client) lobbyRequest(ctx context.Context, typ, reply, lobbyID string) (LobbyState, error) {
	r := &lobbyReq{kind: reply, ch: make(chan lobbyResult, 1)}
	c.mu.Lock()
	cn, err := c.liveConnLocked()
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	c.lobbyW[lobbyID] = append(c.lobbyW[lobbyID], r)
	c.mu.Unlock()
	if err := cn.write(newFrame(typ).str("lobbyId", lobbyID).bytes()); err != nil {
		return nil, cn.lostError()
	}
	ctx, cancel := c.requestCtx(ctx)
	defer cancel()
	select {
	case res := <-r.ch:
		return res.state, res.err
	case <-ctx.Done():
		c.mu.Lock()
		rs := c.lobbyW[lobbyID]
		for i, q := range rs {
			if q == r {
				c.lobbyW[lobbyID] = append(rs[:i], rs[i+1:]...)
				break
			}
		}
		if len(c.lobbyW[lobbyID]) == 0 {
			delete(c.lobbyW, lobbyID)
		}
		c.mu.Unlock()
		return nil, errNoPresence(reply, ctx.Err())
	case <-c.closed:
		return nil, ErrClosed
	}
}

// onPresenceFrame handles the presence and lobby frames of wire-reference.md
// §3.2 on the reader goroutine.
func (c *Client) onPresenceFrame(f *inFrame) {
	switch f.typ {
	case "presence":
		ev := PresenceEvent{Event: f.event}
		ev.ActorTokenID, ev.Presence = parsePresenceData(f.data)
		if h := c.opts.OnPresence; h != nil {
			c.disp.deliver(func() { h(ev) })
		}
	case "presenceList":
		members := parseMembers(f.data)
		c.mu.Lock()
		idx := -1
		for i, r := range c.presW {
			if !f.hasRoomID || r.roomID == f.roomID {
				idx = i
				break
			}
		}
		if idx >= 0 {
			r := c.presW[idx]
			c.presW = append(c.presW[:idx], c.presW[idx+1:]...)
			r.ch <- presenceResult{members: members}
		}
		c.mu.Unlock()
	case "lobbySubscribed", "lobbyPresenceList", "lobbyUnsubscribed":
		state := parseLobbyState(f.presence)
		c.mu.Lock()
		rs := c.lobbyW[f.lobbyID]
		for i, r := range rs {
			if r.kind == f.typ {
				c.lobbyW[f.lobbyID] = append(rs[:i], rs[i+1:]...)
				if len(c.lobbyW[f.lobbyID]) == 0 {
					delete(c.lobbyW, f.lobbyID)
				}
				r.ch <- lobbyResult{state: state}
				break
			}
		}
		c.mu.Unlock()
	case "lobbyPresence":
		ev := LobbyPresenceEvent{Event: f.event, LobbyID: f.lobbyID, RoomID: f.roomID, ActorID: f.actorID,
			Data: append(Data(nil), f.data...)}
		if h := c.opts.OnLobbyPresence; h != nil {
			c.disp.deliver(func() { h(ev) })
		}
	}
}

// parsePresenceData reads {actor_token_id, presence} (or the camelCase
// actorTokenId) from a presence event's data.
func parsePresenceData(b []byte) (string, Data) {
	var actor string
	var presence Data
	eachField(b, func(k string, v []byte) {
		switch k {
		case "actor_token_id", "actorTokenId":
			actor, _ = str(v)
		case "presence":
			presence = append(Data(nil), v...)
		}
	})
	return actor, presence
}

// parseMembers reads a presenceList's data array.
func parseMembers(b []byte) []PresenceMember {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return nil
	}
	out := make([]PresenceMember, 0, n)
	for i := uint32(0); i < n; i++ {
		start := b
		if b, err = msgp.Skip(b); err != nil {
			return out
		}
		out = append(out, parseMember(start[:len(start)-len(b)]))
	}
	return out
}

func parseMember(v []byte) PresenceMember {
	var m PresenceMember
	eachField(v, func(k string, v []byte) {
		switch k {
		case "actorTokenId", "actor_token_id":
			m.ActorTokenID, _ = str(v)
		case "presence":
			m.Presence = append(Data(nil), v...)
		case "joinedAt", "joined_at":
			if s, ok := number(v); ok && s > 0 {
				m.JoinedAt = time.Unix(int64(s), 0)
			}
		case "status":
			m.Status, _ = str(v)
		}
	})
	return m
}

// parseLobbyState reads room → actor → member.
func parseLobbyState(b []byte) LobbyState {
	state := LobbyState{}
	eachField(b, func(room string, v []byte) {
		members := map[string]PresenceMember{}
		eachField(v, func(actor string, mv []byte) {
			m := parseMember(mv)
			if m.ActorTokenID == "" {
				m.ActorTokenID = actor
			}
			if msgp.NextType(mv) != msgp.MapType || m.Presence == nil && m.Status == "" && m.JoinedAt.IsZero() {
				m.Presence = append(Data(nil), mv...) // the value is the presence itself
			}
			members[actor] = m
		})
		state[room] = members
	})
	return state
}

// eachField calls fn for each string-keyed entry of the msgpack map b.
func eachField(b []byte, fn func(k string, v []byte)) {
	if msgp.NextType(b) != msgp.MapType {
		return
	}
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return
	}
	for i := uint32(0); i < n; i++ {
		var key []byte
		if key, b, err = msgp.ReadMapKeyZC(b); err != nil {
			return
		}
		start := b
		if b, err = msgp.Skip(b); err != nil {
			return
		}
		fn(string(key), start[:len(start)-len(b)])
	}
}
