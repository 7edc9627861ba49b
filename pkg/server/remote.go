package server

import (
	"time"

	"github.com/gobwas/ws"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// remote receives the publishes of other nodes from the Broker.
type remote struct{ s *Server }

// HandleMessage fans a message from another node out to this node's
// subscribers, exactly as a local publish without an origin connection.
// While the workers are behind (hub.Busy) the message is dropped and
// counted: the broker's goroutine must not wait.
func (r remote) HandleMessage(m *broker.Message) {
	s := r.s
	if m.Node == s.cfg.NodeID {
		return
	}
	if s.hub.Busy() {
		s.remoteDropped.Add(1)
		if ce := s.log.Check(zap.DebugLevel, "message from another node dropped: workers behind"); ce != nil {
			ce.Write(zap.String("topic", m.Topic))
		}
		return
	}
	p := &hub.Publication{Key: m.Key, Topic: m.Topic, Filter: m.Filter, Echo: true,
		Retain: m.Retain, ClearRetained: m.ClearRetained}
	p.Msg = wire.Message{Topic: m.Topic, Data: m.Data, MsgID: m.MsgID, Filter: m.Filter,
		From: m.From, FromType: m.FromType, Timestamp: m.Timestamp.UnixMilli()}
	p.Frame = wsframe.Framed(ws.OpBinary, len(m.Data)+len(m.Topic)+160, func(b []byte) []byte {
		return wire.AppendMessage(b, &p.Msg)
	})
	s.hub.Publish(p)
}

// toBroker hands an accepted local publish to the other nodes. A single
// node skips building the message at all. A failure is logged and
// returned.
func (s *Server) toBroker(p *hub.Publication, ts int64) error {
	if _, single := s.cfg.Broker.(local.Broker); single {
		return nil
	}
	m := &broker.Message{Key: p.Key, Topic: p.Topic, Filter: p.Filter, Data: p.Msg.Data,
		MsgID: p.Msg.MsgID, From: p.Msg.From, FromType: p.Msg.FromType, Retain: p.Retain,
		ClearRetained: p.ClearRetained, Node: s.cfg.NodeID, Timestamp: time.UnixMilli(ts)}
	err := s.cfg.Broker.Publish(m)
	if err != nil {
		if ce := s.log.Check(zap.WarnLevel, "fan-out to other nodes failed"); ce != nil {
			ce.Write(zap.String("topic", p.Topic), zap.Error(err))
		}
	}
	return err
}
