package session

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// lineEncoding is a hub.Encoding of text lines, so what a connection got
// reads as a transcript: "message <topic>" per delivery.
type lineEncoding struct{}

func (lineEncoding) ID() uint8                      { return 7 }
func (lineEncoding) Message(m *wire.Message) []byte { return []byte("message " + m.Topic + "\n") }
func (lineEncoding) Close(d disconnect.Disconnect) []byte {
	return []byte("close " + d.Reason.String() + "\n")
}
func (lineEncoding) HandshakeTimeout() []byte { return nil }

// testConn is an in-memory transport of one connection, both its
// hub.Transport and its Sink: every reply is one line, its kind and, for
// errors, the error.
type testConn struct {
	State
	mu     sync.Mutex
	out    bytes.Buffer
	closed disconnect.Reason
}

func (t *testConn) Writev(bufs [][]byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, b := range bufs {
		t.out.Write(b)
		n += len(b)
	}
	return n, nil
}
func (t *testConn) CloseWrite() error      { return nil }
func (t *testConn) Close() error           { return nil }
func (t *testConn) Encoding() hub.Encoding { return lineEncoding{} }

func (t *testConn) Frame(r Reply) []byte {
	line := r.Kind.String()
	if r.Err != nil {
		line += " " + r.Err.Err
	}
	return []byte(line + "\n")
}

func (t *testConn) Write(r Reply) { t.Conn.WriteFlush(t.Frame(r)) }

func (t *testConn) Disconnect(d disconnect.Disconnect) {
	t.mu.Lock()
	t.closed = d.Reason
	t.mu.Unlock()
	t.Conn.CloseNow(d)
}

// expect waits until the connection got want, line by line.
func (t *testConn) expect(tb testing.TB, want ...string) {
	tb.Helper()
	joined := strings.Join(want, "\n") + "\n"
	deadline := time.Now().Add(2 * time.Second)
	for {
		t.mu.Lock()
		got := t.out.String()
		t.mu.Unlock()
		if got == joined {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("transcript = %q, want %q", got, joined)
		}
		time.Sleep(time.Millisecond)
	}
}

type grants map[string]*auth.Grant

func (g grants) Validate(_ context.Context, token string) (*auth.Grant, error) {
	if gr, ok := g[token]; ok {
		return gr, nil
	}
	return nil, auth.ErrDenied
}

func (g grants) Revalidate(context.Context, string) (*auth.Grant, error) { return nil, auth.ErrDenied }

func newProtocol(t *testing.T) *Protocol {
	t.Helper()
	return newProtocolWith(t, Config{Auth: grants{"tok": {ActorTokenID: "bob", ProjectID: "p",
		Rules: acl.Rules{{Pattern: "demo/#", Topic: "demo", Permission: acl.PermPubSub, AppID: "app"}}}}})
}

// newProtocolWith starts a Protocol of cfg on a hub of two workers, stopped
// when the test ends; cfg.Auth must take the token "tok" (authed).
func newProtocolWith(t *testing.T, cfg Config) *Protocol {
	t.Helper()
	p, err := started(cfg, hub.Config{Workers: 2, Tick: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shutdown(context.Background(), p) })
	return p
}

// started builds a Protocol of cfg on a hub of hc, as pkg/node does, and
// starts the hub and the broker.
func started(cfg Config, hc hub.Config) (*Protocol, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	h := hub.New(p.HubConfig(hc))
	p.Attach(h, resume.New(p.ResumeConfig(hc.IdleTimeout), h))
	h.Start()
	return p, p.Broker().Start(context.Background(), p.Handler())
}

// shutdown stops p as pkg/node does: its calls, the connections and the
// workers, then the broker.
func shutdown(ctx context.Context, p *Protocol) error {
	p.Stop()
	err := p.Hub().Shutdown(ctx)
	_ = p.Broker().Close()
	return err
}

func (p *Protocol) connect(t *testing.T) *testConn {
	t.Helper()
	tc := &testConn{}
	tc.Conn = p.Hub().Register(tc)
	tc.Conn.SetPhase(hub.PhaseOpen)
	t.Cleanup(func() { p.Hub().Closed(tc.Conn) })
	return tc
}

func (p *Protocol) authed(t *testing.T) *testConn {
	t.Helper()
	tc := p.connect(t)
	p.Handle(&tc.State, tc, &wire.Command{Type: "auth", HasToken: true, TokenIsString: true, Token: "tok"})
	tc.expect(t, "authOK")
	tc.out.Reset()
	return tc
}

func TestReplyKindsInRequestOrder(t *testing.T) {
	p := newProtocol(t)
	tc := p.authed(t)
	p.Handle(&tc.State, tc, &wire.Command{Type: "subscribe", HasTopic: true, Topic: "demo/a"})
	p.Handle(&tc.State, tc, &wire.Command{Type: "subscribe", HasTopic: true, Topic: "other/a"})
	p.Handle(&tc.State, tc, &wire.Command{Type: "publish", HasTopic: true, Topic: "demo/a", MsgRef: "r1", Echo: true})
	p.Handle(&tc.State, tc, &wire.Command{Type: "unsubscribe", HasTopic: true, Topic: "demo/a"})
	tc.expect(t, "subscribed", "error not_authorized", "published", "message demo/a", "unsubscribed")
}

func TestCommandBeforeAuthIsRefused(t *testing.T) {
	p := newProtocol(t)
	tc := p.connect(t)
	p.Handle(&tc.State, tc, &wire.Command{Type: "subscribe", HasTopic: true, Topic: "demo/a"})
	tc.expect(t, "error not_authenticated")
}

func TestAuthFailuresDisconnect(t *testing.T) {
	p := newProtocol(t)
	tc := p.connect(t)
	for range p.Config().MaxAuthFailures {
		p.Handle(&tc.State, tc, &wire.Command{Type: "auth", HasToken: true, TokenIsString: true, Token: "bad"})
	}
	lines := []string{}
	for range p.Config().MaxAuthFailures {
		lines = append(lines, "authFailed access_denied")
	}
	tc.expect(t, append(lines, "close auth_failures")...)
	if tc.closed != disconnect.AuthFailures {
		t.Fatalf("closed for %v, want auth_failures", tc.closed)
	}
}
