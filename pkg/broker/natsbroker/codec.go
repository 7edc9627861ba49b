package natsbroker

import (
	"errors"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// A message travels as one MessagePack array (codec version 1):
// [1, node, seq, key, topic, filter, data(raw), msgId, from, fromType,
// timestamp(unix ms), flags]. flags bit 0 is Retain, bit 1 ClearRetained,
// bit 2 AtMostOnce and bit 3 ExactlyOnce (the publish's QoS 0 or 2; a node
// that predates them neither sets nor reads them, so its messages are
// delivered at most at QoS 1 and it reads the new ones as before).
// seq numbers the publishes of one run of a node: its high 32 bits are
// random per start (Broker.New), its low 32 bits count, so a node
// subscribed to a key twice (an exact and a wildcard interest) hands it
// over once, and a node restarted under the same NODE_ID is not taken for
// its earlier run.

const codecVersion = 1

var errCodec = errors.New("natsbroker: malformed message")

func encode(m *broker.Message, seq uint64) []byte {
	b := make([]byte, 0, 64+len(m.Key)+len(m.Topic)+len(m.Data)+len(m.MsgID))
	b = msgp.AppendArrayHeader(b, 12)
	b = msgp.AppendInt(b, codecVersion)
	b = msgp.AppendString(b, m.Node)
	b = msgp.AppendUint64(b, seq)
	b = msgp.AppendString(b, m.Key)
	b = msgp.AppendString(b, m.Topic)
	b = msgp.AppendString(b, m.Filter)
	b = append(b, m.Data...)
	b = msgp.AppendString(b, m.MsgID)
	b = msgp.AppendString(b, m.From)
	b = msgp.AppendString(b, m.FromType)
	b = msgp.AppendInt64(b, m.Timestamp.UnixMilli())
	var flags uint8
	if m.Retain {
		flags |= 1
	}
	if m.ClearRetained {
		flags |= 2
	}
	if m.AtMostOnce {
		flags |= 4
	}
	if m.ExactlyOnce {
		flags |= 8
	}
	return msgp.AppendUint8(b, flags)
}

func decode(b []byte) (m *broker.Message, seq uint64, err error) {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil || n != 12 {
		return nil, 0, errCodec
	}
	var v int
	if v, b, err = msgp.ReadIntBytes(b); err != nil || v != codecVersion {
		return nil, 0, errCodec
	}
	m = &broker.Message{}
	str := func(dst *string) {
		if err == nil {
			*dst, b, err = msgp.ReadStringBytes(b)
		}
	}
	str(&m.Node)
	if err == nil {
		seq, b, err = msgp.ReadUint64Bytes(b)
	}
	str(&m.Key)
	str(&m.Topic)
	str(&m.Filter)
	if err == nil {
		var rest []byte
		if rest, err = msgp.Skip(b); err == nil {
			m.Data = append([]byte(nil), b[:len(b)-len(rest)]...)
			b = rest
		}
	}
	str(&m.MsgID)
	str(&m.From)
	str(&m.FromType)
	var ms int64
	if err == nil {
		ms, b, err = msgp.ReadInt64Bytes(b)
	}
	var flags uint8
	if err == nil {
		flags, _, err = msgp.ReadUint8Bytes(b)
	}
	if err != nil {
		return nil, 0, errCodec
	}
	m.Timestamp = time.UnixMilli(ms)
	m.Retain, m.ClearRetained = flags&1 != 0, flags&2 != 0
	m.AtMostOnce, m.ExactlyOnce = flags&4 != 0, flags&8 != 0
	return m, seq, nil
}

// A presence travels as the value of its KV key p.<node>.<id> (keys.go),
// one MessagePack array (version 1): [1, roomId, roomSlug, actorTokenId,
// data(bin), joinedAt]. Node and ID come from the key.

func encodePresence(p *broker.Presence) []byte {
	b := make([]byte, 0, 32+len(p.RoomID)+len(p.RoomSlug)+len(p.ActorTokenID)+len(p.Data))
	b = msgp.AppendArrayHeader(b, 6)
	b = msgp.AppendInt(b, codecVersion)
	b = msgp.AppendString(b, p.RoomID)
	b = msgp.AppendString(b, p.RoomSlug)
	b = msgp.AppendString(b, p.ActorTokenID)
	b = msgp.AppendBytes(b, p.Data)
	return msgp.AppendInt64(b, p.JoinedAt)
}

func decodePresence(node, id string, b []byte) (*broker.Presence, error) {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil || n != 6 {
		return nil, errCodec
	}
	var v int
	if v, b, err = msgp.ReadIntBytes(b); err != nil || v != codecVersion {
		return nil, errCodec
	}
	p := &broker.Presence{Node: node, ID: id}
	for _, dst := range []*string{&p.RoomID, &p.RoomSlug, &p.ActorTokenID} {
		if *dst, b, err = msgp.ReadStringBytes(b); err != nil {
			return nil, errCodec
		}
	}
	if p.Data, b, err = msgp.ReadBytesBytes(b, nil); err != nil {
		return nil, errCodec
	}
	if p.JoinedAt, _, err = msgp.ReadInt64Bytes(b); err != nil {
		return nil, errCodec
	}
	return p, nil
}
