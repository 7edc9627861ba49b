package session

import (
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Kind is what a reply is. The WebSocket transport writes every reply as
// its MessagePack payload in a binary frame and needs no more; a transport
// that does not speak the SDK protocol maps the kinds it knows to its own
// packets and drops the rest (an MQTT listener: Subscribed → SUBACK with
// the granted QoS, an Error answering a subscribe → SUBACK 0x80, Published
// and an Error answering a publish → PUBACK, AuthOK → CONNACK 0,
// AuthFailed → CONNACK 4, 5 or 3 by Reply.Err, wire-reference.md §8, OQ-27).
type Kind uint8

// The reply kinds, with the frame of wire-reference.md §3.2 each one is.
const (
	KindAuthOK         Kind = iota + 1 // `auth` accepted (§2.3)
	KindAuthFailed                     // `auth` refused (§2.4); Reply.Err.Err is the reason
	KindError                          // an `error` frame (§3.5); Reply.Err is it
	KindPublished                      // `published`, to a publish with msgRef (§3.3)
	KindSubscribed                     // `subscribed` (§3.3)
	KindUnsubscribed                   // `unsubscribed` (OQ-60)
	KindFiltersUpdated                 // `filtersUpdated` (§6.9)
	KindPresenceList                   // `presenceList` (§7.2)
	KindLobby                          // `lobbySubscribed`, `lobbyPresenceList`, `lobbyUnsubscribed` (§7.4)
	KindPresence                       // a presence or lobby presence event, to a member or watcher (§7.3)
	KindHydration                      // `hydration`, a hydration webhook's answer (§5.3)
	KindDisconnect                     // `disconnect`, just before a 4001 close (OQ-62)
	KindReplay                         // `replayStart`, a replayed `message`, `replayEnd` (OQ-33), to a resumed session
	KindReauth                         // `reauth`, accepted or refused (docs/protocol.md "Auth"); Reply.Err is a refusal
)

// Reply is one frame the session sends a client: its kind and its
// MessagePack payload as wire-reference.md §3.2 defines it, built once by the session.
// Err is set for KindError, KindAuthFailed and a refused KindReauth.
type Reply struct {
	Kind    Kind
	Payload []byte
	Err     *wire.Error
}

// Framer builds a connection's frames in its transport's encoding.
type Framer interface {
	// Frame returns the complete frame of r, nil for nothing; it must not
	// modify r.Payload, nor keep r.Payload or r.Err once it returns (the
	// session builds them in a buffer it reuses). It is called on the connection's reader
	// for the replies to the command being handled, so a transport may use
	// that command's context (an MQTT Packet Identifier, the requested
	// QoS), and from workers and other goroutines for the frames only they
	// know (presence lists and events, lobby states, hydration answers,
	// revocations): it must be safe for that. The replies a worker writes
	// as expected replies (Subscribed, Unsubscribed, FiltersUpdated, and
	// the Error that replaces one) must not be nil, but for Subscribed,
	// whose nil writes nothing and is not waited for.
	Frame(r Reply) []byte
}

// Sink is the transport of one connection as the session sees it from the
// connection's reader.
type Sink interface {
	Framer
	// Write queues r to the connection now, behind the replies workers
	// still owe it (hub.Conn.ExpectReply: replies keep request order,
	// wire-reference.md §3.3), to be flushed when the read callback returns.
	// As with Frame, r.Payload and r.Err are not kept once it returns.
	Write(r Reply)
	// Disconnect closes the connection for d behind the replies owed and what
	// is queued; the transport ignores the rest of its input.
	Disconnect(d disconnect.Disconnect)
}

// frameFor builds r in c's encoding, through its transport when that is a
// Framer; nil otherwise.
func frameFor(c *hub.Conn, r Reply) []byte {
	if f, ok := c.Transport().(Framer); ok {
		return f.Frame(r)
	}
	return nil
}

var kindNames = [...]string{"", "authOK", "authFailed", "error", "published", "subscribed", "unsubscribed",
	"filtersUpdated", "presenceList", "lobby", "presence", "hydration", "disconnect", "replay", "reauth"}

// String returns the kind's name, e.g. "subscribed".
func (k Kind) String() string {
	if int(k) >= len(kindNames) || k == 0 {
		return "unknown"
	}
	return kindNames[k]
}
