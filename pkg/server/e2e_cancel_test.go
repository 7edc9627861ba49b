package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
)

// A backend call made for a connection is cancelled when the connection
// closes or the node shuts down (docs/ARCHITECTURE.md "Who owns what"):
// the auth service sees its request's context end, well before the call's
// own timeout (5 s for an auth, 2 s for a room-access check).

// cancelBound is how soon after the close the service must see the
// cancellation: below the 2 s room-access timeout, so a call that merely
// timed out fails the test.
const cancelBound = 1500 * time.Millisecond

// holdingAuthService holds every /validate of the token "tok-hold" and
// every /check-room-access until the request's context is done, telling
// arrived when one comes in and cancelled when its context ends; other
// tokens are answered at once, as slowAuthService answers them.
type holdingAuthService struct {
	answer    *slowAuthService
	arrived   chan string    // the path of each request held, on arrival
	cancelled chan cancelled // its path again, and when its context ended
}

// cancelled is a held request whose context ended, at at.
type cancelled struct {
	path string
	at   time.Time
}

func newHoldingAuthService() *holdingAuthService {
	return &holdingAuthService{answer: &slowAuthService{calls: map[string]int{}},
		arrived: make(chan string, 16), cancelled: make(chan cancelled, 16)}
}

func (h *holdingAuthService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req struct {
		AccessToken string `json:"accessToken"`
	}
	_ = json.Unmarshal(body, &req)
	hold := r.URL.Path == "/v1/kraken/check-room-access" ||
		r.URL.Path == "/v1/kraken/validate" && req.AccessToken == "tok-hold"
	if !hold {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.answer.ServeHTTP(w, r)
		return
	}
	h.arrived <- r.URL.Path
	<-r.Context().Done()
	h.cancelled <- cancelled{path: r.URL.Path, at: time.Now()}
}

// waitHeld waits for a held request to path to arrive.
func (h *holdingAuthService) waitHeld(t *testing.T, path string) {
	t.Helper()
	select {
	case got := <-h.arrived:
		if got != path {
			t.Fatalf("held %s, want %s", got, path)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no request to %s reached the auth service", path)
	}
}

// waitCancelled waits for the held request to path to be cancelled, at
// most cancelBound after since.
func (h *holdingAuthService) waitCancelled(t *testing.T, path string, since time.Time) {
	t.Helper()
	select {
	case got := <-h.cancelled:
		if got.path != path {
			t.Fatalf("cancelled %s, want %s", got.path, path)
		}
		if d := got.at.Sub(since); d > cancelBound {
			t.Fatalf("the auth service saw the cancellation %v after the close, want within %v", d, cancelBound)
		} else {
			t.Logf("cancelled %v after the close", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the request to %s was not cancelled", path)
	}
}

// holdAuth opens a WebSocket, sends an auth with the held token in the
// same write, and waits for its call to reach the service.
func holdAuth(t *testing.T, s *Server, svc *holdingAuthService) net.Conn {
	t.Helper()
	conn := dialTCP(t, s)
	if _, err := conn.Write(append([]byte(upgradeRequest()), binFrame("type", "auth", "token", "tok-hold")...)); err != nil {
		t.Fatal(err)
	}
	svc.waitHeld(t, "/v1/kraken/validate") // the 101 is flushed with the auth's answer
	return conn
}

// Closing the socket while its auth waits on the auth service cancels the
// service's request at once, and the server goes on serving.
func TestClosingTheConnectionCancelsItsAuthCall(t *testing.T) {
	svc := newHoldingAuthService()
	s := startWithHTTPAuth(t, svc, nil)
	conn := holdAuth(t, s, svc)
	closed := time.Now()
	_ = conn.Close()
	svc.waitCancelled(t, "/v1/kraken/validate", closed)

	bob := authed(t, s, "tok-bob")
	subscribe(t, bob, "demo/general/after")
}

// Closing the socket while a subscribe waits on the room-access check
// (wire-reference.md §4.10) cancels that check.
func TestClosingTheConnectionCancelsItsRoomAccessCheck(t *testing.T) {
	svc := newHoldingAuthService()
	s := startWithHTTPAuth(t, svc, nil)
	bob := authed(t, s, "tok-bob")
	bob.Send("type", "subscribe", "topic", "demo/extra/t")
	svc.waitHeld(t, "/v1/kraken/check-room-access")
	closed := time.Now()
	_ = bob.Conn.Close()
	svc.waitCancelled(t, "/v1/kraken/check-room-access", closed)
}

// Shutting the node down while an auth call is in flight cancels the call,
// and once the server, the token cache, the auth backend and the service
// are closed no goroutine of theirs is left.
func TestShutdownCancelsTheAuthCallInFlight(t *testing.T) {
	before := goleak.IgnoreCurrent()
	svc := newHoldingAuthService()
	ts := httptest.NewServer(svc)
	defer ts.Close()
	hb, err := httpauth.New(httpauth.Config{BaseURL: ts.URL + "/v1/kraken", Secret: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer hb.Close()
	cache := auth.NewCache(hb, 30*time.Second, 100, nil)
	defer cache.Close()
	s := startWith(t, cache, nil)
	holdAuth(t, s, svc)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	if err := s.node.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	svc.waitCancelled(t, "/v1/kraken/validate", began)
	_ = cache.Close()
	_ = hb.Close()
	ts.Close()
	goleak.VerifyNone(t, before,
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*defaultPoll).Wait"),
		goleak.IgnoreAnyFunction("github.com/cloudwego/netpoll.(*manager).Run.func1"),
		goleak.IgnoreAnyFunction("github.com/bytedance/gopkg/util/gopool.(*worker).run.func1"))
}
