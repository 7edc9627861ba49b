package packet

// Type is the MQTT control packet type, the high nibble of the first byte of
// every packet (MQTT 3.1.1 §2.2.1, Table 2.1). The values are the wire
// values; 0 and 15 are reserved.
type Type byte

// The control packet types of MQTT 3.1.1 §2.2.1. The direction in the
// comment is the one the spec allows; Parse refuses the server-to-client
// ones with ErrServerPacket.
const (
	TypeConnect     Type = 1  // client to server
	TypeConnack     Type = 2  // server to client
	TypePublish     Type = 3  // both
	TypePuback      Type = 4  // both
	TypePubrec      Type = 5  // both
	TypePubrel      Type = 6  // both
	TypePubcomp     Type = 7  // both
	TypeSubscribe   Type = 8  // client to server
	TypeSuback      Type = 9  // server to client
	TypeUnsubscribe Type = 10 // client to server
	TypeUnsuback    Type = 11 // server to client
	TypePingreq     Type = 12 // client to server
	TypePingresp    Type = 13 // server to client
	TypeDisconnect  Type = 14 // client to server
)

var typeNames = [16]string{
	"RESERVED(0)", "CONNECT", "CONNACK", "PUBLISH", "PUBACK", "PUBREC", "PUBREL", "PUBCOMP",
	"SUBSCRIBE", "SUBACK", "UNSUBSCRIBE", "UNSUBACK", "PINGREQ", "PINGRESP", "DISCONNECT", "RESERVED(15)",
}

// String returns the spec's name of t, e.g. "PUBLISH"; reserved and
// out-of-range values read "RESERVED(n)".
func (t Type) String() string {
	if t < 16 {
		return typeNames[t]
	}
	return "RESERVED(" + itoa(int(t)) + ")"
}

// ReturnCode is the Connect Return code of a CONNACK (MQTT 3.1.1 §3.2.2.3,
// Table 3.1). Values 6 to 255 are reserved.
type ReturnCode byte

// The Connect Return codes of MQTT 3.1.1 Table 3.1.
const (
	// Accepted: connection accepted.
	Accepted ReturnCode = 0
	// RefusedProtocolVersion: the server does not support the protocol
	// level requested (ErrProtocolName, ErrProtocolLevel).
	RefusedProtocolVersion ReturnCode = 1
	// RefusedIdentifierRejected: the client identifier is correct UTF-8 but
	// not allowed by the server (ErrIdentifierRejected).
	RefusedIdentifierRejected ReturnCode = 2
	// RefusedServerUnavailable: the network connection was made but the
	// MQTT service is unavailable (e.g. the auth service is down).
	RefusedServerUnavailable ReturnCode = 3
	// RefusedBadUsernameOrPassword: the data in the user name or password
	// is malformed (e.g. no token at all).
	RefusedBadUsernameOrPassword ReturnCode = 4
	// RefusedNotAuthorized: the client is not authorized to connect.
	RefusedNotAuthorized ReturnCode = 5
)

var returnCodeNames = [6]string{
	"accepted", "unacceptable protocol version", "identifier rejected",
	"server unavailable", "bad user name or password", "not authorized",
}

// String returns the meaning of c from Table 3.1, e.g. "not authorized".
func (c ReturnCode) String() string {
	if int(c) < len(returnCodeNames) {
		return returnCodeNames[c]
	}
	return "reserved(" + itoa(int(c)) + ")"
}

// SUBACK return codes (MQTT 3.1.1 §3.9.3): the maximum QoS granted for a
// filter, or failure. These are the only values AppendSuback accepts
// [MQTT-3.9.3-2].
const (
	SubackQoS0    byte = 0x00
	SubackQoS1    byte = 0x01
	SubackQoS2    byte = 0x02
	SubackFailure byte = 0x80
)

// Size bounds (MQTT 3.1.1 §2.2.3, §1.5.3).
const (
	// MaxRemainingLength is the largest Remaining Length four bytes can
	// encode: 268,435,455 bytes (256 MiB - 1).
	MaxRemainingLength = 1<<28 - 1
	// MaxPacketSize is the largest possible packet: one type byte, four
	// length bytes and MaxRemainingLength bytes.
	MaxPacketSize = 1 + 4 + MaxRemainingLength
	// MaxStringLength is the largest UTF-8 string or binary field, its
	// length being a two-byte prefix: 65,535 bytes.
	MaxStringLength = 1<<16 - 1
)

// itoa formats small non-negative integers without strconv, for String.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}
