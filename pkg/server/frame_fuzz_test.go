package server

import (
	"bytes"
	"context"
	"net"
	"testing"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// nullTransport is a socket that is never written (fd -1: every write fails
// and is dropped) and whose Close is a no-op.
type nullTransport struct{}

func (nullTransport) Fd() int              { return -1 }
func (nullTransport) RemoteAddr() net.Addr { return nil }
func (nullTransport) Close() error         { return nil }

// FuzzFrameReader feeds arbitrary bytes, split into arbitrary chunks, to the
// incremental request and frame reader after a valid upgrade. It must never
// panic, and the partial buffer it keeps must stay within the frame cap.
func FuzzFrameReader(f *testing.F) {
	upgrade := []byte("GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
	masked := func(fr ws.Frame) []byte {
		var b bytes.Buffer
		_ = ws.WriteFrame(&b, ws.MaskFrameInPlace(fr))
		return b.Bytes()
	}
	f.Add(masked(ws.NewBinaryFrame(testpeer.Map("type", "auth", "token", "dev-token-bob"))), uint8(3))
	f.Add(masked(ws.NewTextFrame([]byte(`{"type":"auth","token":"dev-token-alice"}`))), uint8(1))
	f.Add(masked(ws.NewPingFrame([]byte("hi"))), uint8(2))
	f.Add([]byte{0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}, uint8(5))
	f.Add([]byte{0x02, 0x81, 1, 2, 3, 4, 5, 0x80, 0x81, 1, 2, 3, 4, 5}, uint8(7))
	f.Add(append(masked(ws.NewBinaryFrame(testpeer.Map("type", "auth", "token", "dev-token-bob"))),
		masked(ws.NewBinaryFrame(testpeer.Map("type", "subscribe", "topic", "demo/general/+")))...), uint8(4))

	cfg := newTestConfig()
	cfg.RecordMessages, cfg.MaxFrameSize, cfg.Hub = false, 4096, hub.Config{Workers: 1}
	s, err := newServer(cfg)
	if err != nil {
		f.Fatal(err)
	}
	s.hub.Start()
	f.Cleanup(func() { _ = s.hub.Shutdown(context.Background()) })

	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		st := &connState{Stream: reactor.NewStream(nullTransport{})}
		st.Conn = s.hub.Register(st)
		defer s.hub.Closed(st.Conn)
		in := append(append([]byte(nil), upgrade...), data...)
		var partial []byte // what the reactor would keep between reads
		step := int(chunk%16) + 1
		for off := 0; off < len(in) && !st.Closing(); off += step {
			end := min(off+step, len(in))
			buf := append(partial, in[off:end]...)
			used, _ := s.process(st, buf)
			partial = append([]byte(nil), buf[used:]...)
			if len(partial) > 4096+14+s.cfg.MaxHeaderBytes {
				t.Fatalf("partial buffer grew to %d bytes", len(partial))
			}
		}
	})
}
