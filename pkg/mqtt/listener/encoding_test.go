package listener

import (
	"bytes"
	"testing"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// OQ-27 both ways: a bin or str is its bytes, nil is empty, anything else
// its MessagePack; an MQTT payload is a bin, or nil when empty and retained.
func TestPayloadMapping(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 300)
	for _, tc := range []struct {
		name       string
		data, want []byte
	}{
		{"fixstr", []byte{0xa2, 'h', 'i'}, []byte("hi")},
		{"str 8", append([]byte{0xd9, 3}, "abc"...), []byte("abc")},
		{"bin 8", []byte{0xc4, 2, 0xff, 0x00}, []byte{0xff, 0x00}},
		{"bin 16", append([]byte{0xc5, 1, 44}, long...), long},
		{"nil", []byte{0xc0}, nil},
		{"map", []byte{0x81, 0xa1, 'a', 0x01}, []byte{0x81, 0xa1, 'a', 0x01}},
		{"int", []byte{0x2a}, []byte{0x2a}},
		{"short str", []byte{0xa5, 'h'}, []byte{0xa5, 'h'}},
	} {
		if got := Payload(tc.data); !bytes.Equal(got, tc.want) {
			t.Errorf("%s: Payload(% x) = % x, want % x", tc.name, tc.data, got, tc.want)
		}
	}
	for _, p := range [][]byte{nil, []byte("hi"), long, bytes.Repeat([]byte{1}, 70000)} {
		if got := Payload(Data(p, false)); !bytes.Equal(got, p) {
			t.Errorf("round trip of %d bytes: %d bytes", len(p), len(got))
		}
	}
	if d := Data(nil, true); !bytes.Equal(d, []byte{0xc0}) {
		t.Errorf("Data(empty, retain) = % x, want c0", d)
	}
}

// A delivery is a QoS 0 PUBLISH on the concrete topic.
func TestEncodingMessage(t *testing.T) {
	var p packet.Packet
	for _, m := range []wire.Message{
		{Topic: "a/b", Data: []byte{0xa2, 'h', 'i'}},
		{Topic: "a/#", SourceTopic: "a/b", Data: []byte{0xa2, 'h', 'i'}},
	} {
		frame := Encoding{}.Message(&m)
		n, err := packet.Parse(frame, 1<<20, &p)
		if err != nil || n != len(frame) || p.Type != packet.TypePublish || p.QoS != 0 ||
			string(p.Topic) != "a/b" || string(p.Payload) != "hi" {
			t.Fatalf("% x: %v %+v", frame, err, p)
		}
	}
}

// Over WebSocket a delivery is Encoding's packet in one unmasked binary
// frame, whatever its length (7, 16 and 64-bit frame lengths); a QoS 1
// one's frame header counts the Packet Identifier the hub puts between
// head and tail; RETAIN is set on the packet, past the frame header.
func TestWebSocketEncoding(t *testing.T) {
	for _, size := range []int{3, 200, 70000} {
		m := wire.Message{Topic: "a/b", Data: Data(bytes.Repeat([]byte("x"), size), false)}
		read := func(what string, frame []byte) []byte {
			t.Helper()
			r := bytes.NewReader(frame)
			f, err := ws.ReadFrame(r)
			if err != nil || r.Len() != 0 || !f.Header.Fin || f.Header.Masked || f.Header.OpCode != ws.OpBinary {
				t.Fatalf("%s of %d bytes: %v, %+v, %d bytes left", what, size, err, f.Header, r.Len())
			}
			return f.Payload
		}
		enc := WebSocketEncoding{}
		frame := enc.Message(&m)
		plain := Encoding{}
		if got, want := read("QoS 0", frame), plain.Message(&m); !bytes.Equal(got, want) {
			t.Fatalf("QoS 0 of %d bytes: a frame of the packet % x…, want % x…", size, got[:8], want[:8])
		}
		if got := read("retained QoS 0", enc.Retained(frame)); got[0] != 0x31 {
			t.Fatalf("retained QoS 0: first byte %02x", got[0])
		}
		head, tail := enc.MessageQoS1(&m)
		id := []byte{0, 7}
		h, tl := plain.MessageQoS1(&m)
		want := append(append(append([]byte(nil), h...), id...), tl...)
		if got := read("QoS 1", append(append(append([]byte(nil), head...), id...), tail...)); !bytes.Equal(got, want) {
			t.Fatalf("QoS 1 of %d bytes: a frame of % x…, want % x…", size, got[:8], want[:8])
		}
		if got := read("retained QoS 1", append(append(enc.Retained(head), id...), tail...)); got[0] != 0x33 {
			t.Fatalf("retained QoS 1: first byte %02x", got[0])
		}
	}
	long := wire.Message{Topic: string(make([]byte, 70000))}
	if f := (WebSocketEncoding{}).Message(&long); f != nil {
		t.Fatalf("a topic MQTT cannot carry: % x…, want nil", f[:8])
	}
}
