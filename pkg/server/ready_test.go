package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/node"
)

// flakyBroker is a single-node broker with a Ready method, as a backend
// between nodes has one.
type flakyBroker struct {
	local.Broker
	down atomic.Bool
}

func (b *flakyBroker) Start(ctx context.Context, h broker.Handler) error { return nil }

func (b *flakyBroker) Ready() error {
	if b.down.Load() {
		return errors.New("not connected to the bus")
	}
	return nil
}

// TestReadyReportsFailingChecks: GET /ready on the WebSocket port answers
// 200 {"status":"ready"} while every check holds, and 503 naming the
// failing checks (a broken token file, a disconnected broker backend)
// without their details; /health stays ok throughout.
func TestReadyReportsFailingChecks(t *testing.T) {
	fb := &flakyBroker{}
	s := start(t, func(c *testConfig) { c.Broker = fb })
	var tokenErr atomic.Pointer[error]
	s.node.AddReadyCheck("token_file", func() error {
		if p := tokenErr.Load(); p != nil {
			return *p
		}
		return nil
	})
	get := func(path string) (int, string) {
		resp, body := httpExchange(t, s, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		return resp.StatusCode, body
	}
	if code, body := get("/ready"); code != 200 || body != `{"status":"ready"}` {
		t.Fatalf("ready: %d %s", code, body)
	}
	secret := errors.New("parse error at line 3 of /etc/kraken/auth.json")
	tokenErr.Store(&secret)
	fb.down.Store(true)
	code, body := get("/ready")
	if code != 503 || body != `{"status":"not_ready","failing":["broker","token_file"]}` {
		t.Fatalf("not ready: %d %s", code, body)
	}
	if strings.Contains(body, "auth.json") {
		t.Errorf("the public /ready shows a reason: %s", body)
	}
	if code, body := get("/health"); code != 200 || body != `{"status":"ok"}` {
		t.Fatalf("health while not ready: %d %s", code, body)
	}
	detail := node.ReadyJSON(s.node.NotReady(), true)
	if !strings.Contains(detail, `"reasons":{"broker":"not connected to the bus","token_file":"parse error at line 3 of /etc/kraken/auth.json"}`) {
		t.Errorf("detailed answer %s", detail)
	}
	st := s.Stats()
	if st.Handshakes[HandshakeReady] != 2 || st.Handshakes[HandshakeHealth] != 1 {
		t.Errorf("handshakes %v", st.Handshakes)
	}
}
