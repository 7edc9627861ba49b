package server

import (
	"context"
	"strings"
	"testing"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/reactor"
)

// FuzzHandshake feeds arbitrary request bytes, split into chunks of 1 to 32
// bytes, to the reader of a fresh connection, as netpoll would deliver them.
// It must never panic, and while the connection is still in its handshake
// it must never keep more than MaxHeaderBytes of the request; once upgraded,
// the partial frame it keeps stays within the frame cap. The committed
// corpus is in testdata/fuzz/FuzzHandshake.
func FuzzHandshake(f *testing.F) {
	const maxHeader, maxFrame = 1024, 4096
	upgrade := "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
	for _, seed := range []string{
		upgrade,
		upgrade + "\x82\x80\x00\x00\x00\x00",
		strings.ToLower(upgrade[:3]) + upgrade[3:],
		strings.Replace(upgrade, "HTTP/1.1", "HTTP/1.0", 1),
		strings.Replace(upgrade, "GET", "POST", 1),
		strings.Replace(upgrade, "13", "8", 1),
		strings.Replace(upgrade, "Connection: Upgrade", "connection: keep-alive, Upgrade", 1),
		"GET /health HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /health HTTP/1.1\r\n\r\nGET /health HTTP/1.1\r\n\r\n",
		"GET /nowhere HTTP/1.1\r\n\r\n",
		"GET /ws HTTP/1.1\r\nHost: x\r\nX-Pad: " + strings.Repeat("a", maxHeader) + "\r\n\r\n",
		"GET /ws HTTP/1.1\nHost: x\nUpgrade: websocket\n\n",
		"\r\n\r\n",
		"GET\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", // a TLS ClientHello
		"\x00\xff\xfe garbage \r\n\r\n",
	} {
		f.Add([]byte(seed), uint8(0))
		f.Add([]byte(seed), uint8(7))
	}

	cfg := newTestConfig()
	cfg.RecordMessages, cfg.MaxFrameSize, cfg.MaxHeaderBytes, cfg.Hub = false, maxFrame, maxHeader, hub.Config{Workers: 1}
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
		step := int(chunk%32) + 1
		var partial []byte // what the reactor would keep between reads
		for off := 0; off < len(data) && !st.Closing(); off += step {
			buf := append(partial, data[off:min(off+step, len(data))]...)
			used, _ := s.process(st, buf)
			if used < 0 || used > len(buf) {
				t.Fatalf("process used %d of %d bytes", used, len(buf))
			}
			if st.Closing() {
				break // onRequest drops the rest
			}
			partial = append([]byte(nil), buf[used:]...)
			limit := maxFrame + 14
			if st.Conn.Phase() == hub.PhaseHandshake {
				limit = maxHeader
			}
			if len(partial) > limit {
				t.Fatalf("kept %d bytes in phase %d, limit %d", len(partial), st.Conn.Phase(), limit)
			}
		}
	})
}
