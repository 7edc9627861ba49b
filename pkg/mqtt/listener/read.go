package listener

import (
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// maxGrantedQoS is the highest QoS a SUBACK grants: every QoS is granted
// as requested (MQTT 3.1.1 §3.9.3).
const maxGrantedQoS = 2

var (
	packetPool  = sync.Pool{New: func() any { return new(packet.Packet) }}
	commandPool = sync.Pool{New: func() any { return new(wire.Command) }}
)

// handler is the Listener as the reactor's Handler of MQTT connections:
// the reactor (pkg/reactor) accepts and reads them, bounds their input,
// keeps their partial packets and times them (a complete packet moves the
// idle deadline, as any packet resets the keep-alive, OQ-27; a packet in
// progress meets the hub's frame timeout); the Listener parses and handles
// the packets (process).
type handler struct{ l *Listener }

// Open implements reactor.Handler: a connection is registered with the
// hub already open, since MQTT has no handshake: the hub's auth deadline
// is what closes a connection that never sends a CONNECT.
func (h handler) Open(sock reactor.Socket) *conn {
	st := &conn{Stream: reactor.NewStream(sock)}
	st.NotResumable() // clean sessions only (doc.go)
	st.Conn = h.l.hub.Register(st)
	st.Conn.SetPhase(hub.PhaseOpen)
	h.l.node.Opened(node.KindMQTT, st.Conn)
	if r := h.l.node.Admit(st.Conn, st.AddressPending()); r != edge.Admitted {
		h.l.refuseAtEdge(st, r)
	}
	return st
}

// Readdressed implements reactor.Readdresser: the connection's PROXY
// protocol header gave its client's address (Config.ProxyProtocol), whose
// edge limits now apply; a refusal is answered as at the accept.
func (h handler) Readdressed(st *conn, from net.Addr) {
	if r := h.l.node.Readdress(st.Conn, from); r != edge.Admitted {
		h.l.refuseAtEdge(st, r)
	}
}

// refuseAtEdge answers a connection the node's edge limits refused
// (node.Node.Admit, Readdress) with CONNACK 3, server unavailable, the
// answer the client reads to its CONNECT, and closes it.
func (l *Listener) refuseAtEdge(st *conn, r edge.Refusal) {
	if ce := l.log.Check(zap.DebugLevel, "connection refused at the edge"); ce != nil {
		ce.Write(session.LogFields(st.Conn, zap.Stringer("reason", r))...)
	}
	st.write(packet.AppendConnack(nil, false, packet.RefusedServerUnavailable))
	st.Disconnect(disconnect.WithText(disconnect.EdgeLimit, r.Text()))
}

// Process implements reactor.Handler (process).
func (h handler) Process(st *conn, buf []byte) (used int, complete bool) { return h.l.process(st, buf) }

// process handles every complete packet at the start of buf and returns
// the bytes used and whether at least one packet was complete. Each packet
// is a whole message (reactor.Stream.EndMessage); at an incomplete one it
// records its length once the fixed header is there (SetNeed).
func (l *Listener) process(st *conn, buf []byte) (used int, complete bool) {
	used, complete, need := l.packets(st, buf)
	if complete {
		st.EndMessage()
	}
	st.SetNeed(need)
	return used, complete
}

// packets handles every complete packet at the start of buf, for both the
// MQTT listener (process) and MQTT over WebSocket (wsConn.Message), and
// returns the bytes used, whether at least one packet was complete, and
// the length of the incomplete packet it stopped at once its fixed header
// is there (0 when not known). It stops at a packet the codec refuses,
// after closing the connection (refuse), and once a close is decided.
func (l *Listener) packets(st *conn, buf []byte) (used int, complete bool, need int) {
	p := packetPool.Get().(*packet.Packet)
	defer packetPool.Put(p)
	for used < len(buf) && !st.Closing() {
		n, err := packet.Parse(buf[used:], l.cfg.MaxPacketSize, p)
		if err != nil {
			l.refuse(st, err)
			break
		}
		if n == 0 {
			need, _ = packet.Len(buf[used:], l.cfg.MaxPacketSize)
			break
		}
		used += n
		complete = true
		l.handle(st, p)
	}
	p.Topic, p.Payload = nil, nil // they alias the read buffer
	return used, complete, need
}

// refuse closes the connection for a packet the codec or the session
// order refuses [MQTT-4.8.0-1], after CONNACK 1 or 2 when the error's
// ReturnCode says so.
func (l *Listener) refuse(st *conn, err error) {
	reason := disconnect.ProtocolError
	if err == packet.ErrTooLarge {
		reason = disconnect.TooLarge
	}
	if perr, ok := err.(*packet.Error); ok && perr.ReturnCode != packet.Accepted {
		st.write(packet.AppendConnack(nil, false, perr.ReturnCode))
	}
	if ce := l.log.Check(zap.DebugLevel, "packet refused"); ce != nil {
		ce.Write(session.LogFields(st.Conn, zap.Error(err))...)
	}
	st.Disconnect(disconnect.WithText(reason, err.Error()))
}

// handle runs one decoded packet.
func (l *Listener) handle(st *conn, p *packet.Packet) {
	if !st.is(flagConnected) {
		if p.Type != packet.TypeConnect {
			l.refuse(st, packet.ErrNotConnect)
			return
		}
		l.connect(st, p)
		return
	}
	switch p.Type {
	case packet.TypeConnect:
		l.refuse(st, packet.ErrSecondConnect)
	case packet.TypePublish:
		l.publish(st, p)
	case packet.TypePubrel:
		// The end of an inbound QoS 2 exchange: the identifier may be used
		// again for a new message [MQTT-4.3.3-2]. PUBCOMP even for an
		// identifier not held (a retransmitted PUBREL after our PUBCOMP was
		// lost).
		if st.x != nil {
			delete(st.x.received, p.PacketID)
		}
		st.write(packet.AppendPubcomp(nil, p.PacketID))
	case packet.TypeSubscribe:
		l.subscribe(st, p)
	case packet.TypeUnsubscribe:
		l.unsubscribe(st, p)
	case packet.TypePingreq:
		st.write(packet.AppendPingresp(nil))
	case packet.TypeDisconnect:
		if st.x != nil {
			st.x.will = nil // a clean end: no will [MQTT-3.14.4-3]
		}
		st.Disconnect(disconnect.New(disconnect.ClientClosed))
	case packet.TypePuback:
		if f := st.window.Load(); f != nil {
			f.ack(st.Conn, p.PacketID, slotPuback)
		}
	case packet.TypePubrec:
		// Our QoS 2 PUBLISH was received: PUBREL [MQTT-4.3.3-1], also for
		// a retransmitted PUBREC (its PUBREL was lost).
		if f := st.window.Load(); f != nil {
			f.ack(st.Conn, p.PacketID, slotPubrec)
		}
		st.write(packet.AppendPubrel(nil, p.PacketID))
	case packet.TypePubcomp:
		if f := st.window.Load(); f != nil {
			f.ack(st.Conn, p.PacketID, slotPubcomp)
		}
	}
}

// command runs cmd through the session protocol with p as the packet being
// handled, then writes the acknowledgement its replies decided.
func (l *Listener) command(st *conn, p *packet.Packet, last bool, cmd *wire.Command) {
	st.cur, st.curID, st.curQoS = p.Type, p.PacketID, p.QoS
	st.flags &^= flagsPerPacket
	if last {
		st.set(flagCurLast)
	}
	l.proto.Handle(&st.State, st, cmd)
	st.cur = 0
	if st.is(flagHasConnack) {
		st.write(packet.AppendConnack(nil, false, st.connack))
	}
}

func getCommand() *wire.Command { return commandPool.Get().(*wire.Command) }

func putCommand(cmd *wire.Command) { cmd.Reset(); commandPool.Put(cmd) }

// connect authenticates a CONNECT (wire-reference.md §8.2, OQ-27): the token is
// the password, else (none, or empty) the user name (mosquitto_pub sends a
// password only with a user name, so any user name is taken beside it). CONNACK 0 and
// the keep-alive deadline on success; CONNACK 4 without a token, 5 for a
// refused one, 3 when the auth service is down, and a close after any
// refusal [MQTT-3.2.2-5]. An accepted CONNECT keeps its will (will.go) and
// takes its client identifier over from a connection that holds it
// (clients.go); every session is clean (session present 0).
func (l *Listener) connect(st *conn, p *packet.Packet) {
	c := &p.Connect
	token := c.Password
	if token == "" {
		token = c.Username // no password, or an empty one
	}
	if token == "" {
		st.write(packet.AppendConnack(nil, false, packet.RefusedBadUsernameOrPassword))
		st.Disconnect(disconnect.WithText(disconnect.AuthFailures, "no token in CONNECT"))
		return
	}
	cmd := getCommand()
	defer putCommand(cmd)
	cmd.Type, cmd.Token, cmd.HasToken, cmd.TokenIsString, cmd.ProtocolVersion = "auth", token, true, true, 2
	l.command(st, p, true, cmd)
	if st.Conn.Phase() != hub.PhaseAuthed {
		st.Disconnect(disconnect.New(disconnect.AuthFailures))
		return
	}
	st.set(flagConnected)
	if w := newWill(c); w != nil {
		st.more().will = w
	}
	if c.ClientID == "" { // with Clean Session 1: an identity of its own, never taken over
		st.write(packet.AppendConnack(nil, false, packet.Accepted))
	} else {
		l.openSession(st, c.CleanSession, c.ClientID)
	}
	if ka := c.KeepAlive; ka > 0 {
		st.Conn.SetIdleTimeout(time.Duration(ka) * 1500 * time.Millisecond)
	} else {
		st.Conn.SetIdleTimeout(-1) // keep-alive 0 turns the mechanism off (§3.1.2.10)
	}
}

// publish hands a PUBLISH to the session's publish: the same limits,
// grants, retained store and fan-out as a WebSocket publish, data a bin of
// the payload (OQ-27), echoed to the publisher's own matching subscriptions
// as MQTT does. QoS 1 is acknowledged with PUBACK, QoS 2 with PUBREC,
// whether the publish was accepted or refused (OQ-27; the session logs the
// refusal, such as a topic beginning with '$', which is the server's).
//
// QoS 2 is exactly once: the Packet Identifier is remembered from the
// PUBLISH to its PUBREL, and a PUBLISH with an identifier still remembered
// (the client's retransmission, DUP or not) is answered with PUBREC and
// not published again (MQTT 3.1.1 §4.3.3, Figure 4.3, method B).
func (l *Listener) publish(st *conn, p *packet.Packet) {
	if p.QoS == 2 {
		x := st.more()
		if _, dup := x.received[p.PacketID]; dup {
			st.write(packet.AppendPubrec(nil, p.PacketID))
			return
		}
		if x.received == nil {
			x.received = make(map[uint16]struct{})
		}
		x.received[p.PacketID] = struct{}{}
	}
	cmd := getCommand()
	defer putCommand(cmd)
	cmd.Type, cmd.Topic, cmd.HasTopic = "publish", string(p.Topic), true
	cmd.Data, cmd.HasData = Data(p.Payload, p.Retain), true
	cmd.Echo, cmd.Retain, cmd.QoS = true, p.Retain, int(p.QoS)
	if p.QoS > 0 {
		cmd.MsgRef = "mqtt" // answered (KindPublished or KindError), hence acknowledged
	}
	l.command(st, p, true, cmd)
}

// subscribe runs each filter of a SUBSCRIBE through the session's
// subscribe (validation, grants, resolution, the hub), then writes one
// SUBACK with a code per filter, in order [MQTT-3.8.4-4], [MQTT-3.8.4-5]:
// the granted QoS, min(requested, maxGrantedQoS), or 0x80 for a refusal.
// A refusal on the reader is known at once; a subscription the worker
// refuses (the connection holds the maximum) only on the worker, so the
// SUBACK is built there, in a Hub.Run queued behind the filters'
// subscribes on the same worker (an expected reply, so the reader's later
// replies wait for it), from the subscriptions the connection then holds.
// Retained messages may come before the SUBACK, which MQTT allows
// (§3.8.4).
func (l *Listener) subscribe(st *conn, p *packet.Packet) {
	codes := make([]byte, len(p.Filters))
	patterns := make([]string, len(p.Filters))
	cmd := getCommand()
	defer putCommand(cmd)
	for i, f := range p.Filters {
		if f.QoS > 0 && st.window.Load() == nil {
			// The in-flight window of outbound QoS 1 and 2, made before the
			// first such subscription reaches the hub (whose worker then
			// reads it, conn.Deliver): a QoS 0 client never pays for it. A
			// persistent session's keeps what it sends until acknowledged.
			w := newInflight(l.hub, l.cfg.MaxInflight, l.cfg.MaxQueuedBytes, l.hub.Config().WriteTimeout)
			if st.persistent() != nil {
				w.sent = make([]sentMsg, len(w.ids))
			}
			w.ws = st.ws
			st.window.CompareAndSwap(nil, w) // a session taken over may have given it one meanwhile
		}
		cmd.Reset()
		cmd.Type, cmd.Topic, cmd.HasTopic, cmd.QoS = "subscribe", f.Topic, true, int(min(f.QoS, maxGrantedQoS))
		l.command(st, p, i == len(p.Filters)-1, cmd)
		if st.Closing() {
			return
		}
		if st.is(flagGranted) && !st.is(flagRefused) {
			codes[i], patterns[i] = min(f.QoS, maxGrantedQoS), f.Topic
		} else {
			codes[i] = packet.SubackFailure
		}
	}
	id := p.PacketID
	c := st.Conn
	t := c.ExpectReply()
	l.hub.Run(c, func(c *hub.Conn) {
		held := map[string]bool{}
		for _, s := range c.Subscriptions() {
			held[s.Pattern] = true
		}
		for i, pat := range patterns {
			if pat != "" && !held[pat] {
				codes[i] = packet.SubackFailure
			}
		}
		frame, err := packet.AppendSuback(nil, id, codes)
		if err != nil {
			frame = nil
		}
		c.Answer(t, st.framed(frame))
		l.noteSpecs(st, c)
	})
}

// unsubscribe runs each filter of an UNSUBSCRIBE through the session's
// unsubscribe, which really removes the subscription, wildcard or not
// (OQ-27); the worker writes the UNSUBACK after the last one (Frame).
func (l *Listener) unsubscribe(st *conn, p *packet.Packet) {
	cmd := getCommand()
	defer putCommand(cmd)
	for i, f := range p.Filters {
		cmd.Reset()
		cmd.Type, cmd.Topic, cmd.HasTopic = "unsubscribe", f.Topic, true
		l.command(st, p, i == len(p.Filters)-1, cmd)
		if st.Closing() {
			return
		}
	}
	if st.persistent() != nil && l.store != nil {
		l.hub.Run(st.Conn, func(c *hub.Conn) { l.noteSpecs(st, c) })
	}
}
