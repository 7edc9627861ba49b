package server

import (
	"bytes"
	"testing"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// BenchmarkReadFrames measures the incremental frame reader on an
// authenticated connection: header parse and checks, in-place unmasking,
// MessagePack decoding and dispatch of 100 `ack` frames per operation (an
// ack produces no reply, so nothing but the read path is measured).
func BenchmarkReadFrames(b *testing.B) {
	cfg := newTestConfig()
	cfg.RecordMessages, cfg.Hub = false, hub.Config{Workers: 1}
	s, err := newServer(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s.hub.Start()
	b.Cleanup(func() { _ = s.hub.Shutdown(b.Context()) })
	st := &connState{Stream: reactor.NewStream(nullTransport{})}
	st.Conn = s.hub.Register(st)
	st.Conn.SetPhase(hub.PhaseAuthed)
	st.Conn.SetSession(&hub.Session{Grant: demoGrant("bob"), Version: 1})
	var tmpl bytes.Buffer
	const frames = 100
	for i := 0; i < frames; i++ {
		payload := testpeer.Map("type", "ack", "msgId", "3f2a0000-0000-4000-8000-000000000000")
		_ = ws.WriteFrame(&tmpl, ws.MaskFrameInPlace(ws.NewBinaryFrame(payload)))
	}
	buf := make([]byte, tmpl.Len())
	b.ReportAllocs()
	b.SetBytes(int64(tmpl.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		copy(buf, tmpl.Bytes()) // frames are unmasked in place
		if n, _ := s.process(st, buf); n != len(buf) {
			b.Fatalf("processed %d of %d bytes", n, len(buf))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*frames), "ns/frame")
}
