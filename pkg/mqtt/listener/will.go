package listener

import (
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/session"
)

// will is a CONNECT's Will Message (MQTT 3.1.1 §3.1.2.5), kept by an
// accepted connection until it ends.
type will struct {
	topic   string
	payload []byte
	qos     byte
	retain  bool
}

// newWill is c's will, nil when its Will Flag is clear.
func newWill(c *packet.Connect) *will {
	if !c.Will {
		return nil
	}
	return &will{topic: c.WillTopic, payload: c.WillMessage, qos: c.WillQoS, retain: c.WillRetain}
}

// Closed implements reactor.Closer: the connection ended. Its will, if it
// still has one (a DISCONNECT discards it [MQTT-3.14.4-3]), is published:
// the connection ended on a keep-alive expiry, a socket error, a protocol
// error, a takeover by a new connection with its client identifier, or
// the broker's shutdown [MQTT-3.1.2-8]. Its client identifier is
// released.
func (h handler) Closed(st *conn) {
	h.l.clients.release(st)
	if st.x != nil && st.x.will != nil {
		h.l.publishWill(st)
	}
}

// publishWill publishes st's will as the client would have published it:
// through the session's publish, with its grants, size limit, retained
// store and fan-out, from a fresh session.State (the connection's rate
// window does not hold it back), its replies discarded. A will the grants
// or limits refuse is logged by the session, as a refused PUBLISH is, and
// not counted as published.
func (l *Listener) publishWill(st *conn) {
	w := st.x.will
	st.x.will = nil
	cmd := getCommand()
	defer putCommand(cmd)
	cmd.Type, cmd.Topic, cmd.HasTopic = "publish", w.topic, true
	cmd.Data, cmd.HasData = Data(w.payload, w.retain), true
	cmd.Echo, cmd.Retain, cmd.QoS = true, w.retain, int(w.qos)
	cmd.MsgRef = "will" // answered either way: published, or refused (logged by the session)
	ws := session.State{Conn: st.Conn}
	var out willSink
	l.proto.Handle(&ws, &out, cmd)
	if !out.published {
		return
	}
	l.wills.Add(1)
	if ce := l.log.Check(zap.DebugLevel, "will published"); ce != nil {
		ce.Write(session.LogFields(st.Conn, zap.String("topic", w.topic), zap.Stringer("reason", st.Conn.CloseReason()))...)
	}
}

// willSink is the session.Sink of a will: there is no one to answer; it
// notes whether the will was published.
type willSink struct{ published bool }

func (*willSink) Frame(session.Reply) []byte { return nil }

func (s *willSink) Write(r session.Reply) {
	if r.Kind == session.KindPublished {
		s.published = true
	}
}

func (*willSink) Disconnect(disconnect.Disconnect) {}
