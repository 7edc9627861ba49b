package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// The HTTP auth backend behind the real server (wire-reference.md §5.1, §4.10):
// a storm of connections makes one call per token, and a slow auth service
// holds up only the connections waiting on it.

// slowAuthService answers /validate for tokens "tok-<actor>" after delay,
// counting calls per token, with the demo grant of examples/auth.json.
type slowAuthService struct {
	delay time.Duration
	mu    sync.Mutex
	calls map[string]int
	total atomic.Int64
}

func (a *slowAuthService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		AccessToken  string `json:"accessToken"`
		ActorTokenID string `json:"actorTokenId"`
		Pattern      string `json:"pattern"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	a.total.Add(1)
	a.mu.Lock()
	a.calls[req.AccessToken]++
	a.mu.Unlock()
	time.Sleep(a.delay)
	w.Header().Set("Content-Type", "application/json")
	switch r.URL.Path {
	case "/v1/kraken/validate":
		if len(req.AccessToken) < 5 || req.AccessToken[:4] != "tok-" {
			_, _ = w.Write([]byte(`{"result":"deny"}`))
			return
		}
		fmt.Fprintf(w, `{"result":"allow","client_attrs":{"actor_token_id":%q,"project_id":"demo-project",
			"apps":[{"app_id":"demo-app","app_name":"demo","allowed_topics":[{"pattern":"demo/general/#",
			"topic":"demo-general","permission":"pubSub","room_id":"room-general","room_slug":"general"}]}]}}`,
			req.AccessToken[4:])
	case "/v1/kraken/check-room-access":
		if req.Pattern == "demo/extra/t" {
			_, _ = w.Write([]byte(`{"allow":true,"allowed_topics":[{"pattern":"demo/extra/#","permission":"subscribe","app_id":"demo-app"}]}`))
			return
		}
		_, _ = w.Write([]byte(`{"allow":false}`))
	default:
		http.NotFound(w, r)
	}
}

func startWithHTTPAuth(t *testing.T, svc http.Handler, mutate func(*testConfig)) *Server {
	t.Helper()
	ts := httptest.NewServer(svc)
	t.Cleanup(ts.Close)
	hb, err := httpauth.New(httpauth.Config{BaseURL: ts.URL + "/v1/kraken", Secret: "s", MaxInFlight: 16})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hb.Close() })
	cache := auth.NewCache(hb, 30*time.Second, 100_000, nil)
	t.Cleanup(func() { _ = cache.Close() })
	return startWith(t, cache, mutate)
}

// TestUpgradeIsAnsweredBeforeASlowAuth: with the upgrade request and the
// auth frame in one write, the 101 arrives while the auth service is still
// thinking, not with the auth reply.
func TestUpgradeIsAnsweredBeforeASlowAuth(t *testing.T) {
	svc := &slowAuthService{delay: 1500 * time.Millisecond, calls: map[string]int{}}
	s := startWithHTTPAuth(t, svc, nil)
	conn := dialTCP(t, s)
	start := time.Now()
	if _, err := conn.Write(append([]byte(upgradeRequest()), binFrame("type", "auth", "token", "tok-bob")...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v", resp, err)
	}
	if d := time.Since(start); d >= svc.delay {
		t.Fatalf("the 101 came after %v, with the auth reply (the auth service takes %v)", d, svc.delay)
	}
	f, err := ws.ReadFrame(br)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, err := msgp.ReadMapStrIntfBytes(f.Payload, nil); err != nil || m["type"] != "auth" || m["success"] != true {
		t.Fatalf("auth reply %v (%v)", m, err)
	}
}

// dialAuth opens a WebSocket with the upgrade request and the auth frame in
// one write, as an SDK does on reconnect, and returns the auth reply's
// success flag. It runs on any goroutine: errors are returned, not fatal.
func dialAuth(addr, token string) (net.Conn, bool, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, false, err
	}
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	msg := append([]byte(upgradeRequest()), binFrame("type", "auth", "token", token)...)
	if _, err := conn.Write(msg); err != nil {
		conn.Close()
		return nil, false, err
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		conn.Close()
		return nil, false, fmt.Errorf("upgrade: %v", err)
	}
	f, err := ws.ReadFrame(br)
	if err != nil {
		conn.Close()
		return nil, false, err
	}
	m, _, err := msgp.ReadMapStrIntfBytes(f.Payload, nil)
	if err != nil {
		conn.Close()
		return nil, false, err
	}
	ok, _ := m["success"].(bool)
	_ = conn.SetDeadline(time.Time{})
	return conn, ok, nil
}

// A reconnect storm of 5,000 connections sharing 50 tokens, against an auth
// service taking 50 ms a call, makes at most one call per token in the cache
// window, and a subscriber keeps getting a publisher's messages meanwhile.
func TestReconnectStormMakesOneAuthCallPerToken(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 5,000 sockets")
	}
	const conns, tokens = 5000, 50
	svc := &slowAuthService{delay: 50 * time.Millisecond, calls: map[string]int{}}
	s := startWithHTTPAuth(t, svc, func(c *testConfig) {
		c.RateLimit = 1000
		c.Hub.HandshakeTimeout = time.Minute
		c.Hub.AuthTimeout = time.Minute
	})
	addr := s.Addr().String()
	bob := authed(t, s, "tok-bob")
	subscribe(t, bob, "demo/general/live")
	alice := authed(t, s, "tok-alice")
	before := svc.total.Load()

	stop := make(chan struct{})
	var flowed atomic.Int64
	var longest atomic.Int64
	flow := make(chan error, 1)
	go func() { // the publisher and subscriber that must not be held up
		for i := 0; ; i++ {
			select {
			case <-stop:
				flow <- nil
				return
			default:
			}
			sent := time.Now()
			alice.SendRaw(binFrame("type", "publish", "topic", "demo/general/live", "data", i))
			f, err := bob.Read(5 * time.Second)
			if err != nil || f.Type() != "message" {
				flow <- fmt.Errorf("message %d: %v %s", i, err, f)
				return
			}
			if d := time.Since(sent).Nanoseconds(); d > longest.Load() {
				longest.Store(d)
			}
			flowed.Add(1)
			time.Sleep(5 * time.Millisecond)
		}
	}()

	var wg sync.WaitGroup
	errs := make(chan error, conns)
	opened := make(chan net.Conn, conns)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, ok, err := dialAuth(addr, fmt.Sprintf("tok-actor%d", i%tokens))
			switch {
			case err != nil:
				errs <- err
			case !ok:
				errs <- fmt.Errorf("connection %d refused", i)
			}
			if c != nil {
				opened <- c
			}
		}()
	}
	wg.Wait()
	close(stop)
	close(errs)
	close(opened)
	for c := range opened {
		defer c.Close()
	}
	for err := range errs {
		t.Fatal(err)
	}
	if err := <-flow; err != nil {
		t.Fatalf("the live pair was held up: %v", err)
	}
	svc.mu.Lock()
	defer svc.mu.Unlock()
	for i := 0; i < tokens; i++ {
		if n := svc.calls[fmt.Sprintf("tok-actor%d", i)]; n != 1 {
			t.Errorf("token %d: %d calls, want 1", i, n)
		}
	}
	if got := svc.total.Load() - before; got != tokens {
		t.Errorf("%d auth calls for %d connections, want %d", got, conns, tokens)
	}
	t.Logf("%d messages flowed during the storm, slowest round trip %v", flowed.Load(), time.Duration(longest.Load()))
	if flowed.Load() == 0 {
		t.Fatal("no message flowed during the storm")
	}
}

// The subscribe cache-miss fallback widens a live grant when the service
// allows the pattern, and denies the rest (wire-reference.md §4.10).
func TestSubscribeOutsideTheGrantAsksTheAuthService(t *testing.T) {
	svc := &slowAuthService{calls: map[string]int{}}
	s := startWithHTTPAuth(t, svc, nil)
	bob := authed(t, s, "tok-bob", "protocolVersion", 2)
	subscribe(t, bob, "demo/extra/t")
	bob.Send("type", "subscribe", "topic", "demo/other/t")
	bob.ExpectFields("type", "error", "code", 42940, "topic", "demo/other/t")
	// The widened grant is the connection's: a publish needs its own rule.
	bob.Send("type", "publish", "topic", "demo/extra/t", "data", 1, "msgRef", "p")
	bob.ExpectFields("type", "error", "code", 42940, "msgRef", "p")
}

// An auth service that is down answers connection_failed at once, and the
// socket stays open for a retry (wire-reference.md §2.4).
func TestAuthServiceDownAnswersConnectionFailed(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	hb, err := httpauth.New(httpauth.Config{BaseURL: url, Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hb.Close() })
	s := startWith(t, auth.NewCache(hb, 30*time.Second, 100, nil), nil)
	p := testpeer.Dial(t, s.Addr().String())
	p.Send("type", "auth", "token", "tok-bob")
	p.ExpectFields("type", "auth", "success", false, "error", "connection_failed")
	expectPong(t, p)
}
