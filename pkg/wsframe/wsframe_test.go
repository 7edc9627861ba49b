package wsframe

import (
	"bytes"
	"testing"

	"github.com/gobwas/ws"
)

func TestFramesRoundTripThroughGobwas(t *testing.T) {
	tests := []struct {
		name string
		give int
	}{
		{"empty", 0},
		{"short", 125},
		{"16-bit length", 126},
		{"16-bit max", 0xffff},
		{"64-bit length", 0x10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			payload := bytes.Repeat([]byte{'x'}, tt.give)
			for _, frame := range [][]byte{
				Binary(payload),
				Framed(ws.OpBinary, 0, func(b []byte) []byte { return append(b, payload...) }),
			} {
				f, err := ws.ReadFrame(bytes.NewReader(frame))
				if err != nil {
					t.Fatalf("read frame: %v", err)
				}
				if !f.Header.Fin || f.Header.Masked || f.Header.OpCode != ws.OpBinary {
					t.Fatalf("header = %+v", f.Header)
				}
				if !bytes.Equal(f.Payload, payload) {
					t.Fatalf("payload length %d, want %d", len(f.Payload), len(payload))
				}
			}
		})
	}
}

func TestCloseTruncatesLongReason(t *testing.T) {
	frame := Close(ws.StatusGoingAway, string(bytes.Repeat([]byte{'r'}, 300)))
	f, err := ws.ReadFrame(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Payload) > 125 {
		t.Fatalf("control payload %d bytes, want <= 125", len(f.Payload))
	}
	code, _ := ws.ParseCloseFrameData(f.Payload)
	if code != ws.StatusGoingAway {
		t.Fatalf("code = %d", code)
	}
}
