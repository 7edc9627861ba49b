package packet

// Error is a packet the server must refuse. Every Error ends the connection
// [MQTT-4.8.0-1]; ReturnCode says whether a CONNACK goes first:
//
//   - ReturnCode 0 (Accepted, the zero value): close the network connection
//     without sending anything [MQTT-3.1.4-1], [MQTT-4.8.0-1].
//   - ReturnCode 1 (RefusedProtocolVersion) or 2
//     (RefusedIdentifierRejected): answer CONNACK with that code and
//     session present 0, then close [MQTT-3.1.2-2], [MQTT-3.1.3-8],
//     [MQTT-3.2.2-4], [MQTT-3.2.2-5]. Only a CONNECT yields these.
//
// Parse returns the package's sentinel values, unwrapped: compare with ==
// or errors.Is, or use errors.As to read ReturnCode. The Append functions
// return the same sentinels for a PUBLISH they refuse to build.
type Error struct {
	// Rule names the normative statement broken, e.g. "MQTT-3.3.2-2", or
	// the section when the statement has no number, e.g. "2.2.3".
	Rule string
	// Reason is a short lowercase phrase, e.g. "wildcard in topic name".
	Reason string
	// ReturnCode is the CONNACK code to send before closing, or Accepted
	// (0) to close without a CONNACK.
	ReturnCode ReturnCode
}

// Error returns "packet: " + Reason + " [" + Rule + "]".
func (e *Error) Error() string { return "packet: " + e.Reason + " [" + e.Rule + "]" }

// Fixed header and framing errors (MQTT 3.1.1 §2). Each closes the
// connection without a CONNACK.
var (
	// ErrReservedType is a packet of type 0 or 15, both reserved (§2.2.1,
	// Table 2.1).
	ErrReservedType = &Error{Rule: "2.2.1", Reason: "reserved packet type"}
	// ErrServerPacket is a CONNACK, SUBACK, UNSUBACK or PINGRESP: packets
	// only a server sends (§2.2.1, Table 2.1; [MQTT-4.8.0-1]).
	ErrServerPacket = &Error{Rule: "2.2.1", Reason: "packet type sent only by servers"}
	// ErrReservedFlags is a fixed header whose flag nibble is not the one
	// Table 2.2 prescribes: 0b0010 for PUBREL, SUBSCRIBE and UNSUBSCRIBE, 0
	// for every other type but PUBLISH [MQTT-2.2.2-1], [MQTT-2.2.2-2],
	// [MQTT-3.6.1-1], [MQTT-3.8.1-1], [MQTT-3.10.1-1].
	ErrReservedFlags = &Error{Rule: "MQTT-2.2.2-2", Reason: "invalid fixed header flags"}
	// ErrRemainingLength is a Remaining Length whose fourth byte has its
	// continuation bit set: the field may have at most four bytes (§2.2.3).
	ErrRemainingLength = &Error{Rule: "2.2.3", Reason: "remaining length longer than four bytes"}
	// ErrAckLength is a PUBACK, PUBREC, PUBREL or PUBCOMP whose Remaining
	// Length is not 2: they carry exactly a Packet Identifier (§3.4.1,
	// §3.5.1, §3.6.1, §3.7.1).
	ErrAckLength = &Error{Rule: "3.4.1", Reason: "acknowledgement remaining length is not 2"}
	// ErrNonZeroLength is a PINGREQ or DISCONNECT whose Remaining Length is
	// not 0: they have no variable header and no payload (§3.12, §3.14).
	ErrNonZeroLength = &Error{Rule: "3.12", Reason: "remaining length not 0"}
	// ErrTooLarge is a packet longer than the maxSize given to Parse or Len.
	// It is the server's own limit (MQTT 3.1.1 has no code for it), so the
	// connection is closed.
	ErrTooLarge = &Error{Rule: "4.8", Reason: "packet larger than the server's maximum"}
	// ErrTruncated is a field that runs past the end of the packet as its
	// Remaining Length delimits it (§1.5.2, §1.5.3, §2.2.3).
	ErrTruncated = &Error{Rule: "2.2.3", Reason: "field runs past the end of the packet"}
	// ErrTrailingBytes is a packet with bytes after its last field, e.g. a
	// CONNECT with data beyond what its flags announce [MQTT-3.1.2-18],
	// [MQTT-3.1.2-20], [MQTT-4.8.0-1].
	ErrTrailingBytes = &Error{Rule: "MQTT-4.8.0-1", Reason: "bytes after the last field"}
	// ErrPacketIDZero is a Packet Identifier of 0 where one is required
	// [MQTT-2.3.1-1].
	ErrPacketIDZero = &Error{Rule: "MQTT-2.3.1-1", Reason: "packet identifier 0"}
)

// String and topic errors (MQTT 3.1.1 §1.5.3, §4.7). Each closes the
// connection without a CONNACK.
var (
	// ErrInvalidUTF8 is a UTF-8 string field that is ill-formed, including
	// encoded surrogates U+D800..U+DFFF [MQTT-1.5.3-1].
	ErrInvalidUTF8 = &Error{Rule: "MQTT-1.5.3-1", Reason: "ill-formed utf-8 string"}
	// ErrNullChar is a UTF-8 string field containing U+0000 [MQTT-1.5.3-2].
	ErrNullChar = &Error{Rule: "MQTT-1.5.3-2", Reason: "u+0000 in utf-8 string"}
	// ErrEmptyTopic is a topic name or topic filter of length 0
	// [MQTT-4.7.3-1]; for a PUBLISH see also §3.3.2.1.
	ErrEmptyTopic = &Error{Rule: "MQTT-4.7.3-1", Reason: "empty topic"}
	// ErrWildcardTopic is a '+' or '#' in a topic name: the topic of a
	// PUBLISH or of a will [MQTT-3.3.2-2], [MQTT-4.7.1-1].
	ErrWildcardTopic = &Error{Rule: "MQTT-3.3.2-2", Reason: "wildcard in topic name"}
	// ErrMultiLevelWildcard is a topic filter with a '#' that is not a whole
	// level or not the last level [MQTT-4.7.1-2].
	ErrMultiLevelWildcard = &Error{Rule: "MQTT-4.7.1-2", Reason: "misplaced multi-level wildcard"}
	// ErrSingleLevelWildcard is a topic filter with a '+' that is not a
	// whole level [MQTT-4.7.1-3].
	ErrSingleLevelWildcard = &Error{Rule: "MQTT-4.7.1-3", Reason: "misplaced single-level wildcard"}
)

// PUBLISH, SUBSCRIBE and UNSUBSCRIBE errors. Each closes the connection
// without a CONNACK.
var (
	// ErrQoS3 is a PUBLISH with both QoS bits set [MQTT-3.3.1-4].
	ErrQoS3 = &Error{Rule: "MQTT-3.3.1-4", Reason: "qos 3"}
	// ErrDupQoS0 is a PUBLISH with QoS 0 and the DUP flag set
	// [MQTT-3.3.1-2].
	ErrDupQoS0 = &Error{Rule: "MQTT-3.3.1-2", Reason: "dup flag with qos 0"}
	// ErrEmptySubscribe is a SUBSCRIBE without any topic filter
	// [MQTT-3.8.3-3].
	ErrEmptySubscribe = &Error{Rule: "MQTT-3.8.3-3", Reason: "subscribe without topic filters"}
	// ErrSubscribeQoS is a SUBSCRIBE requested-QoS byte with a reserved bit
	// set or the value 3 [MQTT-3.8.3-4].
	ErrSubscribeQoS = &Error{Rule: "MQTT-3.8.3-4", Reason: "invalid requested qos"}
	// ErrEmptyUnsubscribe is an UNSUBSCRIBE without any topic filter
	// [MQTT-3.10.3-2].
	ErrEmptyUnsubscribe = &Error{Rule: "MQTT-3.10.3-2", Reason: "unsubscribe without topic filters"}
)

// CONNECT errors (MQTT 3.1.1 §3.1). ErrProtocolName, ErrProtocolLevel and
// ErrIdentifierRejected carry a ReturnCode: answer CONNACK with it, then
// close. The others close without a CONNACK [MQTT-3.1.4-1].
var (
	// ErrProtocolName is a CONNECT whose protocol name is not "MQTT", e.g.
	// "MQIsdp" from an MQTT 3.1 client. The spec lets the server close or
	// go on under another specification [MQTT-3.1.2-1]; kraken answers
	// CONNACK 1, so that the client learns why.
	ErrProtocolName = &Error{Rule: "MQTT-3.1.2-1", Reason: "protocol name is not MQTT", ReturnCode: RefusedProtocolVersion}
	// ErrProtocolLevel is a CONNECT with protocol name "MQTT" and a level
	// other than 4, e.g. 5 from an MQTT 5 client: answer CONNACK 1
	// [MQTT-3.1.2-2].
	ErrProtocolLevel = &Error{Rule: "MQTT-3.1.2-2", Reason: "protocol level is not 4", ReturnCode: RefusedProtocolVersion}
	// ErrConnectReserved is a CONNECT whose reserved connect flag (bit 0)
	// is set [MQTT-3.1.2-3].
	ErrConnectReserved = &Error{Rule: "MQTT-3.1.2-3", Reason: "reserved connect flag set"}
	// ErrWillQoS is a CONNECT with Will QoS non-zero while the Will Flag is
	// 0 [MQTT-3.1.2-13], or Will QoS 3 while it is 1 [MQTT-3.1.2-14].
	ErrWillQoS = &Error{Rule: "MQTT-3.1.2-13", Reason: "invalid will qos"}
	// ErrWillRetain is a CONNECT with Will Retain set while the Will Flag
	// is 0 [MQTT-3.1.2-15].
	ErrWillRetain = &Error{Rule: "MQTT-3.1.2-15", Reason: "will retain without will flag"}
	// ErrPasswordWithoutUsername is a CONNECT with the Password Flag set
	// and the User Name Flag clear [MQTT-3.1.2-22]. MQTT 5 allows this;
	// 3.1.1 does not, and mosquitto refuses it too. The listener takes the
	// token from the password and accepts any user name beside it, which
	// is what mosquitto_pub -u x -P token sends.
	ErrPasswordWithoutUsername = &Error{Rule: "MQTT-3.1.2-22", Reason: "password flag without user name flag"}
	// ErrIdentifierRejected is an otherwise well-formed CONNECT with an
	// empty client identifier and Clean Session 0: answer CONNACK 2
	// [MQTT-3.1.3-7], [MQTT-3.1.3-8].
	ErrIdentifierRejected = &Error{Rule: "MQTT-3.1.3-8", Reason: "empty client identifier without clean session", ReturnCode: RefusedIdentifierRejected}
)

// Session-order errors. Parse never returns them: it sees one packet at a
// time. They are here so the listener reports its state checks from the
// same catalogue. Each closes the connection without a CONNACK.
var (
	// ErrNotConnect is a first packet that is not a CONNECT [MQTT-3.1.0-1].
	ErrNotConnect = &Error{Rule: "MQTT-3.1.0-1", Reason: "first packet is not connect"}
	// ErrSecondConnect is a CONNECT on a connection that already sent one
	// [MQTT-3.1.0-2].
	ErrSecondConnect = &Error{Rule: "MQTT-3.1.0-2", Reason: "second connect"}
)

// Errors of the Append functions for a packet they cannot build. Besides
// these, AppendPublish and AppendPublishHeader return ErrQoS3, ErrDupQoS0,
// ErrPacketIDZero and the topic name errors above.
var (
	// ErrEncodeTooLarge is a field longer than MaxStringLength or a packet
	// whose Remaining Length would exceed MaxRemainingLength (§1.5.3,
	// §2.2.3).
	ErrEncodeTooLarge = &Error{Rule: "2.2.3", Reason: "packet or field too large to encode"}
	// ErrSubackCode is a SUBACK without return codes or with a code other
	// than 0x00, 0x01, 0x02 and 0x80 [MQTT-3.9.3-2].
	ErrSubackCode = &Error{Rule: "MQTT-3.9.3-2", Reason: "invalid suback return codes"}
)
