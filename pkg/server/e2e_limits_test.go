package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Rate, size, error-frame and frame limits (wire-reference.md §6.10, §6.11, §1.2;
// decisions.md OQ-6, OQ-7, OQ-42, OQ-67).

// publishBurst sends n publishes with msgRefs "0".."n-1" in one write and
// returns the n replies (each publish gets `published` or an error).
func publishBurst(t *testing.T, p *testpeer.Peer, topic string, n int) []testpeer.Frame {
	t.Helper()
	var burst []byte
	for i := 0; i < n; i++ {
		burst = append(burst, binFrame("type", "publish", "topic", topic, "data", i, "msgRef", itoa(i))...)
	}
	p.SendRaw(burst)
	replies := make([]testpeer.Frame, n)
	for i := range replies {
		replies[i] = p.Expect()
	}
	return replies
}

func TestRateLimitFromTheTokenRejectsExcessPublishes(t *testing.T) {
	const limit, sent = 5, 12
	s := startWith(t, fastTokens(limit), nil)
	p := authed(t, s, "dev-token-alice")
	published := 0
	for i, f := range publishBurst(t, p, "demo/general/rate", sent) {
		switch f.Type() {
		case "published":
			published++
			if f.Map["msgRef"] != itoa(i) {
				t.Fatalf("reply %d is for %v: %s", i, f.Map["msgRef"], f)
			}
		case "error":
			want := map[string]any{"type": "error", "code": 42910, "error": "rate_limit_exceeded",
				"topic": "demo/general/rate", "msgRef": itoa(i), "limit": limit}
			if !sameJSON(retryAfterChecked(t, f.Map), want) {
				t.Fatalf("reply %d = %s, want %v", i, f, want)
			}
			if i < limit {
				t.Fatalf("publish %d rejected: the first %d of any window pass", i, limit)
			}
		default:
			t.Fatalf("reply %d = %s, want published or an error", i, f)
		}
	}
	// A burst may straddle a second boundary: between limit and 2*limit pass.
	if published < limit || published > 2*limit {
		t.Fatalf("%d of %d publishes passed, want between %d and %d", published, sent, limit, 2*limit)
	}
}

func TestRateLimitDefaultsTo50PerSecond(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/rate")
	alice := authed(t, s, "dev-token-alice")
	alignToSecond()
	replies := publishBurst(t, alice, "demo/general/rate", 51)
	var published, rejected int
	for _, f := range replies {
		switch {
		case f.Type() == "published":
			published++
		case f.Type() == "error" && f.Map["error"] == "rate_limit_exceeded":
			rejected++
			if f.Map["msgRef"] != "50" {
				t.Fatalf("rejected %s, want the 51st (msgRef 50)", f)
			}
		default:
			t.Fatalf("unexpected reply %s", f)
		}
	}
	// The message timestamps tell which wall-clock seconds the server used.
	seconds := map[int64]bool{}
	for i := 0; i < published; i++ {
		m := bob.ExpectType("message")
		seconds[asInt(t, m.Map["timestamp"])/1000] = true
	}
	if len(seconds) == 1 && (published != 50 || rejected != 1) {
		t.Fatalf("within one second: %d published, %d rejected; want 50 and 1", published, rejected)
	}
	if published < 50 {
		t.Fatalf("%d published, want at least 50", published)
	}
}

// binOfSize returns a msgpack bin whose encoded size is exactly n bytes.
func binOfSize(n int) []byte {
	for body := n - 2; body >= 0; body-- {
		if b := msgp.AppendBytes(nil, bytes.Repeat([]byte{'x'}, body)); len(b) == n {
			return b
		}
	}
	panic("no bin of that size")
}

func TestMessageTooLargeUsesTheTokenLimit(t *testing.T) {
	ts := demoTokensWith(func(g *auth.Grant) { g.MaxMessageSize = 1000 })
	s := startWith(t, ts, nil)
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "publish", "topic", "demo/general/big", "data", testpeer.Raw(binOfSize(1000)), "msgRef", "fits")
	p.ExpectFields("type", "published", "msgRef", "fits")
	p.Send("type", "publish", "topic", "demo/general/big", "data", testpeer.Raw(binOfSize(1001)), "msgRef", "over")
	f := p.ExpectFields("type", "error", "code", 42930, "error", "message_too_large",
		"maxSizeBytes", 1000, "topic", "demo/general/big", "msgRef", "over")
	if len(f.Map) != 6 {
		t.Fatalf("message_too_large has keys beyond §3.4: %s", f)
	}
}

func TestMessageTooLargeUsesTheServerLimitWhenTheTokenHasNone(t *testing.T) {
	s := start(t, func(c *testConfig) { c.MaxMessageSize = 500 })
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "publish", "topic", "demo/general/big", "data", testpeer.Raw(binOfSize(501)))
	p.ExpectFields("type", "error", "code", 42930, "error", "message_too_large", "maxSizeBytes", 500)
}

func TestMessageTooLargeNeverExceedsTheCeiling(t *testing.T) {
	ts := demoTokensWith(func(g *auth.Grant) { g.MaxMessageSize = 2_000_000 })
	s := startWith(t, ts, nil)
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "publish", "topic", "demo/general/big", "data", testpeer.Raw(binOfSize(921601)))
	p.ExpectFields("type", "error", "code", 42930, "error", "message_too_large", "maxSizeBytes", 921600)
}

func TestErrorFramesAreCappedPerSecond(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	garbage := compiled(ws.NewBinaryFrame([]byte{0xc1}))
	var burst []byte
	for i := 0; i < 30; i++ {
		burst = append(burst, garbage...)
	}
	alignToSecond()
	sentAt := time.Now()
	p.SendRaw(burst)
	errorsSeen := 0
	var lastAt time.Time
	for {
		f, err := p.Read(300 * time.Millisecond)
		if err != nil {
			break
		}
		if f.Type() != "error" {
			t.Fatalf("unexpected frame %s", f)
		}
		errorsSeen++
		lastAt = time.Now()
	}
	// Client and server share the clock: if the burst was sent and the last
	// error received within one second, the server answered in that second.
	if lastAt.Unix() == sentAt.Unix() && errorsSeen != 10 {
		t.Fatalf("%d error frames in one second, want 10", errorsSeen)
	}
	if errorsSeen < 10 || errorsSeen > 20 {
		t.Fatalf("%d error frames for 30 bad frames, want 10 per second", errorsSeen)
	}
	expectPong(t, p)
}

func TestFrameDeclaringMoreThanTheCapClosesWith1009(t *testing.T) {
	s := start(t, func(c *testConfig) { c.MaxFrameSize = 4096 })
	p := authed(t, s, "dev-token-alice")
	// Only the header: the payload never comes, the server must not wait.
	p.SendRaw(rawHeader(0x82, 4097))
	expectCloseCode(t, p, ws.StatusMessageTooBig, "*")
	p.ExpectEOF(5 * time.Second)
}

func TestFrameDeclaringAHugeLengthClosesWith1009(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendRaw(rawHeader(0x82, 1<<40))
	expectCloseCode(t, p, ws.StatusMessageTooBig, "*")
}

func TestFrameAtTheCapIsAccepted(t *testing.T) {
	const limit = 4096
	s := start(t, func(c *testConfig) { c.MaxFrameSize = limit })
	p := authed(t, s, "dev-token-alice")
	var msg []byte
	for n := limit; len(msg) != limit; n-- {
		msg = testpeer.Map("type", "publish", "topic", "demo/general/cap", "data", testpeer.Raw(binOfSize(n)), "msgRef", "cap")
		if len(msg) < limit {
			t.Fatalf("cannot build a %d-byte message", limit)
		}
	}
	p.SendBinary(msg)
	p.ExpectFields("type", "published", "msgRef", "cap")
}
