package listener

import (
	"sync/atomic"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// conn is the reader-side state of one MQTT connection, owned by its
// OnRequest (never run concurrently with itself). Its reactor.Stream makes
// it the context netpoll hands back to OnRequest and, with its Encoding,
// the connection's hub.Transport; it is also the connection's session.Sink.
type conn struct {
	session.State  // the hub record (Conn), rate and error windows
	reactor.Stream // the socket, the partial packet, what this read decided

	// The packet being handled, for the replies it gets (Write, Frame):
	// read and written on the reader only.
	curID     uint16      // its Packet Identifier (first: no padding after the Stream)
	cur       packet.Type // its type; 0 between packets
	curQoS    byte        // a PUBLISH's QoS
	curLast   bool        // the last filter of a SUBSCRIBE or UNSUBSCRIBE is being handled
	granted   bool        // the current SUBSCRIBE filter was accepted (Frame(KindSubscribed))
	refused   bool        // the current SUBSCRIBE filter was refused (Write(KindError))
	connected bool        // a CONNECT was accepted

	connack    packet.ReturnCode // the CONNACK a reply decided (hasConnack), written after Handle returns
	hasConnack bool
	acked      bool // the PUBLISH being handled was acknowledged (Write)

	clientKey string // actor and client identifier, in the listener's clients; "" for none (clients.go)
	x         *extra // a will, a persistent session, inbound QoS 2 in progress; nil for most connections

	// window is the outbound QoS 1 and 2 in flight and waiting: made by the
	// first such SUBSCRIBE, or a resumed session's (sessions.go). Read by
	// the worker (Deliver), set by the reader or, for a CONNECT that took a
	// session over, by the old connection's worker.
	window atomic.Pointer[inflight]

	// over is, for MQTT over WebSocket (websocket.go), the stream of the
	// WebSocket connection that carries this one: its reader queues the
	// replies and decides the closes there, and every packet it writes is
	// one binary WebSocket frame. nil on the MQTT listener. Set before the
	// connection is handed over (hub.Hub.Rebind), never changed.
	over *reactor.Stream
}

// extra is the state only some connections have, kept out of conn so that
// the common one (a client identifier, Clean Session 1, no will, QoS 0
// and 1 publishes) stays small (TestConnStateSize). Set on the reader.
type extra struct {
	will     *will               // the CONNECT's Will Message, published if the connection ends without DISCONNECT (will.go)
	ps       *persist            // a Clean Session 0 connection's session state (sessions.go)
	received map[uint16]struct{} // inbound QoS 2 identifiers between PUBLISH and PUBREL
}

// more returns st's extra state, made on first use (on the reader).
func (st *conn) more() *extra {
	if st.x == nil {
		st.x = &extra{}
	}
	return st.x
}

// persistent returns st's session state when it is a Clean Session 0
// connection, else nil.
func (st *conn) persistent() *persist {
	if st.x == nil {
		return nil
	}
	return st.x.ps
}

// Encoding implements hub.Transport: MQTT packets, in binary WebSocket
// frames when carried over WebSocket.
func (st *conn) Encoding() hub.Encoding {
	if st.over != nil {
		return WebSocketEncoding{}
	}
	return Encoding{}
}

// reader is the stream the connection's reader queues its replies and
// decides its closes on: its own, or the carrying WebSocket connection's.
func (st *conn) reader() *reactor.Stream {
	if st.over != nil {
		return st.over
	}
	return &st.Stream
}

// Closing reports whether the reader decided a close (reactor.Stream.Closing
// of the reader's stream).
func (st *conn) Closing() bool { return st.reader().Closing() }

// framed is pkt as the connection writes it (frame).
func (st *conn) framed(pkt []byte) []byte { return frame(st.over != nil, pkt) }

// frame is pkt as written on a plain MQTT connection (itself) or, with ws,
// on an MQTT-over-WebSocket one (in one binary frame); nil stays nil.
func frame(ws bool, pkt []byte) []byte {
	if !ws || pkt == nil {
		return pkt
	}
	return wsframe.Binary(pkt)
}

// unsubackPlaceholder is what a worker writes for the unsubscribes of an
// UNSUBSCRIBE before its last filter: nothing, but not nil, since an
// unsubscribe's reply is always waited for (hub.Hub.Unsubscribe).
var unsubackPlaceholder = []byte{}

// Frame implements session.Framer. Only two kinds become packets, both
// for the packet being handled, on the reader: the reply to the last
// filter's unsubscribe is the UNSUBACK (the ones before it write
// nothing), and an accepted subscribe only marks its filter granted (the
// SUBACK is written once for the whole SUBSCRIBE, see subscribe). Every
// other kind, whatever goroutine asks, is nil: MQTT has no packet for
// presence, lobbies, hydration or revocation notices. It reads the
// reader's fields only for those two kinds, so other goroutines may call
// it.
func (st *conn) Frame(r session.Reply) []byte {
	switch r.Kind {
	case session.KindSubscribed:
		if st.cur == packet.TypeSubscribe {
			st.granted = true
		}
	case session.KindUnsubscribed:
		if st.cur == packet.TypeUnsubscribe && st.curLast {
			return st.framed(packet.AppendUnsuback(nil, st.curID))
		}
		return unsubackPlaceholder
	}
	return nil
}

// Write implements session.Sink: the reply to the packet being handled, as
// MQTT says it (CONNACK, PUBACK, a SUBACK code); the rest is dropped.
func (st *conn) Write(r session.Reply) {
	switch st.cur {
	case packet.TypeConnect:
		switch r.Kind { // an accepted CONNECT's CONNACK says whether a session is present (openSession)
		case session.KindAuthFailed:
			st.connack, st.hasConnack = connackCode(r.Err), true
		}
	case packet.TypePublish:
		// A denied publish is acknowledged too (OQ-27): MQTT 3.1.1 has no
		// negative acknowledgement; the session logged the refusal.
		// Written at once, like the WebSocket `published`: the session
		// writes it before it hands the publication to the hub, so the
		// acknowledgement precedes the publisher's own copies.
		if (r.Kind == session.KindPublished || r.Kind == session.KindError) && !st.acked {
			st.acked = true
			st.write(pubAck(st.curQoS, st.curID))
		}
	case packet.TypeSubscribe:
		if r.Kind == session.KindError {
			st.refused = true
		}
	}
}

// pubAck is the acknowledgement of a PUBLISH of QoS qos: PUBACK for 1,
// PUBREC for 2 (the message goes on at once; its identifier is held until
// PUBREL, publish), nil for 0.
func pubAck(qos byte, id uint16) []byte {
	switch qos {
	case 1:
		return packet.AppendPuback(nil, id)
	case 2:
		return packet.AppendPubrec(nil, id)
	}
	return nil
}

// connackCode is the CONNACK return code of a refused auth (MQTT 3.1.1
// Table 3.1, wire-reference.md §8.2): 3 when the auth service could not answer, 5
// for a token it refused or an organisation over its connection limit.
func connackCode(e *wire.Error) packet.ReturnCode {
	if e == nil {
		return packet.RefusedNotAuthorized
	}
	switch e.Err {
	case wire.ErrConnectionFailed, wire.ErrAuthenticationFailed:
		return packet.RefusedServerUnavailable
	}
	return packet.RefusedNotAuthorized
}

// Disconnect implements session.Sink and reactor.Conn: closes after what is
// owed and queued (reactor.Stream.CloseNow); MQTT 3.1.1 has no packet for
// it, so the socket just closes.
//
// Over WebSocket the hub ends it with the close frame of d
// (WebSocketEncoding.Close), as the WebSocket transport does.
func (st *conn) Disconnect(d disconnect.Disconnect) { st.reader().CloseNow(st.Conn, d) }

// write queues a packet behind the replies workers still owe the
// connection (reactor.Stream.Queue of the reader's stream), framed for the
// connection (framed); it is flushed at the end of the read.
func (st *conn) write(pkt []byte) { st.reader().Queue(st.Conn, st.framed(pkt)) }
