package packet

// Packet is one decoded client-to-server packet. Parse fills it; which
// fields are set depends on Type, as each field's comment says, and the
// others are zero.
//
// Ownership: Topic and Payload alias the buffer given to Parse (zero copy,
// for the PUBLISH hot path) and are valid only while that buffer is; copy
// them to keep them. Every other field is a copy and may be kept, except
// that Parse reuses the backing array of Filters: copy the slice to keep it
// past the next Parse into the same Packet.
type Packet struct {
	// Type is the packet type; never a reserved or server-only one.
	Type Type
	// PacketID is the Packet Identifier, never 0 when present: for PUBLISH
	// with QoS 1 or 2, PUBACK, PUBREC, PUBREL, PUBCOMP, SUBSCRIBE and
	// UNSUBSCRIBE (§2.3.1). 0 for the other types and for QoS 0.
	PacketID uint16

	// QoS is the PUBLISH QoS, 0, 1 or 2 (§3.3.1.2).
	QoS byte
	// Dup is the PUBLISH DUP flag, only ever true with QoS 1 or 2
	// (§3.3.1.1).
	Dup bool
	// Retain is the PUBLISH RETAIN flag (§3.3.1.3).
	Retain bool
	// Topic is the PUBLISH topic name: well-formed UTF-8 without U+0000,
	// non-empty, without '+' or '#' (§3.3.2.1). It aliases the buffer.
	Topic []byte
	// Payload is the PUBLISH application message, possibly empty (§3.3.3).
	// It aliases the buffer; its capacity ends with the packet, so an
	// append to it never writes over the next packet.
	Payload []byte

	// Connect holds the fields of a CONNECT (§3.1).
	Connect Connect

	// Filters are the topic filters of a SUBSCRIBE, with their requested
	// QoS, or of an UNSUBSCRIBE, with QoS 0; at least one, in packet order,
	// each a valid filter (§3.8.3, §3.10.3, §4.7).
	Filters []Filter
}

// Connect is the content of a CONNECT packet (MQTT 3.1.1 §3.1). The
// protocol name and level are not kept: Parse accepts only "MQTT" level 4.
type Connect struct {
	// CleanSession is the Clean Session flag (§3.1.2.4).
	CleanSession bool
	// KeepAlive is the keep alive interval in seconds; 0 turns the
	// mechanism off (§3.1.2.10).
	KeepAlive uint16
	// ClientID is the client identifier: UTF-8 without U+0000, any length
	// up to 65,535 bytes; "" only with CleanSession (§3.1.3.1). The server
	// assigns an identifier when it is "" [MQTT-3.1.3-6].
	ClientID string

	// Will is the Will Flag; the four Will fields are zero without it
	// (§3.1.2.5).
	Will bool
	// WillQoS is 0, 1 or 2 (§3.1.2.6).
	WillQoS byte
	// WillRetain is the Will Retain flag (§3.1.2.7).
	WillRetain bool
	// WillTopic is a valid topic name, as Packet.Topic (§3.1.3.2).
	WillTopic string
	// WillMessage is binary data, possibly empty (§3.1.3.3). A copy.
	WillMessage []byte

	// HasUsername is the User Name Flag (§3.1.2.8).
	HasUsername bool
	// Username is UTF-8 without U+0000, possibly "" (§3.1.3.4).
	Username string
	// HasPassword is the Password Flag; only ever true with HasUsername
	// [MQTT-3.1.2-22].
	HasPassword bool
	// Password is binary data, possibly empty, not checked as UTF-8
	// (§3.1.3.5); a Go string for convenience, since it carries the token.
	Password string
}

// Filter is one topic filter of a SUBSCRIBE or UNSUBSCRIBE.
type Filter struct {
	// Topic is the filter: UTF-8 without U+0000, non-empty, '+' and '#'
	// only as whole levels and '#' only last (§4.7.1). A copy.
	Topic string
	// QoS is the requested QoS, 0, 1 or 2 (§3.8.3.1); 0 for UNSUBSCRIBE.
	QoS byte
}
