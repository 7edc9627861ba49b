package listener

import (
	"encoding/binary"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// EncodingID is the hub.Encoding ID of MQTT connections (the WebSocket
// encoding is 0).
const EncodingID = 1

// Encoding is the hub.Encoding of MQTT 3.1.1 connections: a delivery is a
// QoS 0 PUBLISH, and nothing is written to end a session (MQTT 3.1.1 has no
// server DISCONNECT: the listener just closes) or to answer a handshake
// (there is none: a connection without CONNECT meets the auth deadline).
type Encoding struct{}

// ID implements hub.Encoding: EncodingID.
func (Encoding) ID() uint8 { return EncodingID }

// Message implements hub.Encoding: a QoS 0 PUBLISH of m's data (Payload)
// on its concrete topic: m.SourceTopic for a wildcard subscription (a
// topic name has no wildcards, [MQTT-3.3.2-2]), else the subscriber's
// pattern, which is the topic it subscribed to. nil, so nothing is
// written, for a topic MQTT cannot carry.
func (Encoding) Message(m *wire.Message) []byte {
	topic := publishTopic(m)
	payload := Payload(m.Data)
	h := packet.PublishHeader{Topic: topic}
	frame, err := packet.AppendPublishHeader(make([]byte, 0, 5+2+len(topic)+len(payload)), h, len(payload))
	if err != nil {
		return nil
	}
	return append(frame, payload...)
}

// publishTopic is the topic name of m's PUBLISH: m.SourceTopic for a
// wildcard subscription (a topic name has no wildcards, [MQTT-3.3.2-2]),
// else the subscriber's pattern, which is the topic it subscribed to.
func publishTopic(m *wire.Message) string {
	if m.SourceTopic != "" {
		return m.SourceTopic
	}
	return m.Topic
}

// MessageQoS1 implements hub.QoS1Encoding: the parts of a QoS 1 PUBLISH
// of m before and after its Packet Identifier, which the connection's
// in-flight window assigns per delivery (conn.Acquire). nil, nil for a
// topic MQTT cannot carry.
func (Encoding) MessageQoS1(m *wire.Message) (head, tail []byte) {
	topic := publishTopic(m)
	tail = Payload(m.Data)
	head, err := packet.AppendPublishHeader(make([]byte, 0, 5+2+len(topic)), packet.PublishHeader{Topic: topic, QoS: 1}, len(tail))
	if err != nil {
		return nil, nil
	}
	if tail == nil {
		tail = []byte{}
	}
	return head, tail
}

// Retained implements hub.RetainedEncoding: a copy of the PUBLISH (or
// QoS 1 head) frame with its RETAIN flag set, for a retained message sent
// to a new subscription [MQTT-3.3.1-8].
func (Encoding) Retained(frame []byte) []byte {
	out := append([]byte(nil), frame...)
	out[0] |= 0x01
	return out
}

// Close implements hub.Encoding: nil.
func (Encoding) Close(disconnect.Disconnect) []byte { return nil }

// HandshakeTimeout implements hub.Encoding: nil.
func (Encoding) HandshakeTimeout() []byte { return nil }

// Payload is the MQTT application message for a publish's `data`, the raw
// MessagePack of one value (OQ-27, WebSocket → MQTT: "the raw msgpack
// bytes of data"):
//
//   - a bin is its bytes, so what an MQTT client published (Data) comes
//     back to MQTT subscribers byte for byte;
//   - a str is its UTF-8 bytes (a text published by an SDK prints as
//     itself in mosquitto_sub);
//   - nil is an empty payload (the inverse of Data for an empty retained
//     PUBLISH, which clears the retained message);
//   - any other value (a map, an array, a number, a bool, an extension) is
//     its MessagePack encoding, verbatim.
//
// The result aliases data.
func Payload(data []byte) []byte {
	if len(data) == 0 {
		return nil
	}
	var hdr, n int
	switch b := data[0]; {
	case b == 0xc0:
		if len(data) == 1 {
			return nil
		}
		return data
	case b >= 0xa0 && b <= 0xbf: // fixstr
		hdr, n = 1, int(b&0x1f)
	case b == 0xc4 || b == 0xd9: // bin 8, str 8
		if len(data) < 2 {
			return data
		}
		hdr, n = 2, int(data[1])
	case b == 0xc5 || b == 0xda: // bin 16, str 16
		if len(data) < 3 {
			return data
		}
		hdr, n = 3, int(binary.BigEndian.Uint16(data[1:]))
	case b == 0xc6 || b == 0xdb: // bin 32, str 32
		if len(data) < 5 {
			return data
		}
		hdr, n = 5, int(binary.BigEndian.Uint32(data[1:]))
	default:
		return data
	}
	if hdr+n != len(data) {
		return data // not one bin or str: send what it is
	}
	return data[hdr:]
}

// Data is the `data` of an MQTT client's PUBLISH payload (OQ-27, MQTT →
// WebSocket): a MessagePack bin of the raw bytes, or nil for the empty
// payload of a retained PUBLISH, which clears the topic's retained message
// ([MQTT-3.3.1-10]; a nil `data` with retain does that in the session,
// OQ-15). It is a new slice.
func Data(payload []byte, retain bool) []byte {
	if len(payload) == 0 && retain {
		return []byte{0xc0}
	}
	n := len(payload)
	var out []byte
	switch {
	case n < 1<<8:
		out = append(make([]byte, 0, 2+n), 0xc4, byte(n))
	case n < 1<<16:
		out = append(make([]byte, 0, 3+n), 0xc5, byte(n>>8), byte(n))
	default:
		out = binary.BigEndian.AppendUint32(append(make([]byte, 0, 5+n), 0xc6), uint32(n))
	}
	return append(out, payload...)
}
