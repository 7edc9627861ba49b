package listener

import (
	"net"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/sockio"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// socket is what conn needs of netpoll's connection.
type socket interface {
	Fd() int
	RemoteAddr() net.Addr
	Close() error
}

// conn is the reader-side state of one MQTT connection, owned by its
// OnRequest (never run concurrently with itself). It is also the context
// netpoll hands back to OnRequest, the connection's hub.Transport and its
// session.Sink.
type conn struct {
	session.State        // the hub record (Conn), rate and error windows
	nc            socket // the socket; conn writes to it straight (Writev)

	partial []byte // tail of a half-received packet; nil when idle

	// The packet being handled, for the replies it gets (Write, Frame):
	// read and written on the reader only.
	cur     packet.Type
	curID   uint16 // its Packet Identifier
	curQoS  byte   // a PUBLISH's QoS
	curLast bool   // the last filter of a SUBSCRIBE or UNSUBSCRIBE is being handled
	granted bool   // the current SUBSCRIBE filter was accepted (Frame(KindSubscribed))
	refused bool   // the current SUBSCRIBE filter was refused (Write(KindError))
	ack     []byte // the CONNACK a reply decided, written after Handle returns, or the PUBACK Write wrote

	window *inflight // outbound QoS 1 in flight; made by the first QoS 1 SUBSCRIBE

	connected bool // a CONNECT was accepted
	closing   bool // a close was decided: ignore the rest of the input
	wrote     bool // frames were queued during this OnRequest
}

// Deadline implements context.Context: there is none.
func (*conn) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context: never done.
func (*conn) Done() <-chan struct{} { return nil }

// Err implements context.Context.
func (*conn) Err() error { return nil }

// Value implements context.Context: no values.
func (*conn) Value(any) any { return nil }

// Writev implements hub.Transport: non-blocking write(2)/writev(2) on the
// descriptor; EAGAIN is a short count with a nil error.
func (st *conn) Writev(bufs [][]byte) (int, error) {
	return sockio.Writev(st.nc.Fd(), bufs)
}

// CloseWrite implements hub.Transport: shutdown(SHUT_WR).
func (st *conn) CloseWrite() error { return sockio.CloseWrite(st.nc.Fd()) }

// Close implements hub.Transport: netpoll closes the socket and runs the
// close callback (Hub.Closed).
func (st *conn) Close() error { return st.nc.Close() }

// Encoding implements hub.Transport: MQTT packets.
func (*conn) Encoding() hub.Encoding { return Encoding{} }

// RemoteAddr is the peer's address (logs).
func (st *conn) RemoteAddr() net.Addr { return st.nc.RemoteAddr() }

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
			return packet.AppendUnsuback(nil, st.curID)
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
		switch r.Kind {
		case session.KindAuthOK:
			st.ack = packet.AppendConnack(nil, false, packet.Accepted)
		case session.KindAuthFailed:
			st.ack = packet.AppendConnack(nil, false, connackCode(r.Err))
		}
	case packet.TypePublish:
		// A denied publish is acknowledged too (OQ-27): MQTT 3.1.1 has no
		// negative acknowledgement; the session logged the refusal.
		// Written at once, like the WebSocket `published`: the session
		// writes it before it hands the publication to the hub, so the
		// acknowledgement precedes the publisher's own copies.
		if (r.Kind == session.KindPublished || r.Kind == session.KindError) && st.ack == nil {
			st.ack = pubAck(st.curQoS, st.curID)
			st.write(st.ack)
		}
	case packet.TypeSubscribe:
		if r.Kind == session.KindError {
			st.refused = true
		}
	}
}

// pubAck is the acknowledgement of a PUBLISH of QoS qos: PUBACK for 1,
// PUBREC for 2 (QoS 2 is best effort: the message goes on at once), nil
// for 0.
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
// Table 3.1, protocol.md §8.2): 3 when the auth service could not answer, 5
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

// SetReadPaused implements hub.InputPauser: netpoll stops or resumes
// reading the socket (sockio.SetReadPaused).
func (st *conn) SetReadPaused(paused bool) error { return sockio.SetReadPaused(st.nc, paused) }

// Disconnect implements session.Sink: closes after what is owed and queued
// (hub.Conn.CloseNow).
func (st *conn) Disconnect(d disconnect.Disconnect) {
	if st.closing {
		return
	}
	st.closing = true
	st.Conn.CloseNow(d)
}

// write queues a packet behind the replies workers still owe the
// connection (hub.Conn.Write); it is flushed at the end of onRequest.
func (st *conn) write(frame []byte) {
	if frame == nil {
		return
	}
	if st.Conn.Write(frame) {
		st.wrote = true
	}
}

// Unsent implements hub.Unsent: the bytes the socket has not sent yet.
func (st *conn) Unsent() int { return sockio.Unsent(st.nc.Fd()) }
