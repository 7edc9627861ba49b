package server

import (
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// remote receives what other nodes publish, from the Broker.
type remote struct{ s *Server }

// HandleMessage fans a message from another node out to this node's
// broadcast subscribers (its groups get their copy through
// HandleGroupMessage).
func (r remote) HandleMessage(m *broker.Message) {
	if p := r.publication(m); p != nil {
		p.NoGroups = true
		r.s.hub.Publish(p)
	}
}

// HandleGroupMessage hands a message to one local member of a group: the
// bus picked this node for it, once cluster-wide.
func (r remote) HandleGroupMessage(m *broker.Message, name, key string) {
	if p := r.publication(m); p != nil {
		r.s.hub.PublishGroup(p, name, key)
	}
}

// HandleRetained updates the retained stores with another node's retained
// publish, delivering nothing.
func (r remote) HandleRetained(m *broker.Message) {
	if p := r.publication(m); p != nil {
		p.StoreOnly = true
		r.s.hub.Publish(p)
	}
}

// publication builds the hub publication of a message from the bus, or
// returns nil when it must be dropped: the workers are behind (hub.Busy;
// the backend's goroutine must not wait), which is counted.
func (r remote) publication(m *broker.Message) *hub.Publication {
	s := r.s
	if s.hub.Busy() {
		s.remoteDropped.Add(1)
		if ce := s.log.Check(zap.DebugLevel, "message from another node dropped: workers behind"); ce != nil {
			ce.Write(zap.String("topic", m.Topic))
		}
		return nil
	}
	p := &hub.Publication{Key: m.Key, Topic: m.Topic, Filter: m.Filter, Echo: true,
		Retain: m.Retain, ClearRetained: m.ClearRetained}
	p.Msg = wire.Message{Topic: m.Topic, Data: m.Data, MsgID: m.MsgID, Filter: m.Filter,
		From: m.From, FromType: m.FromType, Timestamp: m.Timestamp.UnixMilli()}
	encodeFrame(p)
	return p
}

// distributed reports whether the node is one of a cluster: its broker is
// not the single-node local.Broker, so groups are served through the bus.
func (s *Server) distributed() bool {
	_, single := s.cfg.Broker.(local.Broker)
	return !single
}

// toBroker hands an accepted local publish to the other nodes. A single
// node skips building the message at all. A failure is logged and
// returned.
func (s *Server) toBroker(p *hub.Publication, ts int64) error {
	if !s.distributed() {
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

// encodeFrame builds p.Frame, the `message` frame for display topic p.Topic,
// from p.Msg: once per publication, shared by every subscription with that
// display topic.
func encodeFrame(p *hub.Publication) {
	p.Frame = wsframe.Message(&p.Msg)
}
