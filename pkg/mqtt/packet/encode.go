package packet

import (
	"strings"
	"unicode/utf8"
)

// The Append functions append one server-to-client packet to dst and return
// the extended slice, as append does. They allocate only when dst lacks
// capacity, so a caller that keeps a buffer (or pools one) encodes without
// allocating. Remaining Lengths take the fewest bytes (§2.2.3).

// AppendConnack appends a CONNACK (§3.2): 0x20 0x02, the acknowledge flags
// and code. Session present is written only with code Accepted: a refusal
// carries 0 [MQTT-3.2.2-4]. Our sessions are all clean, so the listener
// passes false [MQTT-3.2.2-1].
func AppendConnack(dst []byte, sessionPresent bool, code ReturnCode) []byte {
	var flags byte
	if sessionPresent && code == Accepted {
		flags = 0x01
	}
	return append(dst, byte(TypeConnack)<<4, 2, flags, byte(code))
}

// AppendPuback appends a PUBACK for packetID, the answer to a QoS 1 PUBLISH
// (§3.4): 0x40 0x02 and the identifier, big-endian.
func AppendPuback(dst []byte, packetID uint16) []byte {
	return appendAck(dst, byte(TypePuback)<<4, packetID)
}

// AppendPubrec appends a PUBREC for packetID, the first answer to a QoS 2
// PUBLISH (§3.5): 0x50 0x02 and the identifier.
func AppendPubrec(dst []byte, packetID uint16) []byte {
	return appendAck(dst, byte(TypePubrec)<<4, packetID)
}

// AppendPubrel appends a PUBREL for packetID, the server's answer to a
// PUBREC of its own QoS 2 PUBLISH (fixed header flags 0010,
// [MQTT-3.6.1-1]).
func AppendPubrel(dst []byte, packetID uint16) []byte {
	return appendAck(dst, byte(TypePubrel)<<4|0x02, packetID)
}

// AppendPubcomp appends a PUBCOMP for packetID, the answer to a PUBREL
// (§3.7): 0x70 0x02 and the identifier.
func AppendPubcomp(dst []byte, packetID uint16) []byte {
	return appendAck(dst, byte(TypePubcomp)<<4, packetID)
}

// AppendUnsuback appends an UNSUBACK for packetID (§3.11): 0xB0 0x02 and
// the identifier.
func AppendUnsuback(dst []byte, packetID uint16) []byte {
	return appendAck(dst, byte(TypeUnsuback)<<4, packetID)
}

// AppendPingresp appends a PINGRESP (§3.13): 0xD0 0x00.
func AppendPingresp(dst []byte) []byte {
	return append(dst, byte(TypePingresp)<<4, 0)
}

// AppendSuback appends a SUBACK for packetID with one return code per
// filter of the SUBSCRIBE, in its order [MQTT-3.8.4-5], [MQTT-3.9.3-1]:
// 0x90, the Remaining Length, the identifier, the codes. It refuses, with
// ErrSubackCode and dst unchanged, an empty codes or a code other than
// SubackQoS0, SubackQoS1, SubackQoS2 and SubackFailure [MQTT-3.9.3-2];
// with ErrEncodeTooLarge more codes than a packet holds.
func AppendSuback(dst []byte, packetID uint16, codes []byte) ([]byte, error) {
	if len(codes) == 0 {
		return dst, ErrSubackCode
	}
	for _, c := range codes {
		if c > SubackQoS2 && c != SubackFailure {
			return dst, ErrSubackCode
		}
	}
	rem := 2 + len(codes)
	if rem > MaxRemainingLength {
		return dst, ErrEncodeTooLarge
	}
	dst = append(dst, byte(TypeSuback)<<4)
	dst = appendRemaining(dst, rem)
	dst = append(dst, byte(packetID>>8), byte(packetID))
	return append(dst, codes...), nil
}

// PublishHeader is what a PUBLISH carries besides its Packet Identifier and
// payload (§3.3.1, §3.3.2).
type PublishHeader struct {
	// Topic is the topic name: UTF-8 without U+0000, non-empty, without
	// '+' or '#' [MQTT-3.3.2-2], and matching the subscriber's filter
	// [MQTT-3.3.2-3]. At most MaxStringLength bytes.
	Topic string
	// QoS is 0, 1 or 2.
	QoS byte
	// Dup is the DUP flag, only with QoS 1 or 2 [MQTT-3.3.1-2]; false on a
	// first delivery [MQTT-3.3.1-1].
	Dup bool
	// Retain is the RETAIN flag: true when the message is sent because of
	// a new subscription and was retained, false for a normal delivery to a
	// matching subscription [MQTT-3.3.1-8], [MQTT-3.3.1-9].
	Retain bool
}

// AppendPublish appends a whole PUBLISH (§3.3): AppendPublishHeader, then
// for QoS 1 or 2 packetID big-endian, then payload. packetID is ignored for
// QoS 0 and must not be 0 otherwise (ErrPacketIDZero). On error dst is
// returned unchanged.
func AppendPublish(dst []byte, h PublishHeader, packetID uint16, payload []byte) ([]byte, error) {
	if h.QoS > 0 && h.QoS < 3 && packetID == 0 {
		return dst, ErrPacketIDZero
	}
	dst, err := AppendPublishHeader(dst, h, len(payload))
	if err != nil {
		return dst, err
	}
	if h.QoS > 0 {
		dst = append(dst, byte(packetID>>8), byte(packetID))
	}
	return append(dst, payload...), nil
}

// AppendPublishHeader appends the part of a PUBLISH that is the same for
// every subscriber of one message at one topic and QoS: the first byte, the
// Remaining Length (which counts the two bytes of the Packet Identifier
// when h.QoS > 0, and payloadLen bytes of payload) and the topic. Build it
// once per message and topic; then a QoS 0 delivery is header + payload and
// a QoS 1 delivery is header + its own two-byte Packet Identifier
// (big-endian, e.g. binary.BigEndian.AppendUint16) + payload, which a
// writev can send without copying the payload.
//
// It refuses, with dst unchanged: ErrQoS3 for a QoS above 2, ErrDupQoS0,
// ErrInvalidUTF8, ErrNullChar, ErrEmptyTopic and ErrWildcardTopic for a
// topic that is not a valid topic name, and ErrEncodeTooLarge for a topic
// over MaxStringLength bytes, a negative payloadLen or a Remaining Length
// over MaxRemainingLength.
func AppendPublishHeader(dst []byte, h PublishHeader, payloadLen int) ([]byte, error) {
	switch {
	case h.QoS > 2:
		return dst, ErrQoS3
	case h.Dup && h.QoS == 0:
		return dst, ErrDupQoS0
	case !utf8.ValidString(h.Topic):
		return dst, ErrInvalidUTF8
	case strings.IndexByte(h.Topic, 0) >= 0:
		return dst, ErrNullChar
	}
	if err := checkTopicName(h.Topic); err != nil {
		return dst, err
	}
	rem := 2 + len(h.Topic)
	if h.QoS > 0 {
		rem += 2
	}
	if len(h.Topic) > MaxStringLength || payloadLen < 0 || payloadLen > MaxRemainingLength-rem {
		return dst, ErrEncodeTooLarge
	}
	rem += payloadLen
	first := byte(TypePublish)<<4 | h.QoS<<1
	if h.Dup {
		first |= 0x08
	}
	if h.Retain {
		first |= 0x01
	}
	dst = append(dst, first)
	dst = appendRemaining(dst, rem)
	dst = append(dst, byte(len(h.Topic)>>8), byte(len(h.Topic)))
	return append(dst, h.Topic...), nil
}

// appendAck appends a two-byte-body packet: first, 0x02, the identifier.
func appendAck(dst []byte, first byte, packetID uint16) []byte {
	return append(dst, first, 2, byte(packetID>>8), byte(packetID))
}

// appendRemaining appends n, 0 <= n <= MaxRemainingLength, as a Remaining
// Length in the fewest bytes (§2.2.3).
func appendRemaining(dst []byte, n int) []byte {
	for {
		b := byte(n & 0x7f)
		n >>= 7
		if n == 0 {
			return append(dst, b)
		}
		dst = append(dst, b|0x80)
	}
}
