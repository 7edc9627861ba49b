package packet

import (
	"bytes"
	"strings"
	"testing"
)

// remainingLengthCases are the boundaries of §2.2.3 Table 2.4.
var remainingLengthCases = []struct {
	n     int
	bytes []byte
}{
	{0, []byte{0x00}},
	{127, []byte{0x7F}},
	{128, []byte{0x80, 0x01}},
	{16383, []byte{0xFF, 0x7F}},
	{16384, []byte{0x80, 0x80, 0x01}},
	{2097151, []byte{0xFF, 0xFF, 0x7F}},
	{2097152, []byte{0x80, 0x80, 0x80, 0x01}},
	{268435455, []byte{0xFF, 0xFF, 0xFF, 0x7F}},
}

func TestAppendRemainingSpec(t *testing.T) {
	for _, tt := range remainingLengthCases {
		if got := appendRemaining(nil, tt.n); !bytes.Equal(got, tt.bytes) {
			t.Errorf("appendRemaining(%d) = % x, want % x", tt.n, got, tt.bytes)
		}
	}
}

func TestAppendFixed(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
		want []byte
	}{
		// §3.2: 0x20 0x02, acknowledge flags, return code.
		{"connack accepted", AppendConnack(nil, false, Accepted), []byte{0x20, 0x02, 0x00, 0x00}},
		{"connack session present", AppendConnack(nil, true, Accepted), []byte{0x20, 0x02, 0x01, 0x00}},
		{"connack refusal clears session present", AppendConnack(nil, true, RefusedNotAuthorized), []byte{0x20, 0x02, 0x00, 0x05}},
		{"connack 1", AppendConnack(nil, false, RefusedProtocolVersion), []byte{0x20, 0x02, 0x00, 0x01}},
		{"connack 2", AppendConnack(nil, false, RefusedIdentifierRejected), []byte{0x20, 0x02, 0x00, 0x02}},
		{"connack 3", AppendConnack(nil, false, RefusedServerUnavailable), []byte{0x20, 0x02, 0x00, 0x03}},
		{"connack 4", AppendConnack(nil, false, RefusedBadUsernameOrPassword), []byte{0x20, 0x02, 0x00, 0x04}},
		{"puback", AppendPuback(nil, 10), []byte{0x40, 0x02, 0x00, 0x0A}},
		{"pubrec", AppendPubrec(nil, 0x1234), []byte{0x50, 0x02, 0x12, 0x34}},
		{"pubcomp", AppendPubcomp(nil, 65535), []byte{0x70, 0x02, 0xFF, 0xFF}},
		{"unsuback", AppendUnsuback(nil, 10), []byte{0xB0, 0x02, 0x00, 0x0A}},
		{"pingresp", AppendPingresp(nil), []byte{0xD0, 0x00}},
		{"appends", AppendPingresp([]byte{0xAA}), []byte{0xAA, 0xD0, 0x00}},
	}
	for _, tt := range tests {
		if !bytes.Equal(tt.got, tt.want) {
			t.Errorf("%s: % x, want % x", tt.name, tt.got, tt.want)
		}
	}
}

func TestAppendSuback(t *testing.T) {
	// §3.9.3 example payload: 0x00, 0x01, 0x02, 0x80 (the last a failure).
	got, err := AppendSuback([]byte{0xAA}, 10, []byte{SubackQoS0, SubackQoS1, SubackQoS2, SubackFailure})
	want := []byte{0xAA, 0x90, 0x06, 0x00, 0x0A, 0x00, 0x01, 0x02, 0x80}
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendSuback = % x, %v; want % x", got, err, want)
	}
	many := bytes.Repeat([]byte{SubackQoS1}, 200)
	got, err = AppendSuback(nil, 1, many)
	if err != nil || !bytes.Equal(got, cat([]byte{0x90, 0xCA, 0x01, 0x00, 0x01}, many)) {
		t.Fatalf("200 codes: % x, %v", got[:8], err)
	}
	for _, codes := range [][]byte{nil, {}, {0x03}, {0x00, 0x81}, {0xFF}} {
		got, err := AppendSuback([]byte{0xAA}, 1, codes)
		if err != ErrSubackCode || !bytes.Equal(got, []byte{0xAA}) {
			t.Errorf("AppendSuback(% x) = % x, %v; want ErrSubackCode", codes, got, err)
		}
	}
}

func TestAppendPublish(t *testing.T) {
	tests := []struct {
		name    string
		h       PublishHeader
		id      uint16
		payload string
		want    []byte
	}{
		// §3.3.2.3 example variable header: "a/b", packet identifier 10.
		{"spec example qos 1", PublishHeader{Topic: "a/b", QoS: 1}, 10, "hi",
			[]byte{0x32, 0x09, 0x00, 0x03, 'a', '/', 'b', 0x00, 0x0A, 'h', 'i'}},
		{"qos 0 ignores packet id", PublishHeader{Topic: "a/b"}, 10, "hi",
			[]byte{0x30, 0x07, 0x00, 0x03, 'a', '/', 'b', 'h', 'i'}},
		{"qos 0 retain empty payload", PublishHeader{Topic: "t", Retain: true}, 0, "",
			[]byte{0x31, 0x03, 0x00, 0x01, 't'}},
		{"qos 2 dup", PublishHeader{Topic: "t", QoS: 2, Dup: true}, 0x0102, "",
			[]byte{0x3C, 0x05, 0x00, 0x01, 't', 0x01, 0x02}},
		{"two-byte remaining length", PublishHeader{Topic: "t"}, 0, strings.Repeat("p", 200),
			cat([]byte{0x30, 0xCB, 0x01, 0x00, 0x01, 't'}, []byte(strings.Repeat("p", 200)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendPublish(nil, tt.h, tt.id, []byte(tt.payload))
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Fatalf("AppendPublish = % x, %v; want % x", got, err, tt.want)
			}
			// The shared header plus a packet id plus the payload is the
			// same packet.
			hdr, err := AppendPublishHeader(nil, tt.h, len(tt.payload))
			if err != nil {
				t.Fatal(err)
			}
			if tt.h.QoS > 0 {
				hdr = append(hdr, byte(tt.id>>8), byte(tt.id))
			}
			if hdr = append(hdr, tt.payload...); !bytes.Equal(hdr, tt.want) {
				t.Fatalf("header + id + payload = % x, want % x", hdr, tt.want)
			}
			// A server PUBLISH is also a valid client PUBLISH.
			var p Packet
			if n, err := Parse(got, 0, &p); n != len(got) || err != nil {
				t.Fatalf("Parse = %d, %v", n, err)
			}
			wantID := tt.id
			if tt.h.QoS == 0 {
				wantID = 0
			}
			if string(p.Topic) != tt.h.Topic || p.QoS != tt.h.QoS || p.Dup != tt.h.Dup || p.Retain != tt.h.Retain ||
				p.PacketID != wantID || string(p.Payload) != tt.payload {
				t.Fatalf("round trip: %s", describe(&p))
			}
		})
	}
}

func TestAppendPublishRefusals(t *testing.T) {
	tests := []struct {
		name       string
		h          PublishHeader
		id         uint16
		payloadLen int
		want       *Error
	}{
		{"qos 3", PublishHeader{Topic: "t", QoS: 3}, 1, 0, ErrQoS3},
		{"qos 7", PublishHeader{Topic: "t", QoS: 7}, 1, 0, ErrQoS3},
		{"dup qos 0", PublishHeader{Topic: "t", Dup: true}, 0, 0, ErrDupQoS0},
		{"packet id 0", PublishHeader{Topic: "t", QoS: 1}, 0, 0, ErrPacketIDZero},
		{"empty topic", PublishHeader{}, 0, 0, ErrEmptyTopic},
		{"wildcard topic", PublishHeader{Topic: "a/+"}, 0, 0, ErrWildcardTopic},
		{"hash topic", PublishHeader{Topic: "a/#"}, 0, 0, ErrWildcardTopic},
		{"ill-formed topic", PublishHeader{Topic: "\xff"}, 0, 0, ErrInvalidUTF8},
		{"u+0000 topic", PublishHeader{Topic: "a\x00"}, 0, 0, ErrNullChar},
		{"topic too long", PublishHeader{Topic: strings.Repeat("t", MaxStringLength+1)}, 0, 0, ErrEncodeTooLarge},
		{"negative payload", PublishHeader{Topic: "t"}, 0, -1, ErrEncodeTooLarge},
		{"payload too large", PublishHeader{Topic: "t"}, 0, MaxRemainingLength - 2, ErrEncodeTooLarge},
		{"qos 1 payload too large", PublishHeader{Topic: "t", QoS: 1}, 1, MaxRemainingLength - 4, ErrEncodeTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte{0xAA}
			got, err := AppendPublishHeader(dst, tt.h, tt.payloadLen)
			if tt.want != ErrPacketIDZero && (err != tt.want || !bytes.Equal(got, dst)) {
				t.Fatalf("AppendPublishHeader = % x, %v; want %v", got, err, tt.want)
			}
			if tt.payloadLen < 0 || tt.payloadLen > 1024 {
				return // AppendPublish takes a real payload
			}
			got, err = AppendPublish(dst, tt.h, tt.id, make([]byte, tt.payloadLen))
			if err != tt.want || !bytes.Equal(got, dst) {
				t.Fatalf("AppendPublish = % x, %v; want %v", got, err, tt.want)
			}
		})
	}
	// The largest packets still encode.
	if _, err := AppendPublishHeader(nil, PublishHeader{Topic: "t"}, MaxRemainingLength-3); err != nil {
		t.Fatalf("largest qos 0: %v", err)
	}
	if _, err := AppendPublishHeader(nil, PublishHeader{Topic: strings.Repeat("t", MaxStringLength)}, 0); err != nil {
		t.Fatalf("longest topic: %v", err)
	}
}

// TestRoundTrip: every accepted packet re-encodes to its own bytes, and the
// encoding parses back to the same packet.
func TestRoundTrip(t *testing.T) {
	for _, tt := range acceptances {
		t.Run(tt.name, func(t *testing.T) {
			var p Packet
			if _, err := Parse(tt.give, 0, &p); err != nil {
				t.Fatal(err)
			}
			enc := encodeClient(&p)
			if enc[0] != tt.give[0] || !bytes.Equal(enc[headerLen(enc):], tt.give[headerLen(tt.give):]) {
				t.Fatalf("re-encoded % x, want % x", enc, tt.give)
			}
			var q Packet
			if _, err := Parse(enc, 0, &q); err != nil || describe(&q) != describe(&p) {
				t.Fatalf("reparsed %s, %v; want %s", describe(&q), err, describe(&p))
			}
		})
	}
}

// TestZeroAllocs: the hot paths allocate nothing given a buffer with room.
func TestZeroAllocs(t *testing.T) {
	in := publish(0x02, "demo/general/messages", 7, strings.Repeat("x", 64))
	var p Packet
	h := PublishHeader{Topic: "demo/general/messages", QoS: 1}
	payload := []byte(strings.Repeat("x", 64))
	buf := make([]byte, 0, 256)
	puback, pingreq := []byte{0x40, 0x02, 0x00, 0x01}, []byte{0xC0, 0x00}
	tests := []struct {
		name string
		f    func()
	}{
		{"Parse publish", func() { _, _ = Parse(in, 1<<20, &p) }},
		{"Parse puback", func() { _, _ = Parse(puback, 0, &p) }},
		{"Parse pingreq", func() { _, _ = Parse(pingreq, 0, &p) }},
		{"Len", func() { _, _ = Len(in, 0) }},
		{"AppendPublish", func() { buf, _ = AppendPublish(buf[:0], h, 7, payload) }},
		{"AppendPublishHeader", func() { buf, _ = AppendPublishHeader(buf[:0], h, len(payload)) }},
		{"AppendPuback", func() { buf = AppendPuback(buf[:0], 7) }},
		{"AppendConnack", func() { buf = AppendConnack(buf[:0], false, Accepted) }},
		{"AppendSuback", func() { buf, _ = AppendSuback(buf[:0], 7, payload[:0:0]) }},
		{"AppendPingresp", func() { buf = AppendPingresp(buf[:0]) }},
	}
	for _, tt := range tests {
		if n := testing.AllocsPerRun(100, tt.f); n != 0 {
			t.Errorf("%s: %v allocs/op, want 0", tt.name, n)
		}
	}
}
