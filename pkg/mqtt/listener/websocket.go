package listener

import (
	"context"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// MQTT over WebSocket (MQTT 3.1.1 §6, docs/mqtt.md "MQTT over WebSocket"):
// the WebSocket server (pkg/server) accepts the connection, answers the
// upgrade on its path (/mqtt, server.Config.Carried) with the subprotocol
// "mqtt", reads the RFC 6455 frames (masks, control frames, fragments, the
// frame bound) and hands each complete binary message to the connection;
// everything MQTT is this package's, the same code as on the MQTT
// listener: conn, read.go (packets, handle, connect, publish, subscribe,
// unsubscribe), the in-flight window, the payload mapping. The two
// packages do not import each other: the server asks only for the methods
// of its server.Carried and server.CarriedConn, which WebSocket and wsConn
// have, and cmd/kraken hands the one to the other.

// WebSocketEncodingID is the hub.Encoding ID of MQTT-over-WebSocket
// connections.
const WebSocketEncodingID = 2

// WebSocketEncoding is the hub.Encoding of MQTT over WebSocket: Encoding's
// packets, each in one binary WebSocket frame (unmasked, as a server's),
// built once per publication like Encoding's; a session ends with the
// WebSocket close frame of its reason, as on the WebSocket transport (MQTT
// 3.1.1 has no server DISCONNECT).
type WebSocketEncoding struct{}

// ID implements hub.Encoding: WebSocketEncodingID.
func (WebSocketEncoding) ID() uint8 { return WebSocketEncodingID }

// Message implements hub.Encoding: Encoding.Message's QoS 0 PUBLISH in one
// binary frame, the packet built in place behind room for the frame
// header; nil for a topic MQTT cannot carry.
func (WebSocketEncoding) Message(m *wire.Message) []byte {
	topic, payload := publishTopic(m), Payload(m.Data)
	ok := true
	frame := wsframe.Framed(ws.OpBinary, 5+2+len(topic)+len(payload), func(b []byte) []byte {
		b, err := packet.AppendPublishHeader(b, packet.PublishHeader{Topic: topic}, len(payload))
		ok = err == nil
		return append(b, payload...)
	})
	if !ok {
		return nil
	}
	return frame
}

// MessageQoS1 implements hub.QoS1Encoding: Encoding.MessageQoS1's head
// behind the header of the one binary frame the whole PUBLISH travels in
// (its length, head + Packet Identifier + tail, is known now), and its
// tail.
func (WebSocketEncoding) MessageQoS1(m *wire.Message) (head, tail []byte) {
	topic := publishTopic(m)
	tail = Payload(m.Data)
	b, err := packet.AppendPublishHeader(make([]byte, wsframe.MaxHeaderSize, wsframe.MaxHeaderSize+5+2+len(topic)),
		packet.PublishHeader{Topic: topic, QoS: 1}, len(tail))
	if err != nil {
		return nil, nil
	}
	n := len(b) - wsframe.MaxHeaderSize + 2 + len(tail)
	start := wsframe.MaxHeaderSize - wsframe.HeaderSize(n)
	wsframe.AppendHeader(b[start:start], ws.OpBinary, n)
	if tail == nil {
		tail = []byte{}
	}
	return b[start:], tail
}

// Retained implements hub.RetainedEncoding: a copy of the frame (or QoS 1
// head) with the PUBLISH's RETAIN flag set, past the frame header.
func (WebSocketEncoding) Retained(frame []byte) []byte {
	out := append([]byte(nil), frame...)
	out[payloadAt(out)] |= 0x01
	return out
}

// payloadAt is where the payload of frame, an unmasked server frame,
// begins: after its 2-, 4- or 10-byte header (RFC 6455 §5.2). The MQTT
// packet's fixed header is there.
func payloadAt(frame []byte) int {
	switch frame[1] & 0x7f {
	case 126:
		return 4
	case 127:
		return 10
	}
	return 2
}

// Close implements hub.Encoding: the WebSocket close frame of d.
func (WebSocketEncoding) Close(d disconnect.Disconnect) []byte { return wsframe.Encoding{}.Close(d) }

// HandshakeTimeout implements hub.Encoding: the WebSocket transport's HTTP
// 408 (a connection is handed over only once its upgrade is complete).
func (WebSocketEncoding) HandshakeTimeout() []byte { return wsframe.Encoding{}.HandshakeTimeout() }

// WebSocket is the listener's side of MQTT over WebSocket: what the
// WebSocket server needs to hand a connection upgraded on the MQTT path
// over to the listener (server.Carried; cmd/kraken sets
// server.Config.Carried["/mqtt"] to Listener.WebSocket()).
type WebSocket struct{ l *Listener }

// WebSocket returns the listener's side of MQTT over WebSocket. The
// connections it takes are read by the WebSocket server's event loop; the
// listener's own need not be started.
func (l *Listener) WebSocket() WebSocket { return WebSocket{l} }

// subprotocols are the WebSocket subprotocols of MQTT, preferred first:
// "mqtt" (MQTT 3.1.1 §6.0 [MQTT-6.0.0-3]), and "mqttv3.1", which older
// clients offer beside it.
var subprotocols = []string{"mqtt", "mqttv3.1"}

// Subprotocols returns the WebSocket subprotocols the server may answer
// with, preferred first: "mqtt", then "mqttv3.1".
func (WebSocket) Subprotocols() []string { return subprotocols }

// Open takes over c, a connection the WebSocket server accepted and
// upgraded on stream s, still in its handshake phase: an MQTT connection
// state (wsConn) on s's socket becomes its hub.Transport, in
// WebSocketEncoding (hub.Hub.Rebind), open, counted as MQTT, never
// resumable. It reports false when c was already closing.
func (w WebSocket) Open(c *hub.Conn, s *reactor.Stream) bool {
	st := &wsConn{conn: conn{Stream: reactor.NewStream(s.Socket()), ws: true, x: &extra{over: s}}, l: w.l}
	st.NotResumable() // clean sessions only (doc.go)
	st.Conn = c
	if !w.l.hub.Rebind(c, st) {
		return false
	}
	c.SetPhase(hub.PhaseOpen)
	w.l.node.Opened(node.KindMQTT, c)
	return true
}

// wsConn is the state of one MQTT-over-WebSocket connection: an MQTT
// connection (conn) whose reader is the WebSocket server's, and the start
// of a packet that spans messages. It is the connection's hub.Transport
// (writes to the socket through conn's own Stream, in WebSocketEncoding)
// and the server.CarriedConn the server hands each binary message to.
type wsConn struct {
	conn
	l *Listener
	// pending is the start of a packet whose rest is in the next messages,
	// at most the listener's MaxPacketSize; nil almost always (a client
	// writes one packet per message).
	pending []byte
}

// maxFixedHeader is the longest MQTT fixed header: a type byte and four
// bytes of Remaining Length.
const maxFixedHeader = 5

// Message handles one complete binary WebSocket message on the
// WebSocket server's reader (server.CarriedConn): every MQTT packet it
// completes or holds, in order (a message may end one packet, carry
// others and start another, MQTT 3.1.1 §6.0). A packet left incomplete is
// kept until the next messages complete it, never more than its declared
// length; one over MaxPacketSize, or malformed, closes the connection as
// on the MQTT listener, with the close frame of its reason (1009, 1002).
func (st *wsConn) Message(payload []byte) {
	l := st.l
	for len(st.pending) > 0 && len(payload) > 0 && !st.Closing() {
		need, err := packet.Len(st.pending, l.cfg.MaxPacketSize)
		if err != nil {
			l.refuse(&st.conn, err)
			return
		}
		take := maxFixedHeader // the fixed header first, then the rest of the packet
		if need > 0 {
			take = need - len(st.pending)
		}
		take = min(take, len(payload))
		st.pending = append(st.pending, payload[:take]...)
		payload = payload[take:]
		used, _, _ := l.packets(&st.conn, st.pending)
		st.pending = st.pending[:copy(st.pending, st.pending[used:])]
		if len(st.pending) == 0 {
			st.pending = nil
		}
	}
	if len(payload) == 0 || st.Closing() {
		return
	}
	used, _, need := l.packets(&st.conn, payload)
	if rest := payload[used:]; len(rest) > 0 && !st.Closing() {
		// Sized as the reactor sizes a partial frame: a declared length is
		// not reserved before its bytes come; append grows it as they do.
		st.pending = append(make([]byte, 0, max(len(rest), min(need, max(2*len(rest), 4096)))), rest...)
	}
}

// overWebSocket is the node.Transport of encoding WebSocketEncodingID: its
// connections are counted as MQTT; they are accepted, drained and stopped
// with the WebSocket server's event loop, so there is nothing to drain or
// stop here.
type overWebSocket struct{}

func (overWebSocket) Kind(*hub.Conn) node.Kind { return node.KindMQTT }

func (overWebSocket) Drain() {}

func (overWebSocket) Shutdown(context.Context) error { return nil }
