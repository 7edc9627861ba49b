package server

import (
	"bytes"
	"slices"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/reactor"
)

// Carried is a protocol served inside the binary messages of the
// WebSocket connections upgraded on a path of its own (Config.Carried):
// MQTT over WebSocket on /mqtt, whose Carried is pkg/mqtt/listener's
// Listener.WebSocket. The server does the HTTP upgrade and everything
// RFC 6455 (masks, control frames, fragments, the frame bound, the close
// handshake); the protocol takes the connection over after the upgrade and
// handles each binary message. The server knows the protocol by these
// methods only, so the two transports do not import each other.
type Carried interface {
	// Subprotocols returns the WebSocket subprotocols the upgrade may
	// answer with, preferred first (RFC 6455 §1.9): the first one the
	// client offers is answered, whatever the order of its offer; none when
	// it offers none of them.
	Subprotocols() []string
	// Open takes over c, a connection upgraded on the protocol's path and
	// still in hub.PhaseHandshake, whose reader (OnRequest) works on s, the
	// server's stream: the protocol's state becomes c's hub.Transport, a
	// CarriedConn (hub.Hub.Rebind), and c moves to hub.PhaseOpen. It runs
	// on c's reader and reports false when c was already closing.
	Open(c *hub.Conn, s *reactor.Stream) bool
}

// CarriedConn is the hub.Transport of a connection a Carried protocol
// took over: the server hands it each complete binary message, on the
// connection's reader, and keeps the WebSocket side (control frames,
// fragments, text frames, closes).
type CarriedConn interface {
	hub.Transport
	// Message handles one complete binary message; the payload is valid
	// only until it returns. It queues its replies and decides its closes
	// on the stream Carried.Open was given.
	Message(payload []byte)
}

// carried returns the protocol st was handed over to, nil for a
// WebSocket connection of the server's own protocol. Its hub record's
// transport tells: a Rebind in the upgrade (Carried.Open) made it the
// protocol's state, read here by the reader that made the change.
func (st *connState) carried() CarriedConn {
	if st.Conn.Transport() == hub.Transport(st) {
		return nil
	}
	cc, _ := st.Conn.Transport().(CarriedConn)
	return cc
}

// upgradeCarried upgrades a request on the path of p (Config.Carried),
// answering the first of p's subprotocols the client offered, and hands
// the connection over to p. A refused upgrade is answered by
// refuseUpgrade, as on /ws.
func (s *Server) upgradeCarried(st *connState, req []byte, p Carried) {
	chosen := pickSubprotocol(req, p.Subprotocols())
	u := ws.Upgrader{}
	if chosen != "" {
		u.Protocol = func(offered []byte) bool { return string(offered) == chosen }
	}
	if !s.upgradeWith(st, req, u) {
		return
	}
	if !p.Open(st.Conn, &st.Stream) {
		st.Disconnect(disconnect.New(disconnect.HTTPDone)) // already closing: nothing more
		return
	}
	s.obs.handshakes[HandshakeWebSocket].Add(1)
}

// pickSubprotocol returns the first of ours that the request offers in
// its Sec-WebSocket-Protocol headers (every one of them, each a
// comma-separated list of tokens), or "".
func pickSubprotocol(head []byte, ours []string) string {
	var offered [][]byte
	headerValues(head, "Sec-WebSocket-Protocol", func(v []byte) {
		for _, tok := range bytes.Split(v, []byte(",")) {
			offered = append(offered, bytes.TrimSpace(tok))
		}
	})
	for _, p := range ours {
		if slices.ContainsFunc(offered, func(o []byte) bool { return string(o) == p }) {
			return p
		}
	}
	return ""
}

// onCarriedMessage hands a complete data message of a connection taken
// over by a Carried protocol to it: binary only, a text message closes
// with 1003 (for MQTT, [MQTT-6.0.0-1]).
func (s *Server) onCarriedMessage(st *connState, cc CarriedConn, op ws.OpCode, payload []byte) {
	st.EndMessage()
	if op != ws.OpBinary {
		st.Disconnect(disconnect.WithText(disconnect.UnsupportedData, "binary frames only on this path"))
		return
	}
	cc.Message(payload)
}
