package server

import (
	"maps"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Refusals that say what to do (docs/protocol.md, "Refusals"): extra map
// keys the SDKs ignore (wire-reference.md §12), read here by a strict decoder.

// expectStrictError reads the next frame, decodes it strictly and checks it
// is an error frame with the given fields.
func expectStrictError(t *testing.T, p *testpeer.Peer, kv ...any) map[string]any {
	t.Helper()
	return expectStrict(t, p, append([]any{"type", "error"}, kv...)...)
}

// expectStrict reads the next frame with a decoder that refuses a str
// that is not UTF-8 and checks the given key/value pairs.
func expectStrict(t *testing.T, p *testpeer.Peer, kv ...any) map[string]any {
	t.Helper()
	f := p.Expect()
	m := strictDecode(t, f.Payload)
	for i := 0; i+1 < len(kv); i += 2 {
		if k := kv[i].(string); !sameJSON(m[k], kv[i+1]) {
			t.Fatalf("%s = %v, want %v in %v", k, m[k], kv[i+1], m)
		}
	}
	return m
}

// retryAfterChecked checks that the rate-limit error m says when to retry,
// 1 to 1000 ms on, and returns it without retryAfterMs, for comparing the
// rest.
func retryAfterChecked(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	v, ok := m["retryAfterMs"]
	if !ok {
		t.Fatalf("no retryAfterMs in %v", m)
	}
	if ms := asInt(t, v); ms < 1 || ms > 1000 {
		t.Fatalf("retryAfterMs = %d, want 1..1000", ms)
	}
	rest := maps.Clone(m)
	delete(rest, "retryAfterMs")
	return rest
}

// TestRateLimitErrorSaysTheLimitAndWhenToRetry: a publish over the
// token's rate limit gets 42910 with limit (its publishes per second) and
// retryAfterMs (until the window opens again, at most a second); a
// publish sent after waiting that long is taken.
func TestRateLimitErrorSaysTheLimitAndWhenToRetry(t *testing.T) {
	s := startWith(t, demoTokensWith(func(g *auth.Grant) { g.RateLimit = 3 }), nil)
	p := authed(t, s, "dev-token-alice", "protocolVersion", 2)
	var burst []byte
	for i := 0; i < 4; i++ {
		burst = append(burst, binFrame("type", "publish", "topic", "demo/general/rate", "data", i, "msgRef", itoa(i))...)
	}
	alignToSecond()
	sent := time.Now()
	p.SendRaw(burst)
	for i := 0; i < 3; i++ {
		p.ExpectFields("type", "published", "msgRef", itoa(i))
	}
	m := expectStrictError(t, p, "code", 42910, "error", "rate_limit_exceeded", "topic", "demo/general/rate",
		"msgRef", "3", "limit", 3)
	wait := asInt(t, m["retryAfterMs"])
	if wait < 1 || wait > 1000 {
		t.Fatalf("retryAfterMs = %d, want 1..1000", wait)
	}
	if until := time.Until(sent.Truncate(time.Second).Add(time.Second)); time.Duration(wait)*time.Millisecond < until-50*time.Millisecond {
		t.Fatalf("retryAfterMs = %d, but the window opens again in %v", wait, until)
	}
	time.Sleep(time.Duration(wait) * time.Millisecond)
	p.Send("type", "publish", "topic", "demo/general/rate", "data", 4, "msgRef", "after")
	p.ExpectFields("type", "published", "msgRef", "after")
}

// TestErrorFramesEchoValidBoundedUTF8: an error frame repeats the
// client's topic and msgRef as valid UTF-8 of at most 1024 bytes (the
// longest valid topic, echoed exactly), so a strict decoder (Python's
// msgpack) reads it: invalid bytes become U+FFFD, a 5 KB topic is cut at a
// character and ends with "…". The log lines carry the same bounded form.
func TestErrorFramesEchoValidBoundedUTF8(t *testing.T) {
	s, logs := observed(t, nil)
	p := authed(t, s, "dev-token-alice", "protocolVersion", 2)
	const notUTF8 = "demo/general/\xff\xfe"
	const shown = "demo/general/\uFFFD\uFFFD"
	long := "demo/general/" + strings.Repeat("é", 2500) // 5013 bytes
	cut := long[:1021] + "…"

	p.Send("type", "subscribe", "topic", notUTF8)
	expectStrictError(t, p, "error", "invalid_topic", "topic", shown, "detail", "topic: topic is not valid UTF-8")
	p.Send("type", "publish", "topic", notUTF8, "data", 1, "msgRef", "r\xc3")
	expectStrictError(t, p, "error", "invalid_topic", "topic", shown, "msgRef", "r\uFFFD")
	p.Send("type", "subscribe", "topic", long)
	expectStrictError(t, p, "error", "invalid_topic", "topic", cut, "detail", "topic: topic too long")
	p.Send("type", "publish", "topic", long, "data", 1, "msgRef", "long")
	expectStrictError(t, p, "error", "invalid_topic", "topic", cut, "msgRef", "long")
	// A valid topic of the greatest length comes back exactly.
	longest := "demo/other/" + strings.Repeat("x", 1024-len("demo/other/"))
	p.Send("type", "subscribe", "topic", longest)
	expectStrictError(t, p, "code", 42940, "error", "unknown_topic", "topic", longest)

	// Answers that are not errors echo the same way: an unsubscribe and a
	// setFilters are answered whatever topic they name, a publish's ack
	// repeats its msgRef.
	p.Send("type", "unsubscribe", "topic", notUTF8)
	expectStrict(t, p, "type", "unsubscribed", "topic", shown)
	p.Send("type", "unsubscribe", "topic", long)
	expectStrict(t, p, "type", "unsubscribed", "topic", cut)
	p.Send("type", "setFilters", "topic", notUTF8, "filters", []any{})
	expectStrictError(t, p, "error", "not_subscribed", "topic", shown)
	p.Send("type", "subscribe", "topic", "demo/general/ok")
	p.ExpectFields("type", "subscribed")
	p.Send("type", "publish", "topic", "demo/general/ok", "data", 1, "msgRef", "r\xc3"+strings.Repeat("x", 5000))
	expectStrict(t, p, "type", "published", "msgRef", "r\uFFFD"+strings.Repeat("x", 1024-len("r\uFFFD")-len("…"))+"…")

	for _, e := range append(waitLog(t, logs, "subscribe refused", 3), waitLog(t, logs, "publish refused", 2)...) {
		topic, _ := e.ContextMap()["topic"].(string)
		if !utf8.ValidString(topic) || len(topic) > wire.MaxEcho {
			t.Errorf("%q logs a topic of %d bytes, valid UTF-8 %v", e.Message, len(topic), utf8.ValidString(topic))
		}
	}
}
