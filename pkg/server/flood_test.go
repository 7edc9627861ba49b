package server

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestInputFloodIsClosedWith1008 checks that a client sending frames faster
// than they can be handled cannot make the broker buffer its input without
// bound: once the unprocessed input passes MaxInputBacklog the connection
// is closed with 1008 input_overflow, and other clients are still served.
func TestInputFloodIsClosedWith1008(t *testing.T) {
	// The flood's frames are each an error; with the error-flood limit out
	// of reach, only the input backlog can end it (otherwise which limit
	// trips first depends on how fast the reader keeps up).
	s := start(t, func(c *testConfig) { c.MaxInputBacklog = 64 << 10; c.ErrorFloodLimit = 1 << 30 })
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/after-flood")

	flooder := testpeer.Dial(t, s.Addr().String())
	var burst bytes.Buffer
	for burst.Len() < 4<<20 {
		_ = ws.WriteFrame(&burst, ws.MaskFrameInPlace(ws.NewBinaryFrame([]byte{0xc1})))
	}
	done := make(chan struct{})
	go func() { // keep writing until the broker hangs up
		defer close(done)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			_ = flooder.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := flooder.Conn.Write(burst.Bytes()); err != nil {
				return
			}
		}
	}()
	code, reason := readUntilClose(t, flooder, 25*time.Second)
	<-done
	if code != ws.StatusPolicyViolation || reason != "input_overflow" {
		t.Fatalf("flooder closed with %d %q, want 1008 input_overflow", code, reason)
	}
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/after-flood", "data", "still here")
	bob.ExpectFields("type", "message", "data", "still here")
}

// readUntilClose discards frames until a close frame arrives and returns its
// code and reason; EOF without one fails the test.
func readUntilClose(t *testing.T, p *testpeer.Peer, wait time.Duration) (ws.StatusCode, string) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		f, err := p.Read(time.Until(deadline))
		if err == io.EOF || err != nil {
			t.Fatalf("connection ended without a close frame: %v", err)
		}
		if f.OpCode == ws.OpClose {
			return ws.ParseCloseFrameData(f.Payload)
		}
	}
	t.Fatal("no close frame")
	return 0, ""
}
