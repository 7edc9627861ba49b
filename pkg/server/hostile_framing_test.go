package server

import (
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Hostile RFC 6455 framing: declared lengths are checked
// before anything is buffered, and a close ends the input.

// header64 is a masked binary frame header declaring length in the 64-bit
// form, whatever its value (rawHeader picks the shortest form and takes an
// int).
func header64(length uint64) []byte {
	h := []byte{0x82, 0x80 | 127}
	h = binary.BigEndian.AppendUint64(h, length)
	return append(h, 0, 0, 0, 0)
}

// framesUntilEOF reads every frame the server sends until it closes the
// connection; it fails if the connection stays open.
func framesUntilEOF(t *testing.T, p *testpeer.Peer) []testpeer.Frame {
	t.Helper()
	var frames []testpeer.Frame
	for {
		f, err := p.Read(5 * time.Second)
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				t.Fatalf("connection still open after %d frames", len(frames))
			case f.OpCode != 0:
				t.Fatalf("undecodable frame: %v", err)
			}
			return frames // EOF or reset: the server closed
		}
		frames = append(frames, f)
	}
}

func TestHostileDeclaredLengthOverTheCapCloses1009InEveryLengthEncoding(t *testing.T) {
	const limit = 100
	for _, tt := range []struct {
		name   string
		header []byte
	}{
		{name: "7-bit", header: rawHeader(0x82, 125)},
		{name: "16-bit", header: rawHeader(0x82, 0xffff)},
		{name: "16-bit just over", header: []byte{0x82, 0x80 | 126, 0, limit + 1, 0, 0, 0, 0}},
		{name: "64-bit", header: rawHeader(0x82, 1<<40)},
		{name: "64-bit largest legal", header: header64(1<<63 - 1)},
		{name: "64-bit small value", header: header64(limit + 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, func(c *testConfig) { c.MaxFrameSize = limit })
			p := authed(t, s, "dev-token-alice")
			// Only the header: the payload never comes, the server must not
			// wait for it nor reserve room for it.
			p.SendRaw(tt.header)
			expectCloseCode(t, p, ws.StatusMessageTooBig, "frame too large")
			p.ExpectEOF(5 * time.Second)
		})
	}
}

func TestHostileLengthWithTheMostSignificantBitSetCloses1002(t *testing.T) {
	for _, tt := range []struct {
		name   string
		length uint64
	}{
		{name: "top bit only", length: 1 << 63},
		{name: "all bits", length: ^uint64(0)},
		{name: "top bit and a small length", length: 1<<63 | 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendRaw(append(header64(tt.length), "hello"...))
			expectCloseCode(t, p, ws.StatusProtocolError, "invalid payload length")
			p.ExpectEOF(5 * time.Second)
		})
	}
}

func TestHostileManySmallFragmentsAddingUpOverTheCapClose1009(t *testing.T) {
	const limit, piece = 4096, 64
	s := start(t, func(c *testConfig) { c.MaxFrameSize = limit })
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewFrame(ws.OpBinary, false, make([]byte, piece)))
	for sent := piece; sent+piece <= limit; sent += piece {
		p.SendFrame(ws.NewFrame(ws.OpContinuation, false, make([]byte, piece)))
	}
	expectPong(t, p) // exactly at the cap: still open
	p.SendFrame(ws.NewFrame(ws.OpContinuation, false, []byte{0}))
	expectCloseCode(t, p, ws.StatusMessageTooBig, "message too large")
	p.ExpectEOF(5 * time.Second)
}

func TestHostileDataBehindACloseFrameIsIgnoredAndTheCloseEchoedOnce(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/after-close")
	alice := authed(t, s, "dev-token-alice")

	// One write: a close, then a publish, a ping and a second close.
	var b []byte
	b = append(b, compiled(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusNormalClosure, "bye")))...)
	b = append(b, binFrame("type", "publish", "topic", "demo/general/after-close", "data", "ghost", "msgRef", "ghost")...)
	b = append(b, compiled(ws.NewPingFrame([]byte("ghost")))...)
	b = append(b, compiled(ws.NewCloseFrame(ws.NewCloseFrameBody(3000, "again")))...)
	alice.SendRaw(b)

	frames := framesUntilEOF(t, alice)
	if len(frames) != 1 || frames[0].OpCode != ws.OpClose {
		t.Fatalf("after close+data the server sent %v, want exactly one close frame", frames)
	}
	if code, _ := ws.ParseCloseFrameData(frames[0].Payload); code != ws.StatusNormalClosure {
		t.Fatalf("close echoed with %d, want 1000", code)
	}
	// The publish behind the close was never fanned out: a later publish is
	// the first message bob sees.
	bob.Send("type", "publish", "topic", "demo/general/after-close", "data", "marker")
	bob.ExpectFields("type", "message", "data", "marker")
}

func TestHostileDataInALaterWriteAfterACloseFrameIsIgnored(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(ws.StatusGoingAway, "")))
	expectCloseCode(t, p, ws.StatusGoingAway, "*")
	// The server may already be gone; whatever it still reads is dropped.
	_, _ = p.Conn.Write(binFrame("type", "subscribe", "topic", "demo/general/late"))
	if frames := framesUntilEOF(t, p); len(frames) != 0 {
		t.Fatalf("frames after the close echo: %v", frames)
	}
	waitFor(t, 5*time.Second, func() bool { return s.hub.Stats().Connections == 0 })
	if n := s.hub.Stats().Subscriptions; n != 0 {
		t.Fatalf("%d subscriptions after the close, want 0", n)
	}
}

func TestHostileDeclaredLengthIsNotReservedBeforeItsBytesArrive(t *testing.T) {
	const conns, declared = 64, 1_000_000 // under the 1 MiB cap
	s := start(t, nil)
	before := heapInUse()
	for i := 0; i < conns; i++ {
		p := dialPeer(t, s) // not even authenticated
		// A ping, then the header of a large frame and 10 of its bytes, in
		// one write: once the pong is back, the reader has kept the partial
		// frame.
		b := compiled(ws.NewPingFrame([]byte("still-there")))
		b = append(b, rawHeader(0x82, declared)...)
		p.SendRaw(append(b, make([]byte, 10)...))
		if f := p.Expect(); f.OpCode != ws.OpPong {
			t.Fatalf("expected the pong, got %s", f)
		}
	}
	after := heapInUse()
	t.Logf("heap before %d bytes, with %d partial frames %d bytes", before, conns, after)
	// Reserving the declared length would take 64 MB.
	if after > before && after-before > 8<<20 {
		t.Fatalf("%d connections that each sent 24 bytes of a %d-byte frame grew the heap by %d bytes",
			conns, declared, after-before)
	}
}

// TestCloseCodesFollowRFC6455Registry checks which close codes a peer may
// send (RFC 6455 §7.4): registered and application codes are echoed, the
// reserved and out-of-range ones are a protocol error.
func TestCloseCodesFollowRFC6455Registry(t *testing.T) {
	s := start(t, nil)
	tests := []struct {
		give ws.StatusCode
		want ws.StatusCode
	}{
		{1000, 1000}, {1001, 1001}, {1003, 1003}, {1007, 1007}, {1011, 1011},
		{1012, 1012}, {1013, 1013}, {1014, 1014}, {3000, 3000}, {4999, 4999},
		{999, 1002}, {1004, 1002}, {1005, 1002}, {1006, 1002}, {1015, 1002},
		{1016, 1002}, {2999, 1002}, {5000, 1002}, {65535, 1002},
	}
	for _, tt := range tests {
		p := dialPeer(t, s)
		p.SendFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(tt.give, "")))
		if code, _ := p.ExpectClose(); code != tt.want {
			t.Errorf("close code %d answered with %d, want %d", tt.give, code, tt.want)
		}
	}
}
