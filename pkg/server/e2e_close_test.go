package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Close codes: one case per reason of the disconnect table, each provoked
// over a real socket (decisions.md D-5 amended; docs/protocol.md
// "Close codes"). TokenRevoked is provoked in e2e_revalidate_test.go,
// TokenExpired in e2e_expiry_test.go and SlowConsumer below, each needing
// more setup than a row.

func TestEveryCloseReasonSendsItsCodeAndText(t *testing.T) {
	fast := func(c *testConfig) {
		c.Hub.IdleTimeout = 300 * time.Millisecond
		c.Hub.AuthTimeout = 300 * time.Millisecond
		c.Hub.FrameTimeout = 300 * time.Millisecond
		c.ErrorFloodLimit = 5
	}
	cases := []struct {
		reason  disconnect.Reason
		code    ws.StatusCode
		text    string
		provoke func(t *testing.T, s *Server) *testpeer.Peer
	}{
		{disconnect.ClientClosed, 4321, "", func(t *testing.T, s *Server) *testpeer.Peer {
			p := authed(t, s, "dev-token-alice")
			p.SendFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(4321, "bye")))
			return p
		}},
		{disconnect.Shutdown, 1012, "server shutting down", func(t *testing.T, s *Server) *testpeer.Peer {
			p := authed(t, s, "dev-token-alice")
			go func() { _ = s.node.Shutdown(context.Background()) }()
			return p
		}},
		{disconnect.IdleTimeout, 4000, "idle_timeout", func(t *testing.T, s *Server) *testpeer.Peer {
			return authed(t, s, "dev-token-alice")
		}},
		{disconnect.FrameTimeout, 1008, "frame_timeout", func(t *testing.T, s *Server) *testpeer.Peer {
			p := authed(t, s, "dev-token-alice")
			p.SendRaw(rawHeader(0x82, 100)) // the payload never comes
			return p
		}},
		{disconnect.TooManyErrors, 1008, "too_many_errors", func(t *testing.T, s *Server) *testpeer.Peer {
			p := authed(t, s, "dev-token-alice")
			var burst []byte
			for i := 0; i < 10; i++ {
				burst = append(burst, binFrame("type", "subscribe", "topic", "other/room/t")...)
			}
			p.SendRaw(burst)
			return p
		}},
		{disconnect.AuthTimeout, 4008, "auth_timeout", func(t *testing.T, s *Server) *testpeer.Peer {
			p := testpeer.Dial(t, s.Addr().String())
			for i := 0; i < 6; i++ { // frames keep the idle timer away; auth never comes
				p.SendFrame(ws.NewPingFrame(nil))
				time.Sleep(80 * time.Millisecond)
			}
			return p
		}},
		{disconnect.AuthFailures, 4004, "too_many_auth_failures", func(t *testing.T, s *Server) *testpeer.Peer {
			p := testpeer.Dial(t, s.Addr().String())
			for i := 0; i < 5; i++ {
				p.Send("type", "auth", "token", "wrong")
			}
			return p
		}},
		{disconnect.ProtocolError, 1002, "client frames must be masked", func(t *testing.T, s *Server) *testpeer.Peer {
			p := authed(t, s, "dev-token-alice")
			p.SendRaw(ws.MustCompileFrame(ws.NewBinaryFrame([]byte{0x80})))
			return p
		}},
		{disconnect.InvalidPayload, 1007, "text frame is not UTF-8", func(t *testing.T, s *Server) *testpeer.Peer {
			p := authed(t, s, "dev-token-alice")
			p.SendFrame(ws.NewTextFrame([]byte{0xff, 0xfe}))
			return p
		}},
		{disconnect.TooLarge, 1009, "frame too large", func(t *testing.T, s *Server) *testpeer.Peer {
			p := authed(t, s, "dev-token-alice")
			p.SendRaw(rawHeader(0x82, 1<<21))
			return p
		}},
	}
	for _, tt := range cases {
		t.Run(tt.reason.String(), func(t *testing.T) {
			if tt.reason.Code() != tt.code && tt.reason != disconnect.ClientClosed {
				t.Fatalf("table code of %v = %d, want %d", tt.reason, tt.reason.Code(), tt.code)
			}
			s := start(t, fast)
			p := tt.provoke(t, s)
			expectCloseCode(t, p, tt.code, tt.text)
			p.ExpectEOF(5 * time.Second)
			if tt.reason != disconnect.Shutdown {
				waitFor(t, 2*time.Second, func() bool { return s.hub.Stats().Closed[tt.reason] == 1 })
			}
		})
	}
}

// Case 005: a frame that trickles in is cut off once it has taken longer
// than the frame timeout, although every byte arrives well within the idle
// timeout.
func TestTricklingFrameIsClosedAfterTheFrameTimeout(t *testing.T) {
	const bound = 2 * time.Second
	s := start(t, func(c *testConfig) {
		c.Hub.FrameTimeout = bound
		c.Hub.IdleTimeout = 10 * time.Second
	})
	p := authed(t, s, "dev-token-alice")
	began := time.Now()
	p.SendRaw(rawHeader(0x82, 125))
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		code, text := p.ExpectClose()
		if code != ws.StatusPolicyViolation || text != "frame_timeout" {
			t.Errorf("close = %d %q, want 1008 frame_timeout", code, text)
		}
	}()
	for i := 0; ; i++ {
		select {
		case <-closed:
			if elapsed := time.Since(began); elapsed < bound {
				t.Fatalf("closed after %v, before the %v frame timeout", elapsed, bound)
			}
			return
		case <-time.After(time.Second): // one payload byte per second
			if i > 10 {
				t.Fatal("still open after 10 s of trickling")
			}
			_, _ = p.Conn.Write([]byte{'x'})
		}
	}
}

// Case 005 as filed: with the idle timeout the shorter bound, trickled bytes
// do not reset it, and the frame in progress closes with 1008.
func TestTrickledBytesDoNotResetTheIdleTimer(t *testing.T) {
	const idle = 1200 * time.Millisecond
	s := start(t, func(c *testConfig) { c.Hub.IdleTimeout = idle })
	p := authed(t, s, "dev-token-alice")
	began := time.Now()
	p.SendRaw(rawHeader(0x82, 125))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 40; i++ {
			time.Sleep(100 * time.Millisecond)
			if _, err := p.Conn.Write([]byte{'x'}); err != nil {
				return
			}
		}
	}()
	expectCloseCode(t, p, ws.StatusPolicyViolation, "frame_timeout")
	if elapsed := time.Since(began); elapsed > 3*idle {
		t.Fatalf("closed after %v: the trickle kept resetting the %v idle timer", elapsed, idle)
	}
	<-done
}

// A fragmented message keeps its start across the complete control frames
// between its fragments: pings keep the connection alive, not the message.
func TestFragmentedMessageThatNeverEndsIsClosed(t *testing.T) {
	const bound = 600 * time.Millisecond
	s := start(t, func(c *testConfig) {
		c.Hub.FrameTimeout = bound
		c.Hub.IdleTimeout = 10 * time.Second
	})
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewFrame(ws.OpBinary, false, []byte{0x81}))
	for i := 0; i < 30; i++ {
		time.Sleep(50 * time.Millisecond)
		p.SendFrame(ws.NewPingFrame([]byte("hb")))
		p.SendFrame(ws.NewFrame(ws.OpContinuation, false, []byte{0xa1}))
		if f, err := p.Read(time.Second); err != nil {
			t.Fatalf("read: %v", err)
		} else if f.OpCode == ws.OpClose {
			if code, text := ws.ParseCloseFrameData(f.Payload); code != 1008 || text != "frame_timeout" {
				t.Fatalf("close = %d %q, want 1008 frame_timeout", code, text)
			}
			return
		}
	}
	t.Fatal("a fragmented message open for 1.5 s was not closed")
}

// A frame that arrives in pieces within the bound is served normally, and
// only complete frames keep the connection alive.
func TestSlowButCompleteFrameIsServed(t *testing.T) {
	s := start(t, func(c *testConfig) { c.Hub.FrameTimeout = 2 * time.Second })
	p := authed(t, s, "dev-token-alice")
	f := binFrame("type", "publish", "topic", "demo/general/slow", "data", "ok", "msgRef", "slow")
	third := len(f) / 3
	for _, part := range [][]byte{f[:third], f[third : 2*third], f[2*third:]} {
		p.SendRaw(part)
		time.Sleep(200 * time.Millisecond)
	}
	p.ExpectFields("type", "published", "msgRef", "slow")
}

// Case 006: the 1009 close frame reaches a client that is still sending the
// rest of its oversized frame: the broker half-closes and drains instead of
// resetting the connection.
func TestOversizedFrameCloseReachesAClientStillWriting(t *testing.T) {
	s := start(t, nil)
	big := compiled(ws.NewBinaryFrame(make([]byte, 1100<<10)))
	for try := 0; try < 5; try++ {
		p := authed(t, s, "dev-token-alice")
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = p.Conn.Write(big) // fails once the broker is gone; the close must be read first
		}()
		expectCloseCode(t, p, ws.StatusMessageTooBig, "frame too large")
		_ = p.Conn.Close()
		wg.Wait()
	}
}

// The slow consumer is told: its queue is cut, and the 1008 slow_consumer
// close frame follows what the kernel already holds, once it reads again.
func TestSlowConsumerReadsItsCloseFrame(t *testing.T) {
	s := startWith(t, fastTokens(1_000_000), func(c *testConfig) {
		c.Hub.OutboundMaxBytes = 64 << 10
		c.Hub.CloseTimeout = 5 * time.Second
	})
	slow := authed(t, s, "dev-token-bob")
	subscribe(t, slow, "demo/general/flood")
	pub := authed(t, s, "dev-token-alice")
	payload := make([]byte, 8<<10)
	for i := 0; s.hub.Stats().SlowConsumers == 0; i++ {
		if i == 5000 {
			t.Fatal("no slow consumer after 5000 messages of 8 KiB")
		}
		pub.Send("type", "publish", "topic", "demo/general/flood", "data", payload, "msgRef", "m")
		pub.ExpectType("published")
	}
	messages := 0
	for {
		f, err := slow.Read(5 * time.Second)
		if err != nil {
			t.Fatalf("after %d messages: %v, want the slow_consumer close frame", messages, err)
		}
		if f.OpCode == ws.OpClose {
			if code, text := ws.ParseCloseFrameData(f.Payload); code != 1008 || text != "slow_consumer" {
				t.Fatalf("close = %d %q, want 1008 slow_consumer", code, text)
			}
			break
		}
		messages++
	}
	slow.ExpectEOF(5 * time.Second)
}
