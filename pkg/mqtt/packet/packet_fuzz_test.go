package packet

import (
	"bytes"
	"strings"
	"testing"
)

// fuzzSeeds are inputs for FuzzParse: every accepted and refused packet of
// the tables, and a stream of several packets.
func fuzzSeeds() [][]byte {
	var seeds [][]byte
	var stream []byte
	for _, tt := range acceptances {
		seeds = append(seeds, tt.give)
		stream = append(stream, tt.give...)
	}
	for _, group := range [][]refusal{headerRefusals, publishRefusals, subscribeRefusals, connectRefusals} {
		for _, tt := range group {
			seeds = append(seeds, tt.give)
		}
	}
	return append(seeds, stream, cat(publish(0x02, "a", 1, "x"), []byte{0xC0, 0x00, 0xE0}), []byte{})
}

// FuzzParse feeds arbitrary bytes to Parse as a stream under an arbitrary
// maxSize (0: MaxPacketSize) and checks that it never panics, that n never
// exceeds the buffer, that the stream decodes to the same packets and the
// same final error whether it arrives all at once or one byte at a time,
// and that each accepted packet re-encodes to its own bytes (so no field
// and no trailing byte is dropped) and parses back to itself.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, uint16(0))
	}
	f.Add(publish(0, "a", 0, "0123456789"), uint16(14))
	f.Fuzz(func(t *testing.T, stream []byte, limit uint16) {
		maxSize := int(limit)
		whole := parseStream(stream, maxSize, false)
		oneByOne := parseStream(stream, maxSize, true)
		if strings.Join(whole, "\n") != strings.Join(oneByOne, "\n") {
			t.Fatalf("stream % x, maxSize %d:\nall at once %q\none by one  %q", stream, maxSize, whole, oneByOne)
		}
		var p Packet
		for rest := stream; len(rest) > 0; {
			n, err := Parse(rest, maxSize, &p)
			if n < 0 || n > len(rest) || (err != nil && n != 0) {
				t.Fatalf("Parse(% x) = %d, %v", rest, n, err)
			}
			if err != nil {
				if _, ok := err.(*Error); !ok {
					t.Fatalf("error %T, want *Error", err)
				}
				return
			}
			if n == 0 {
				return
			}
			if l, err := Len(rest, maxSize); l != n || err != nil {
				t.Fatalf("Len(% x) = %d, %v; Parse read %d", rest, l, err, n)
			}
			checkRoundTrip(t, rest[:n], &p)
			rest = rest[n:]
		}
	})
}

// checkRoundTrip checks that p, decoded from b, re-encodes to b (up to the
// form of the Remaining Length) and decodes back to p.
func checkRoundTrip(t *testing.T, b []byte, p *Packet) {
	t.Helper()
	if n := len(b); n < 2 {
		t.Fatalf("packet of %d bytes", n)
	}
	enc := encodeClient(p)
	if enc[0] != b[0] || !bytes.Equal(enc[headerLen(enc):], b[headerLen(b):]) {
		t.Fatalf("decoded % x as %s, which encodes as % x", b, describe(p), enc)
	}
	var q Packet
	if n, err := Parse(enc, 0, &q); n != len(enc) || err != nil || describe(&q) != describe(p) {
		t.Fatalf("re-encoded %s parses as %s, %d, %v", describe(p), describe(&q), n, err)
	}
	if p.Type == TypePublish {
		srv, err := AppendPublish(nil, PublishHeader{Topic: string(p.Topic), QoS: p.QoS, Dup: p.Dup, Retain: p.Retain}, p.PacketID, p.Payload)
		if err != nil || !bytes.Equal(srv, enc) {
			t.Fatalf("AppendPublish of %s = % x, %v; want % x", describe(p), srv, err, enc)
		}
	}
}
