package packet

import (
	"fmt"
	"strings"
)

// Client-side encoders, for tests only: the server never sends these.

// cat concatenates byte slices.
func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// str is a UTF-8 string field (or binary field): two-byte length, bytes.
func str(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }

// u16 is a big-endian two-byte integer.
func u16(v uint16) []byte { return []byte{byte(v >> 8), byte(v)} }

// pkt is a packet with first byte first, the shortest Remaining Length and
// the given body.
func pkt(first byte, body ...[]byte) []byte {
	b := cat(body...)
	return cat([]byte{first}, appendRemaining(nil, len(b)), b)
}

// connect is a CONNECT, protocol "MQTT" level 4, with flags, keep alive 60
// and the payload fields given in order.
func connect(flags byte, payload ...[]byte) []byte {
	return pkt(0x10, str("MQTT"), []byte{4, flags}, u16(60), cat(payload...))
}

// publish is a PUBLISH with flags (low nibble), topic, packet id (written
// only when the QoS bits are non-zero) and payload.
func publish(flags byte, topic string, id uint16, payload string) []byte {
	var pid []byte
	if flags&0x06 != 0 {
		pid = u16(id)
	}
	return pkt(0x30|flags, str(topic), pid, []byte(payload))
}

// subscribe is a SUBSCRIBE of (filter, requested QoS byte) pairs.
func subscribe(id uint16, filters ...any) []byte {
	body := u16(id)
	for i := 0; i < len(filters); i += 2 {
		body = cat(body, str(filters[i].(string)), []byte{byte(filters[i+1].(int))})
	}
	return pkt(0x82, body)
}

// unsubscribe is an UNSUBSCRIBE of filters.
func unsubscribe(id uint16, filters ...string) []byte {
	body := u16(id)
	for _, f := range filters {
		body = cat(body, str(f))
	}
	return pkt(0xA2, body)
}

// encodeClient encodes p canonically, as a client would send it: the
// inverse of Parse for every packet Parse accepts, up to the Remaining
// Length, which it writes in the fewest bytes.
func encodeClient(p *Packet) []byte {
	switch p.Type {
	case TypeConnect:
		c := &p.Connect
		flags := c.WillQoS<<3 | bit(c.CleanSession)<<1 | bit(c.Will)<<2 |
			bit(c.WillRetain)<<5 | bit(c.HasPassword)<<6 | bit(c.HasUsername)<<7
		body := cat(str("MQTT"), []byte{4, flags}, u16(c.KeepAlive), str(c.ClientID))
		if c.Will {
			body = cat(body, str(c.WillTopic), str(string(c.WillMessage)))
		}
		if c.HasUsername {
			body = cat(body, str(c.Username))
		}
		if c.HasPassword {
			body = cat(body, str(c.Password))
		}
		return pkt(0x10, body)
	case TypePublish:
		return publish(p.QoS<<1|bit(p.Dup)<<3|bit(p.Retain), string(p.Topic), p.PacketID, string(p.Payload))
	case TypePuback, TypePubrec, TypePubcomp:
		return pkt(byte(p.Type)<<4, u16(p.PacketID))
	case TypePubrel:
		return pkt(byte(p.Type)<<4|0x02, u16(p.PacketID))
	case TypeSubscribe:
		var args []any
		for _, f := range p.Filters {
			args = append(args, f.Topic, int(f.QoS))
		}
		return subscribe(p.PacketID, args...)
	case TypeUnsubscribe:
		var fs []string
		for _, f := range p.Filters {
			fs = append(fs, f.Topic)
		}
		return unsubscribe(p.PacketID, fs...)
	case TypePingreq, TypeDisconnect:
		return pkt(byte(p.Type) << 4)
	}
	panic("encodeClient: type " + p.Type.String())
}

func bit(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// describe renders p for comparison: nil and empty slices read the same,
// and aliased bytes are captured at the time of the call.
func describe(p *Packet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v id=%d", p.Type, p.PacketID)
	switch p.Type {
	case TypePublish:
		fmt.Fprintf(&b, " qos=%d dup=%v retain=%v topic=%q payload=%q", p.QoS, p.Dup, p.Retain, p.Topic, p.Payload)
	case TypeConnect:
		fmt.Fprintf(&b, " %+v", p.Connect)
	case TypeSubscribe, TypeUnsubscribe:
		fmt.Fprintf(&b, " %+v", p.Filters)
	}
	return b.String()
}

// headerLen is the length of the fixed header of a well-formed packet.
func headerLen(b []byte) int {
	i := 1
	for b[i]&0x80 != 0 {
		i++
	}
	return i + 1
}
