package packet

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// refusal is one hostile or malformed input and the exact error Parse must
// return for it.
type refusal struct {
	name    string
	give    []byte
	maxSize int // 0: MaxPacketSize
	want    *Error
}

// headerRefusals break the fixed header (§2.2): the first byte, the
// Remaining Length and the length a type allows.
var headerRefusals = []refusal{
	{"reserved type 0", []byte{0x00, 0x00}, 0, ErrReservedType},
	{"reserved type 15", []byte{0xF0, 0x00}, 0, ErrReservedType},
	{"connack from a client", []byte{0x20, 0x02, 0x00, 0x00}, 0, ErrServerPacket},
	{"suback from a client", []byte{0x90, 0x03, 0x00, 0x01, 0x00}, 0, ErrServerPacket},
	{"unsuback from a client", []byte{0xB0, 0x02, 0x00, 0x01}, 0, ErrServerPacket},
	{"pingresp from a client", []byte{0xD0, 0x00}, 0, ErrServerPacket},
	{"connect flags 0001", cat([]byte{0x11}, connect(0x02, str("c"))[1:]), 0, ErrReservedFlags},
	{"puback flags 0010", []byte{0x42, 0x02, 0x00, 0x01}, 0, ErrReservedFlags},
	{"pubrec flags 0001", []byte{0x51, 0x02, 0x00, 0x01}, 0, ErrReservedFlags},
	{"pubrel flags 0000", []byte{0x60, 0x02, 0x00, 0x01}, 0, ErrReservedFlags},
	{"pubrel flags 0011", []byte{0x63, 0x02, 0x00, 0x01}, 0, ErrReservedFlags},
	{"pubcomp flags 1111", []byte{0x7F, 0x02, 0x00, 0x01}, 0, ErrReservedFlags},
	{"subscribe flags 0000", cat([]byte{0x80}, subscribe(1, "a", 0)[1:]), 0, ErrReservedFlags},
	{"subscribe flags 0011", cat([]byte{0x83}, subscribe(1, "a", 0)[1:]), 0, ErrReservedFlags},
	{"unsubscribe flags 0000", cat([]byte{0xA0}, unsubscribe(1, "a")[1:]), 0, ErrReservedFlags},
	{"unsubscribe flags 1010", cat([]byte{0xAA}, unsubscribe(1, "a")[1:]), 0, ErrReservedFlags},
	{"pingreq flags 0001", []byte{0xC1, 0x00}, 0, ErrReservedFlags},
	{"disconnect flags 1000", []byte{0xE8, 0x00}, 0, ErrReservedFlags},
	{"publish qos 3", publish(0x06, "a", 1, ""), 0, ErrQoS3},
	{"publish qos 3 dup retain", publish(0x0F, "a", 1, ""), 0, ErrQoS3},
	{"publish dup qos 0", publish(0x08, "a", 0, "x"), 0, ErrDupQoS0},
	{"publish dup qos 0 retain", publish(0x09, "a", 0, "x"), 0, ErrDupQoS0},
	{"remaining length fourth byte continues", []byte{0x30, 0xFF, 0xFF, 0xFF, 0xFF}, 0, ErrRemainingLength},
	{"remaining length five bytes", []byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01}, 0, ErrRemainingLength},
	{"larger than maxSize", publish(0, "a", 0, "0123456789"), 14, ErrTooLarge},
	{"declared larger than maxSize", []byte{0x30, 0xFF, 0xFF, 0xFF, 0x7F}, 1 << 20, ErrTooLarge},
	{"puback remaining length 3", []byte{0x40, 0x03, 0x00, 0x01, 0x00}, 0, ErrAckLength},
	{"puback remaining length 1", []byte{0x40, 0x01, 0x01}, 0, ErrAckLength},
	{"pubrec remaining length 0", []byte{0x50, 0x00}, 0, ErrAckLength},
	{"pubrel remaining length 4", []byte{0x62, 0x04, 0x00, 0x01, 0x00, 0x00}, 0, ErrAckLength},
	{"pubcomp remaining length 2097151", []byte{0x70, 0xFF, 0xFF, 0x7F}, 0, ErrAckLength},
	{"pingreq remaining length 1", []byte{0xC0, 0x01, 0x00}, 0, ErrNonZeroLength},
	{"pingreq remaining length 127", []byte{0xC0, 0x7F}, 0, ErrNonZeroLength},
	{"disconnect remaining length 2", []byte{0xE0, 0x02, 0x00, 0x00}, 0, ErrNonZeroLength},
	{"puback packet id 0", []byte{0x40, 0x02, 0x00, 0x00}, 0, ErrPacketIDZero},
	{"pubrec packet id 0", []byte{0x50, 0x02, 0x00, 0x00}, 0, ErrPacketIDZero},
	{"pubrel packet id 0", []byte{0x62, 0x02, 0x00, 0x00}, 0, ErrPacketIDZero},
	{"pubcomp packet id 0", []byte{0x70, 0x02, 0x00, 0x00}, 0, ErrPacketIDZero},
}

// publishRefusals break the rules of a PUBLISH (§3.3) and of its topic name
// (§1.5.3, §4.7).
var publishRefusals = []refusal{
	{"empty topic", publish(0, "", 0, "x"), 0, ErrEmptyTopic},
	{"plus in topic", publish(0, "a/+", 0, "x"), 0, ErrWildcardTopic},
	{"hash in topic", publish(0, "a/#", 0, "x"), 0, ErrWildcardTopic},
	{"plus inside a level", publish(0x02, "sport+", 1, ""), 0, ErrWildcardTopic},
	{"lone hash topic", publish(0, "#", 0, ""), 0, ErrWildcardTopic},
	{"ill-formed utf-8", publish(0, "a\xc3\x28", 0, ""), 0, ErrInvalidUTF8},
	{"encoded surrogate", publish(0, "\xed\xa0\x80", 0, ""), 0, ErrInvalidUTF8},
	{"overlong encoding", publish(0, "\xc0\xaf", 0, ""), 0, ErrInvalidUTF8},
	{"utf-8 checked before wildcard", publish(0, "+\xff", 0, ""), 0, ErrInvalidUTF8},
	{"u+0000 in topic", publish(0, "a\x00b", 0, ""), 0, ErrNullChar},
	{"null checked before wildcard", publish(0, "#\x00", 0, ""), 0, ErrNullChar},
	{"topic length past the end", pkt(0x30, []byte{0x00, 0x05, 'a'}), 0, ErrTruncated},
	{"one byte body", pkt(0x30, []byte{0x00}), 0, ErrTruncated},
	{"empty body", pkt(0x30), 0, ErrTruncated},
	{"qos 1 without packet id", pkt(0x32, str("a")), 0, ErrTruncated},
	{"qos 1 half a packet id", pkt(0x32, str("a"), []byte{0x01}), 0, ErrTruncated},
	{"qos 1 packet id 0", publish(0x02, "a", 0, "x"), 0, ErrPacketIDZero},
	{"qos 2 packet id 0", publish(0x04, "a", 0, "x"), 0, ErrPacketIDZero},
}

// subscribeRefusals break the rules of SUBSCRIBE (§3.8) and UNSUBSCRIBE
// (§3.10) and of topic filters (§4.7).
var subscribeRefusals = []refusal{
	{"subscribe without filters", subscribe(1), 0, ErrEmptySubscribe},
	{"subscribe packet id 0", subscribe(0, "a", 0), 0, ErrPacketIDZero},
	{"subscribe packet id 0 and empty", subscribe(0), 0, ErrPacketIDZero},
	{"subscribe without packet id", pkt(0x82, []byte{0x01}), 0, ErrTruncated},
	{"subscribe empty body", pkt(0x82), 0, ErrTruncated},
	{"subscribe qos 3", subscribe(1, "a", 3), 0, ErrSubscribeQoS},
	{"subscribe reserved bit 2", subscribe(1, "a", 0x04), 0, ErrSubscribeQoS},
	{"subscribe reserved bit 7", subscribe(1, "a", 0x81), 0, ErrSubscribeQoS},
	{"subscribe second filter qos 3", subscribe(1, "a", 1, "b", 3), 0, ErrSubscribeQoS},
	{"subscribe missing qos byte", pkt(0x82, u16(1), str("a")), 0, ErrTruncated},
	{"subscribe filter past the end", pkt(0x82, u16(1), []byte{0x00, 0x09, 'a'}), 0, ErrTruncated},
	{"subscribe empty filter", subscribe(1, "", 0), 0, ErrEmptyTopic},
	{"subscribe hash not last", subscribe(1, "sport/tennis/#/ranking", 0), 0, ErrMultiLevelWildcard},
	{"subscribe hash inside a level", subscribe(1, "sport/tennis#", 0), 0, ErrMultiLevelWildcard},
	{"subscribe hash then slash", subscribe(1, "#/", 0), 0, ErrMultiLevelWildcard},
	{"subscribe hash starts a level", subscribe(1, "a/#b", 0), 0, ErrMultiLevelWildcard},
	{"subscribe plus inside a level", subscribe(1, "sport+", 0), 0, ErrSingleLevelWildcard},
	{"subscribe plus starts a level", subscribe(1, "a/+b/c", 0), 0, ErrSingleLevelWildcard},
	{"subscribe plus ends a level", subscribe(1, "a/b+/c", 0), 0, ErrSingleLevelWildcard},
	{"subscribe plus before hash", subscribe(1, "+#", 0), 0, ErrSingleLevelWildcard},
	{"subscribe first misplaced wins", subscribe(1, "a#/b+", 0), 0, ErrMultiLevelWildcard},
	{"subscribe ill-formed utf-8", subscribe(1, "a/\xff", 0), 0, ErrInvalidUTF8},
	{"subscribe u+0000", subscribe(1, "a/\x00", 0), 0, ErrNullChar},
	{"subscribe bad second filter", subscribe(1, "a", 0, "b#", 0), 0, ErrMultiLevelWildcard},
	{"unsubscribe without filters", unsubscribe(1), 0, ErrEmptyUnsubscribe},
	{"unsubscribe packet id 0", unsubscribe(0, "a"), 0, ErrPacketIDZero},
	{"unsubscribe without packet id", pkt(0xA2), 0, ErrTruncated},
	{"unsubscribe filter past the end", pkt(0xA2, u16(1), []byte{0x00, 0x02, 'a'}), 0, ErrTruncated},
	{"unsubscribe empty filter", unsubscribe(1, "a", ""), 0, ErrEmptyTopic},
	{"unsubscribe hash not last", unsubscribe(1, "a/#/b"), 0, ErrMultiLevelWildcard},
	{"unsubscribe plus inside a level", unsubscribe(1, "a/b+"), 0, ErrSingleLevelWildcard},
	{"unsubscribe ill-formed utf-8", unsubscribe(1, "\xc3"), 0, ErrInvalidUTF8},
	{"unsubscribe u+0000", unsubscribe(1, "\x00"), 0, ErrNullChar},
}

// connectRefusals break the rules of CONNECT (§3.1).
var connectRefusals = []refusal{
	{"protocol name MQIsdp level 3", pkt(0x10, str("MQIsdp"), []byte{3, 0x02}, u16(60), str("c")), 0, ErrProtocolName},
	{"protocol name lowercase", pkt(0x10, str("mqtt"), []byte{4, 0x02}, u16(60), str("c")), 0, ErrProtocolName},
	{"protocol name empty", pkt(0x10, str(""), []byte{4, 0x02}, u16(60), str("c")), 0, ErrProtocolName},
	{"protocol name checked before level", pkt(0x10, str("MQTX"), []byte{5}), 0, ErrProtocolName},
	{"protocol level 5", pkt(0x10, str("MQTT"), []byte{5, 0x02}, u16(60), []byte{0}, str("c")), 0, ErrProtocolLevel},
	{"protocol level 5 nothing after", pkt(0x10, str("MQTT"), []byte{5}), 0, ErrProtocolLevel},
	{"protocol level 3", pkt(0x10, str("MQTT"), []byte{3, 0x02}, u16(60), str("c")), 0, ErrProtocolLevel},
	{"protocol level 0", pkt(0x10, str("MQTT"), []byte{0, 0x02}, u16(60), str("c")), 0, ErrProtocolLevel},
	{"protocol name ill-formed", pkt(0x10, str("MQ\xff"), []byte{4}), 0, ErrInvalidUTF8},
	{"protocol name u+0000", pkt(0x10, str("MQTT\x00"), []byte{4}), 0, ErrNullChar},
	{"no protocol level", pkt(0x10, str("MQTT")), 0, ErrTruncated},
	{"no connect flags", pkt(0x10, str("MQTT"), []byte{4}), 0, ErrTruncated},
	{"empty body", pkt(0x10), 0, ErrTruncated},
	{"reserved flag", connect(0x03, str("c")), 0, ErrConnectReserved},
	{"reserved flag before will rules", connect(0x39, str("c")), 0, ErrConnectReserved},
	{"will qos 1 without will", connect(0x0A, str("c")), 0, ErrWillQoS},
	{"will qos 2 without will", connect(0x12, str("c")), 0, ErrWillQoS},
	{"will qos 3 with will", connect(0x1E, str("c"), str("w"), str("m")), 0, ErrWillQoS},
	{"will retain without will", connect(0x22, str("c")), 0, ErrWillRetain},
	{"password without user name", connect(0x42, str("c"), str("token")), 0, ErrPasswordWithoutUsername},
	{"no keep alive", pkt(0x10, str("MQTT"), []byte{4, 0x02}, []byte{0}), 0, ErrTruncated},
	{"no client id", pkt(0x10, str("MQTT"), []byte{4, 0x02}, u16(60)), 0, ErrTruncated},
	{"client id ill-formed", connect(0x02, str("c\xc0")), 0, ErrInvalidUTF8},
	{"client id u+0000", connect(0x02, str("\x00")), 0, ErrNullChar},
	{"will topic missing", connect(0x06, str("c")), 0, ErrTruncated},
	{"will message missing", connect(0x06, str("c"), str("w")), 0, ErrTruncated},
	{"will message past the end", connect(0x06, str("c"), str("w"), []byte{0x00, 0x04, 'm'}), 0, ErrTruncated},
	{"will topic empty", connect(0x06, str("c"), str(""), str("m")), 0, ErrEmptyTopic},
	{"will topic with wildcard", connect(0x06, str("c"), str("a/+"), str("m")), 0, ErrWildcardTopic},
	{"will topic ill-formed", connect(0x06, str("c"), str("\xff"), str("m")), 0, ErrInvalidUTF8},
	{"user name missing", connect(0x82, str("c")), 0, ErrTruncated},
	{"user name u+0000", connect(0x82, str("c"), str("bo\x00b")), 0, ErrNullChar},
	{"user name ill-formed", connect(0x82, str("c"), str("\xe2\x82")), 0, ErrInvalidUTF8},
	{"password missing", connect(0xC2, str("c"), str("bob")), 0, ErrTruncated},
	{"password past the end", connect(0xC2, str("c"), str("bob"), []byte{0x00, 0x09}), 0, ErrTruncated},
	{"bytes after client id", connect(0x02, str("c"), []byte{0x00}), 0, ErrTrailingBytes},
	{"user name without its flag", connect(0x02, str("c"), str("bob")), 0, ErrTrailingBytes},
	{"password without its flag", connect(0x82, str("c"), str("bob"), str("token")), 0, ErrTrailingBytes},
	{"will without its flag", connect(0x02, str("c"), str("w"), str("m")), 0, ErrTrailingBytes},
	{"empty client id without clean session", connect(0x00, str("")), 0, ErrIdentifierRejected},
	{"empty client id with user name", connect(0x80, str(""), str("bob")), 0, ErrIdentifierRejected},
	{"malformed wins over identifier", connect(0x00, str(""), []byte{0x01}), 0, ErrTrailingBytes},
}

func TestParseRefusals(t *testing.T) {
	for _, group := range [][]refusal{headerRefusals, publishRefusals, subscribeRefusals, connectRefusals} {
		for _, tt := range group {
			t.Run(tt.name, func(t *testing.T) {
				var p Packet
				n, err := Parse(tt.give, tt.maxSize, &p)
				if err != tt.want || n != 0 {
					t.Fatalf("Parse(% x) = %d, %v; want 0, %v", tt.give, n, err, tt.want)
				}
			})
		}
	}
}

// TestHeaderRefusedEarly: a fault of the fixed header is reported as soon as
// the fixed header is complete (the first byte alone for type and flags),
// without waiting for, or allocating for, the declared body.
func TestHeaderRefusedEarly(t *testing.T) {
	for _, tt := range headerRefusals {
		if tt.want == ErrPacketIDZero {
			continue // a body rule: needs the body
		}
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			for i := 1; i <= len(tt.give); i++ {
				var p Packet
				n, err := Parse(tt.give[:i:i], tt.maxSize, &p)
				if err == nil && n == 0 {
					continue
				}
				if err != want || n != 0 {
					t.Fatalf("Parse of %d bytes = %d, %v; want 0, %v", i, n, err, want)
				}
				if i > 5 {
					t.Fatalf("%v reported only after %d bytes", want, i)
				}
				if l, err := Len(tt.give[:i:i], tt.maxSize); err != want || l != 0 {
					t.Fatalf("Len of %d bytes = %d, %v; want 0, %v", i, l, err, want)
				}
				return
			}
			t.Fatalf("no error for % x", tt.give)
		})
	}
}

func TestErrorReturnCodes(t *testing.T) {
	tests := []struct {
		err  *Error
		want ReturnCode
	}{
		{ErrProtocolName, RefusedProtocolVersion},
		{ErrProtocolLevel, RefusedProtocolVersion},
		{ErrIdentifierRejected, RefusedIdentifierRejected},
		{ErrConnectReserved, Accepted},
		{ErrPasswordWithoutUsername, Accepted},
		{ErrTrailingBytes, Accepted},
		{ErrSecondConnect, Accepted},
	}
	for _, tt := range tests {
		var perr *Error
		if !errors.As(error(tt.err), &perr) || perr.ReturnCode != tt.want {
			t.Errorf("%v: ReturnCode %v, want %v", tt.err, perr.ReturnCode, tt.want)
		}
	}
	if got := ErrWildcardTopic.Error(); got != "packet: wildcard in topic name [MQTT-3.3.2-2]" {
		t.Errorf("Error() = %q", got)
	}
}

// acceptance is a valid input and the packet Parse must make of it.
type acceptance struct {
	name string
	give []byte
	want Packet
}

var acceptances = []acceptance{
	{"publish qos 0", publish(0, "demo/general/messages", 0, "hi"),
		Packet{Type: TypePublish, Topic: []byte("demo/general/messages"), Payload: []byte("hi")}},
	{"publish qos 0 empty payload retain", publish(0x01, "a", 0, ""),
		Packet{Type: TypePublish, Retain: true, Topic: []byte("a")}},
	// §3.3.2.3 example: topic "a/b", packet identifier 10.
	{"publish qos 1 spec example", pkt(0x32, []byte{0x00, 0x03, 'a', '/', 'b', 0x00, 0x0A}, []byte("x")),
		Packet{Type: TypePublish, QoS: 1, PacketID: 10, Topic: []byte("a/b"), Payload: []byte("x")}},
	{"publish qos 2 dup", publish(0x0C, "a/b", 65535, "\x00\xff"),
		Packet{Type: TypePublish, QoS: 2, Dup: true, PacketID: 65535, Topic: []byte("a/b"), Payload: []byte("\x00\xff")}},
	{"publish topic with $ and unicode", publish(0, "$SYS/caf\u00e9/\U0001F600", 0, "p"),
		Packet{Type: TypePublish, Topic: []byte("$SYS/caf\u00e9/\U0001F600"), Payload: []byte("p")}},
	{"publish topic of slashes", publish(0, "//", 0, ""),
		Packet{Type: TypePublish, Topic: []byte("//")}},
	{"publish non-shortest remaining length", cat([]byte{0x30, 0x83, 0x00}, str("a")),
		Packet{Type: TypePublish, Topic: []byte("a")}},
	{"puback", []byte{0x40, 0x02, 0x12, 0x34}, Packet{Type: TypePuback, PacketID: 0x1234}},
	{"pubrec", []byte{0x50, 0x02, 0x00, 0x01}, Packet{Type: TypePubrec, PacketID: 1}},
	{"pubrel", []byte{0x62, 0x02, 0x00, 0x02}, Packet{Type: TypePubrel, PacketID: 2}},
	{"pubcomp", []byte{0x70, 0x02, 0xFF, 0xFF}, Packet{Type: TypePubcomp, PacketID: 65535}},
	{"pingreq", []byte{0xC0, 0x00}, Packet{Type: TypePingreq}},
	{"disconnect", []byte{0xE0, 0x00}, Packet{Type: TypeDisconnect}},
	// §3.8.3 example payload: "a/b" QoS 1, "c/d" QoS 2, packet id 10.
	{"subscribe spec example", pkt(0x82, []byte{0x00, 0x0A, 0x00, 0x03, 'a', '/', 'b', 0x01, 0x00, 0x03, 'c', '/', 'd', 0x02}),
		Packet{Type: TypeSubscribe, PacketID: 10, Filters: []Filter{{"a/b", 1}, {"c/d", 2}}}},
	// §4.7.1 examples of valid filters.
	{"subscribe valid wildcards", subscribe(7, "sport/tennis/player1/#", 0, "sport/#", 1, "#", 2, "+", 0,
		"+/tennis/#", 0, "sport/+/player1", 0, "/+", 0, "+/+", 0, "$SYS/#", 0, "a/+/+/#", 0),
		Packet{Type: TypeSubscribe, PacketID: 7, Filters: []Filter{{"sport/tennis/player1/#", 0}, {"sport/#", 1}, {"#", 2},
			{"+", 0}, {"+/tennis/#", 0}, {"sport/+/player1", 0}, {"/+", 0}, {"+/+", 0}, {"$SYS/#", 0}, {"a/+/+/#", 0}}}},
	// §3.10.3 example payload: "a/b", "c/d".
	{"unsubscribe spec example", pkt(0xA2, []byte{0x00, 0x0A, 0x00, 0x03, 'a', '/', 'b', 0x00, 0x03, 'c', '/', 'd'}),
		Packet{Type: TypeUnsubscribe, PacketID: 10, Filters: []Filter{{"a/b", 0}, {"c/d", 0}}}},
	{"unsubscribe wildcard", unsubscribe(3, "demo/+/messages", "#"),
		Packet{Type: TypeUnsubscribe, PacketID: 3, Filters: []Filter{{"demo/+/messages", 0}, {"#", 0}}}},
	{"connect minimal", connect(0x02, str("")),
		Packet{Type: TypeConnect, Connect: Connect{CleanSession: true, KeepAlive: 60}}},
	{"connect persistent with id", connect(0x00, str("sensor-1")),
		Packet{Type: TypeConnect, Connect: Connect{KeepAlive: 60, ClientID: "sensor-1"}}},
	// §3.1.2.10 example: flags 0xCE (user name, password, will QoS 1,
	// will, clean session), keep alive 10.
	{"connect spec example", pkt(0x10, []byte{0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04, 0xCE, 0x00, 0x0A},
		str("c"), str("w/t"), str("bye"), str("bob"), str("dev-token-bob")),
		Packet{Type: TypeConnect, Connect: Connect{CleanSession: true, KeepAlive: 10, ClientID: "c",
			Will: true, WillQoS: 1, WillTopic: "w/t", WillMessage: []byte("bye"),
			HasUsername: true, Username: "bob", HasPassword: true, Password: "dev-token-bob"}}},
	{"connect will qos 2 retain empty message", connect(0x36, str("c"), str("w"), str("")),
		Packet{Type: TypeConnect, Connect: Connect{CleanSession: true, KeepAlive: 60, ClientID: "c",
			Will: true, WillQoS: 2, WillRetain: true, WillTopic: "w"}}},
	{"connect user name only", connect(0x82, str("c"), str("dev-token-alice")),
		Packet{Type: TypeConnect, Connect: Connect{CleanSession: true, KeepAlive: 60, ClientID: "c",
			HasUsername: true, Username: "dev-token-alice"}}},
	{"connect empty user name binary password", connect(0xC2, str("c"), str(""), str("\x00\xff")),
		Packet{Type: TypeConnect, Connect: Connect{CleanSession: true, KeepAlive: 60, ClientID: "c",
			HasUsername: true, HasPassword: true, Password: "\x00\xff"}}},
	{"connect long client id", connect(0x00, str(strings.Repeat("x", 300))),
		Packet{Type: TypeConnect, Connect: Connect{KeepAlive: 60, ClientID: strings.Repeat("x", 300)}}},
}

func TestParseAcceptances(t *testing.T) {
	for _, tt := range acceptances {
		t.Run(tt.name, func(t *testing.T) {
			var p Packet
			n, err := Parse(tt.give, len(tt.give), &p)
			if err != nil || n != len(tt.give) {
				t.Fatalf("Parse(% x) = %d, %v; want %d, nil", tt.give, n, err, len(tt.give))
			}
			if got, want := describe(&p), describe(&tt.want); got != want {
				t.Fatalf("Parse(% x)\n got %s\nwant %s", tt.give, got, want)
			}
			if l, err := Len(tt.give, 0); l != n || err != nil {
				t.Fatalf("Len = %d, %v; want %d", l, err, n)
			}
		})
	}
}

// TestParseIncomplete: every strict prefix of a valid packet asks for more
// bytes and leaves the Packet untouched.
func TestParseIncomplete(t *testing.T) {
	for _, tt := range acceptances {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < len(tt.give); i++ {
				p := Packet{PacketID: 99}
				n, err := Parse(tt.give[:i:i], 0, &p)
				if n != 0 || err != nil || p.PacketID != 99 {
					t.Fatalf("Parse of %d of %d bytes = %d, %v, id %d", i, len(tt.give), n, err, p.PacketID)
				}
			}
		})
	}
}

// TestParseStream: packets back to back decode one after another, whether
// the bytes come all at once or one at a time.
func TestParseStream(t *testing.T) {
	var stream []byte
	var want []string
	for _, tt := range acceptances {
		stream = append(stream, tt.give...)
		want = append(want, describe(&tt.want))
	}
	for _, oneByOne := range []bool{false, true} {
		got := parseStream(stream, 0, oneByOne)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("oneByOne=%v:\n got %q\nwant %q", oneByOne, got, want)
		}
	}
}

// parseStream decodes stream as a reactor would: all of it at once, or as
// it grows one byte at a time. It returns one line per packet, then the
// error if one stopped it, or "incomplete" if bytes were left.
func parseStream(stream []byte, maxSize int, oneByOne bool) []string {
	var out []string
	var p Packet
	start := 0
	end := len(stream)
	if oneByOne {
		end = start
	}
	for {
		if end > len(stream) {
			break
		}
		buf := stream[start:end:end]
		n, err := Parse(buf, maxSize, &p)
		switch {
		case n > len(buf):
			return append(out, "n past the buffer")
		case err != nil:
			return append(out, "error: "+err.Error())
		case n > 0:
			out = append(out, describe(&p))
			start += n
			if !oneByOne {
				end = len(stream)
			}
		case oneByOne:
			end++
		default:
			end = len(stream) + 1
		}
	}
	if start < len(stream) {
		out = append(out, "incomplete")
	}
	return out
}

// TestPayloadCapacity: an append to Payload must not write over the next
// packet in the same buffer.
func TestPayloadCapacity(t *testing.T) {
	buf := cat(publish(0, "a", 0, "xy"), []byte{0xC0, 0x00})
	var p Packet
	n, err := Parse(buf, 0, &p)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(p.Payload, 0xFF)
	_ = append(p.Topic, 0xFF)
	if !bytes.Equal(buf[n:], []byte{0xC0, 0x00}) || !bytes.Equal(p.Payload, []byte("xy")) {
		t.Fatalf("buffer overwritten: % x", buf)
	}
}

// TestFiltersReused: Parse reuses the Filters array and resets every field.
func TestFiltersReused(t *testing.T) {
	var p Packet
	if _, err := Parse(subscribe(1, "a", 1, "b", 2), 0, &p); err != nil {
		t.Fatal(err)
	}
	first := &p.Filters[0]
	if _, err := Parse(unsubscribe(2, "c"), 0, &p); err != nil {
		t.Fatal(err)
	}
	if &p.Filters[0] != first || len(p.Filters) != 1 || p.Filters[0] != (Filter{"c", 0}) {
		t.Fatalf("filters %+v not reused", p.Filters)
	}
	if _, err := Parse([]byte{0xC0, 0x00}, 0, &p); err != nil {
		t.Fatal(err)
	}
	if p.Type != TypePingreq || p.PacketID != 0 || len(p.Filters) != 0 {
		t.Fatalf("not reset: %+v", p)
	}
}

// TestConnectCopies: CONNECT fields survive a change of the buffer.
func TestConnectCopies(t *testing.T) {
	buf := connect(0xC6, str("c"), str("w"), str("m"), str("u"), str("p"))
	var p Packet
	if _, err := Parse(buf, 0, &p); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = '!'
	}
	c := p.Connect
	if c.ClientID != "c" || c.WillTopic != "w" || string(c.WillMessage) != "m" || c.Username != "u" || c.Password != "p" {
		t.Fatalf("fields alias the buffer: %+v", c)
	}
}

// TestRemainingLengthSpec decodes the boundaries of §2.2.3 Table 2.4.
func TestRemainingLengthSpec(t *testing.T) {
	for _, tt := range remainingLengthCases {
		give := cat([]byte{0x30}, tt.bytes)
		n, err := Len(give, 0)
		if err != nil || n != 1+len(tt.bytes)+tt.n {
			t.Errorf("Len(% x) = %d, %v; want %d", give, n, err, 1+len(tt.bytes)+tt.n)
		}
	}
}

// TestMaxSizeBoundary: maxSize counts the whole packet, header included.
func TestMaxSizeBoundary(t *testing.T) {
	b := publish(0, "a", 0, "xyz") // 2 + 3 + 3 = 8 bytes
	var p Packet
	if n, err := Parse(b, len(b), &p); n != len(b) || err != nil {
		t.Fatalf("at the limit: %d, %v", n, err)
	}
	if _, err := Parse(b, len(b)-1, &p); err != ErrTooLarge {
		t.Fatalf("one over the limit: %v", err)
	}
}

func TestStrings(t *testing.T) {
	if TypeSubscribe.String() != "SUBSCRIBE" || Type(15).String() != "RESERVED(15)" || Type(200).String() != "RESERVED(200)" {
		t.Error("Type.String")
	}
	if RefusedNotAuthorized.String() != "not authorized" || ReturnCode(9).String() != "reserved(9)" {
		t.Error("ReturnCode.String")
	}
}
