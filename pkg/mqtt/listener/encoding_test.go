package listener

import (
	"bytes"
	"testing"

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
