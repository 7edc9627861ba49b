package httpauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/auth"
)

// TestMain fails the package if a test leaves a goroutine behind (keep-alive
// connections of a Backend included: every test closes its Backend).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// request is what the test server saw of one request.
type request struct {
	Method, Path, Authorization, ContentType string
	ProtoMajor                               int
	Body                                     map[string]any
	HasAuth                                  bool
}

// authServer is a real HTTP(S) auth backend for the tests. handle answers
// each request; it may be replaced between calls.
type authServer struct {
	*httptest.Server

	mu       sync.Mutex
	handle   func(w http.ResponseWriter, r *http.Request)
	requests []request

	calls    atomic.Int64
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	newConns atomic.Int64
}

type serverKind int

const (
	plainHTTP serverKind = iota + 1
	tlsHTTP1
	tlsHTTP2
)

func newAuthServer(t *testing.T, kind serverKind, handle func(w http.ResponseWriter, r *http.Request)) *authServer {
	t.Helper()
	s := &authServer{handle: handle}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // TLS handshake noise of refused or surplus dials
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.newConns.Add(1)
		}
	}
	switch kind {
	case plainHTTP:
		s.Start()
	case tlsHTTP1:
		s.StartTLS()
	case tlsHTTP2:
		s.EnableHTTP2 = true
		s.StartTLS()
	}
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	n := s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	for {
		m := s.maxSeen.Load()
		if n <= m || s.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	_, hasAuth := r.Header["Authorization"]
	s.mu.Lock()
	s.requests = append(s.requests, request{
		Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
		ContentType: r.Header.Get("Content-Type"), ProtoMajor: r.ProtoMajor, Body: body, HasAuth: hasAuth,
	})
	h := s.handle
	s.mu.Unlock()
	h(w, r.WithContext(context.WithValue(r.Context(), bodyKey{}, body)))
}

type bodyKey struct{}

// bodyOf returns the decoded JSON body of a request the test server got.
func bodyOf(r *http.Request) map[string]any {
	m, _ := r.Context().Value(bodyKey{}).(map[string]any)
	return m
}

func (s *authServer) setHandler(h func(w http.ResponseWriter, r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle = h
}

func (s *authServer) last() request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == 0 {
		return request{}
	}
	return s.requests[len(s.requests)-1]
}

// reply answers with status and a JSON (or raw) body.
func reply(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hang answers only once the client has gone away.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// newBackend builds a Backend against s (trusting its certificate) with cfg
// overriding; it is closed when the test ends.
func newBackend(t *testing.T, s *authServer, cfg Config) *Backend {
	t.Helper()
	if cfg.BaseURL == "" && s != nil {
		cfg.BaseURL = s.URL
	}
	if s != nil && s.TLS != nil && cfg.RootCAs == nil && cfg.TLSConfig == nil && !cfg.InsecureSkipVerify {
		cfg.RootCAs = s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	}
	if cfg.Secret == "" {
		cfg.Secret = "s3cret"
	}
	b, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// closedPortURL is an http URL nobody listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return "http://" + addr
}

// wireError is the mapping documented in errors.go and doc.go, as the
// connection layer applies it (wire-reference.md §2.4).
func wireError(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, auth.ErrDenied):
		return "access_denied"
	case errors.Is(err, auth.ErrUnavailable):
		return "connection_failed"
	default:
		return "authentication_failed"
	}
}

// fakeClock is a manually advanced clock for the breaker and the negative
// cache.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withClock makes b use a fake clock; call it before any request.
func withClock(b *Backend) *fakeClock {
	c := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	b.now = c.now
	return c
}

// observed returns a debug-level logger and its records.
func observed() (*zap.Logger, *observer.ObservedLogs) {
	core, logs := observer.New(zapcore.DebugLevel)
	return zap.New(core), logs
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

var bg = context.Background()
