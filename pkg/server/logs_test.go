package server

import (
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// authedAfterRefusal opens a connection, has a wrong token refused, then
// authenticates as bob.
func authedAfterRefusal(t *testing.T, s *Server) *testpeer.Peer {
	t.Helper()
	p := testpeer.Dial(t, s.Addr().String())
	p.Send("type", "auth", "token", "wrong-token")
	p.ExpectFields("type", "auth", "success", false, "error", "access_denied")
	p.Auth("dev-token-bob")
	return p
}

// observed starts a server whose logs a test reads, at debug.
func observed(t *testing.T, mutate func(*testConfig)) (*Server, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	s := start(t, func(c *testConfig) {
		c.Logger = zap.New(core)
		if mutate != nil {
			mutate(c)
		}
	})
	return s, logs
}

// waitLog waits for a line whose message is msg and returns it.
func waitLog(t *testing.T, logs *observer.ObservedLogs, msg string, n int) []observer.LoggedEntry {
	t.Helper()
	var got []observer.LoggedEntry
	waitFor(t, 5*time.Second, func() bool {
		got = logs.FilterMessage(msg).All()
		return len(got) >= n
	})
	return got
}

// checkFields fails unless entry has each key with the value want (or,
// for "*", any value).
func checkFields(t *testing.T, e observer.LoggedEntry, kv ...any) {
	t.Helper()
	ctx := e.ContextMap()
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		got, ok := ctx[k]
		if !ok || (kv[i+1] != "*" && got != kv[i+1]) {
			t.Errorf("%q: %s = %v (present %v), want %v; fields %v", e.Message, k, got, ok, kv[i+1], ctx)
		}
	}
}

// TestRefusalsAreLoggedWithTheirReason: a refused token, a rate-limited
// publish and a subscribe outside the grants are each logged with the
// reason, the code, the connection id, the peer's address and the actor
// (never the token): the first of a kind on a connection at info, the
// next at debug. Connections are logged opening and closing, at debug,
// with the close reason and the duration.
func TestRefusalsAreLoggedWithTheirReason(t *testing.T) {
	s, logs := observed(t, func(c *testConfig) { c.Auth = demoTokensWith(func(g *auth.Grant) { g.RateLimit = 1 }) })

	p := authedAfterRefusal(t, s)
	refused := waitLog(t, logs, "auth refused", 1)[0]
	if refused.Level != zapcore.InfoLevel {
		t.Errorf("auth refused at %v, want info", refused.Level)
	}
	checkFields(t, refused, "reason", "access_denied", "conn_id", "*", "remote_addr", "*", "attempt", int64(1))
	for _, e := range logs.All() {
		for k, v := range e.ContextMap() {
			if s, ok := v.(string); ok && strings.Contains(s, "wrong-token") {
				t.Errorf("%q logs the token in %s", e.Message, k)
			}
		}
	}

	alignToSecond()
	for i := 0; i < 3; i++ {
		p.Send("type", "publish", "topic", "demo/general/x", "data", i, "msgRef", itoa(i))
	}
	p.ExpectType("published")
	p.ExpectFields("type", "error", "error", "rate_limit_exceeded")
	p.ExpectFields("type", "error", "error", "rate_limit_exceeded")
	lines := waitLog(t, logs, "publish refused", 2)
	if lines[0].Level != zapcore.InfoLevel || lines[1].Level != zapcore.DebugLevel {
		t.Errorf("publish refused at %v then %v, want info then debug", lines[0].Level, lines[1].Level)
	}
	checkFields(t, lines[0], "reason", "rate", "code", int64(42910), "error", "rate_limit_exceeded",
		"conn_id", "*", "remote_addr", p.Conn.LocalAddr().String(), "actor_token_id", "bob", "topic", "demo/general/x")

	p.Send("type", "subscribe", "topic", "other/room/x")
	p.ExpectType("error")
	sub := waitLog(t, logs, "subscribe refused", 1)[0]
	if sub.Level != zapcore.InfoLevel {
		t.Errorf("subscribe refused at %v, want info", sub.Level)
	}
	checkFields(t, sub, "reason", "grant", "code", int64(42940), "actor_token_id", "bob", "topic", "other/room/x")

	opened := waitLog(t, logs, "connection opened", 1)[0]
	if opened.Level != zapcore.DebugLevel {
		t.Errorf("connection opened at %v, want debug", opened.Level)
	}
	checkFields(t, opened, "conn_id", "*", "remote_addr", "*")
	_ = p.Conn.Close()
	closed := waitLog(t, logs, "connection closed", 1)[0]
	if closed.Level != zapcore.DebugLevel {
		t.Errorf("connection closed at %v, want debug", closed.Level)
	}
	checkFields(t, closed, "reason", "peer_closed", "transport", "websocket", "duration", "*",
		"actor_token_id", "bob", "remote_addr", p.Conn.LocalAddr().String())
}

// TestPolicyCloseIsLoggedAtInfo: a connection the broker closes for what
// its client did (here five failed auth attempts) is logged at info with
// the reason, once.
func TestPolicyCloseIsLoggedAtInfo(t *testing.T) {
	s, logs := observed(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	for i := 0; i < 5; i++ {
		p.Send("type", "auth", "token", "wrong-token")
		p.ExpectFields("type", "auth", "success", false)
	}
	if code, _ := p.ExpectClose(); code != 4004 {
		t.Fatalf("close %d, want 4004", code)
	}
	if n := len(waitLog(t, logs, "auth refused", 5)); n != 5 {
		t.Errorf("%d auth refused lines, want 5", n)
	}
	closed := waitLog(t, logs, "connection closed", 1)
	if len(closed) != 1 || closed[0].Level != zapcore.InfoLevel {
		t.Fatalf("connection closed lines %v", closed)
	}
	checkFields(t, closed[0], "reason", "auth_failures", "transport", "websocket")
}

// TestSubscriptionCapRefusalsAreCountedAndLogged: the subscriptions a
// connection's worker refuses past MaxSubscriptions are counted under
// too_many_subscriptions and logged like the refusals of the reader: the
// connection's first at info with the reason, the error, the topic and the
// connection's fields, the next at debug; another connection's first at
// info again. A subscribe without a topic is counted as bad_request.
func TestSubscriptionCapRefusalsAreCountedAndLogged(t *testing.T) {
	s, logs := observed(t, func(c *testConfig) { c.Hub.MaxSubscriptions = 1 })
	refused := func() uint64 {
		return s.proto.Stats().SubscribeRefused[session.RefuseTooManySubscriptions]
	}
	p := authed(t, s, "dev-token-bob")
	subscribe(t, p, "demo/general/a")
	for _, topic := range []string{"demo/general/b", "demo/general/c"} {
		p.Send("type", "subscribe", "topic", topic)
		p.ExpectFields("type", "error", "error", "too_many_subscriptions", "topic", topic)
	}
	if n := refused(); n != 2 {
		t.Errorf("SubscribeRefused[too_many_subscriptions] = %d, want 2", n)
	}
	lines := waitLog(t, logs, "subscribe refused", 2)
	if lines[0].Level != zapcore.InfoLevel || lines[1].Level != zapcore.DebugLevel {
		t.Errorf("subscribe refused at %v then %v, want info then debug", lines[0].Level, lines[1].Level)
	}
	checkFields(t, lines[0], "reason", "too_many_subscriptions", "error", "too_many_subscriptions",
		"topic", "demo/general/b", "detail", session.DetailTooManySubscriptions, "conn_id", "*",
		"remote_addr", p.Conn.LocalAddr().String(), "actor_token_id", "bob")
	checkFields(t, lines[1], "reason", "too_many_subscriptions", "topic", "demo/general/c")

	q := authed(t, s, "dev-token-alice")
	subscribe(t, q, "demo/general/a")
	q.Send("type", "subscribe", "topic", "demo/general/b")
	q.ExpectFields("type", "error", "error", "too_many_subscriptions")
	third := waitLog(t, logs, "subscribe refused", 3)[2]
	if third.Level != zapcore.InfoLevel {
		t.Errorf("another connection's first refusal at %v, want info", third.Level)
	}
	checkFields(t, third, "actor_token_id", "alice")
	if n := refused(); n != 3 {
		t.Errorf("SubscribeRefused[too_many_subscriptions] = %d, want 3", n)
	}

	q.Send("type", "subscribe")
	q.ExpectFields("type", "error", "error", "bad_request", "detail", "subscribe requires topic")
	if n := s.proto.Stats().SubscribeRefused[session.RefuseBadRequest]; n != 1 {
		t.Errorf("SubscribeRefused[bad_request] = %d, want 1", n)
	}
	checkFields(t, waitLog(t, logs, "subscribe refused", 4)[3], "reason", "bad_request", "actor_token_id", "alice")
}
