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
//
// It is 96 bytes, one allocation (TestConnStateSize): what only some
// connections have (a will, a persistent session, inbound QoS 2 state, the
// carrying WebSocket stream) is behind x, nil for most of them.
type conn struct {
	session.State  // the hub record (Conn), rate and error windows
	reactor.Stream // the socket, the partial packet, what this read decided

	// The packet being handled, for the replies it gets (Write, Frame):
	// read and written on the reader only.
	curID  uint16      // its Packet Identifier (first: no padding after the Stream)
	cur    packet.Type // its type; 0 between packets
	curQoS byte        // a PUBLISH's QoS

	connack packet.ReturnCode // the CONNACK a reply decided (flagHasConnack), written after Handle returns
	flags   uint8             // flagCurLast, flagGranted, ...: read and written on the reader only

	// ws says the connection is MQTT over WebSocket (websocket.go): x.over
	// is the stream of the WebSocket connection that carries it. Set
	// before the connection is handed over (hub.Hub.Rebind), never
	// changed, so any goroutine may read it (Encoding); a byte of its own,
	// apart from the reader's flags.
	ws bool
	// durable says the connection is a Clean Session 0 one: x.ps is its
	// session state. Set on the reader before the connection enters the
	// listener's clients, never changed after, so a goroutine that finds
	// it there (clients.mu held) may read it and x.ps (heldSession).
	durable bool

	clientKey string // actor and client identifier, in the listener's clients; "" for none (clients.go)
	x         *extra // a will, a persistent session, inbound QoS 2 in progress, the carrying stream; nil for most connections

	// window is the outbound QoS 1 and 2 in flight and waiting: made by the
	// first such SUBSCRIBE, or a resumed session's (sessions.go). Read by
	// the worker (Deliver), set by the reader or, for a CONNECT that took a
	// session over, by the old connection's worker.
	window atomic.Pointer[inflight]
}

// The reader's flags (conn.flags) of the packet being handled and of the
// connection.
const (
	flagCurLast    uint8 = 1 << iota // the last filter of a SUBSCRIBE or UNSUBSCRIBE is being handled
	flagGranted                      // the current SUBSCRIBE filter was accepted (Frame(KindSubscribed))
	flagRefused                      // the current SUBSCRIBE filter was refused (Write(KindError))
	flagHasConnack                   // a reply decided the CONNACK (conn.connack)
	flagAcked                        // the PUBLISH being handled was acknowledged (Write)
	flagConnected                    // a CONNECT was accepted

	// flagsPerPacket are the flags command clears before each packet.
	flagsPerPacket = flagCurLast | flagGranted | flagRefused | flagHasConnack | flagAcked
)

// is reports whether every flag of f is set (on the reader).
func (st *conn) is(f uint8) bool { return st.flags&f == f }

// set sets the flags f (on the reader).
func (st *conn) set(f uint8) { st.flags |= f }

// extra is the state only some connections have, kept out of conn so that
// the common one (a client identifier, Clean Session 1, no will, QoS 0
// and 1 publishes, on the MQTT listener) stays small (TestConnStateSize).
// Set on the reader, except over.
type extra struct {
	will     *will               // the CONNECT's Will Message, published if the connection ends without DISCONNECT (will.go)
	ps       *persist            // a Clean Session 0 connection's session state (sessions.go)
	received map[uint16]struct{} // inbound QoS 2 identifiers between PUBLISH and PUBREL

	// over is, for MQTT over WebSocket (conn.ws), the stream of the
	// WebSocket connection that carries this one: its reader queues the
	// replies and decides the closes there, and every packet it writes is
	// one binary WebSocket frame. Set with conn.ws, before the connection
	// is handed over; such a connection's x is made then and never
	// replaced.
	over *reactor.Stream
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

// heldSession is persistent for a goroutine other than st's reader that
// found st in the listener's clients (clients.mu held): durable and, for a
// durable connection, x and x.ps were set before st entered them.
func (st *conn) heldSession() *persist {
	if !st.durable {
		return nil
	}
	return st.x.ps
}

// Encoding implements hub.Transport: MQTT packets, in binary WebSocket
// frames when carried over WebSocket.
func (st *conn) Encoding() hub.Encoding {
	if st.ws {
		return WebSocketEncoding{}
	}
	return Encoding{}
}

// reader is the stream the connection's reader queues its replies and
// decides its closes on: its own, or the carrying WebSocket connection's.
func (st *conn) reader() *reactor.Stream {
	if st.ws {
		return st.x.over
	}
	return &st.Stream
}

// Closing reports whether the reader decided a close (reactor.Stream.Closing
// of the reader's stream).
func (st *conn) Closing() bool { return st.reader().Closing() }

// framed is pkt as the connection writes it (frame).
func (st *conn) framed(pkt []byte) []byte { return frame(st.ws, pkt) }

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
			st.set(flagGranted)
		}
	case session.KindUnsubscribed:
		if st.cur == packet.TypeUnsubscribe && st.is(flagCurLast) {
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
			st.connack = connackCode(r.Err)
			st.set(flagHasConnack)
		}
	case packet.TypePublish:
		// A denied publish is acknowledged too (OQ-27): MQTT 3.1.1 has no
		// negative acknowledgement; the session logged the refusal.
		// Written at once, like the WebSocket `published`: the session
		// writes it before it hands the publication to the hub, so the
		// acknowledgement precedes the publisher's own copies.
		if (r.Kind == session.KindPublished || r.Kind == session.KindError) && !st.is(flagAcked) {
			st.set(flagAcked)
			st.write(pubAck(st.curQoS, st.curID))
		}
	case packet.TypeSubscribe:
		if r.Kind == session.KindError {
			st.set(flagRefused)
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
