package controltest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/control"
)

// Request is one request a Server received.
type Request struct {
	// Method and Path are the request's, Path without the query.
	Method, Path string
	// Header holds the request headers.
	Header http.Header
	// Body is the request body.
	Body []byte
	// At is when the request arrived.
	At time.Time
}

// Server is a fake HTTP control plane for tests: an httptest server that
// serves the contract of wire-reference.md §5.2 under a path prefix, records
// every request and answers as scripted. It implements Recorder, so Run can
// drive a backend that talks to it. Safe for concurrent use.
//
// By default every endpoint answers 200 with {} (so /usage carries no
// blockedProjects key). Unknown paths get 404 and are recorded too.
type Server struct {
	// URL is the base URL to configure a backend with: the server's root
	// followed by the prefix given to NewServer.
	URL string

	srv    *httptest.Server
	prefix string

	mu       sync.Mutex
	requests []Request
	answer   UsageAnswer
	status   int // 0: 200
	hang     bool
	release  chan struct{} // closed when the server closes
	closing  sync.Once
}

// Interface guard.
var _ Recorder = (*Server)(nil)

// NewServer starts a plain HTTP Server whose endpoints live under prefix
// (e.g. "/v1/kraken"; "" for the root). It is closed when t ends.
func NewServer(t testing.TB, prefix string) *Server {
	t.Helper()
	return newServer(t, prefix, false)
}

// NewTLSServer starts a Server on HTTPS with a self-signed certificate;
// TLSConfig returns a client configuration that trusts it. It is closed when
// t ends.
func NewTLSServer(t testing.TB, prefix string) *Server {
	t.Helper()
	return newServer(t, prefix, true)
}

func newServer(t testing.TB, prefix string, useTLS bool) *Server {
	s := &Server{
		prefix:  strings.TrimSuffix(prefix, "/"),
		release: make(chan struct{}),
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// Handshakes refused by clients that verify certificates are expected.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if useTLS {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL + s.prefix
	t.Cleanup(s.Close)
	return s
}

// TLSConfig returns a client TLS configuration that trusts the server's
// certificate (only meaningful for NewTLSServer).
func (s *Server) TLSConfig() *tls.Config {
	pool := x509.NewCertPool()
	if cert := s.srv.Certificate(); cert != nil {
		pool.AddCert(cert)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// Close releases hanging requests and stops the server. It is called when
// the test ends and may be called earlier.
func (s *Server) Close() {
	s.closing.Do(func() {
		close(s.release)
		s.srv.Close()
	})
}

// SetStatus makes every endpoint answer with code (0 or 200 restores the
// default) and an empty body.
func (s *Server) SetStatus(code int) {
	s.mu.Lock()
	s.status = code
	s.mu.Unlock()
}

// SetFailing makes every endpoint answer 500 (true) or 200 (false).
func (s *Server) SetFailing(failing bool) {
	if failing {
		s.SetStatus(http.StatusInternalServerError)
	} else {
		s.SetStatus(0)
	}
}

// SetHanging makes every endpoint wait, without answering, until the
// client gives up or the server closes (true), or answer at once (false).
// Requests already waiting keep waiting.
func (s *Server) SetHanging(hang bool) {
	s.mu.Lock()
	s.hang = hang
	s.mu.Unlock()
}

// SetUsageAnswer sets how /usage answers from now on.
func (s *Server) SetUsageAnswer(a UsageAnswer) {
	s.mu.Lock()
	s.answer = a
	s.answer.Blocked = append([]string(nil), a.Blocked...)
	s.mu.Unlock()
}

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsTo returns the requests received on endpoint, the path after the
// prefix, e.g. "/usage".
func (s *Server) RequestsTo(endpoint string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Path == s.prefix+endpoint {
			out = append(out, r)
		}
	}
	return out
}

// Usage returns the entries of each /usage request, in order. A request
// whose body does not decode gives a nil batch.
func (s *Server) Usage() [][]control.UsageEntry {
	var out [][]control.UsageEntry
	for _, r := range s.RequestsTo("/usage") {
		var body struct {
			Entries []control.UsageEntry `json:"entries"`
		}
		_ = json.Unmarshal(r.Body, &body)
		out = append(out, body.Entries)
	}
	return out
}

// Subscriptions returns the changes of each /subscriptions request, in
// order.
func (s *Server) Subscriptions() [][]control.SubscriptionChange {
	var out [][]control.SubscriptionChange
	for _, r := range s.RequestsTo("/subscriptions") {
		var body struct {
			Changes []control.SubscriptionChange `json:"changes"`
		}
		_ = json.Unmarshal(r.Body, &body)
		out = append(out, body.Changes)
	}
	return out
}

// Failures returns the body of each /webhook-failures request, in order.
func (s *Server) Failures() []json.RawMessage {
	var out []json.RawMessage
	for _, r := range s.RequestsTo("/webhook-failures") {
		out = append(out, json.RawMessage(r.Body))
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, At: time.Now()})
	status, hang, answer := s.status, s.hang, s.answer
	s.mu.Unlock()

	if hang {
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		// A control plane that hangs never answers: returning normally
		// would send an implicit 200 with no body, which a client still
		// waiting (or a later request that raced onto this connection)
		// would take for success. Abort the connection instead.
		panic(http.ErrAbortHandler)
	}
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, s.prefix+"/") {
		http.NotFound(w, r)
		return
	}
	if status != 0 && status != http.StatusOK {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch strings.TrimPrefix(r.URL.Path, s.prefix) {
	case "/usage":
		if answer.Raw != "" {
			_, _ = io.WriteString(w, answer.Raw)
			return
		}
		if answer.Omit {
			_, _ = io.WriteString(w, `{}`)
			return
		}
		blocked := answer.Blocked
		if blocked == nil {
			blocked = []string{}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"blockedProjects": blocked})
	case "/subscriptions", "/webhook-failures":
		_, _ = io.WriteString(w, `{}`)
	default:
		http.NotFound(w, r)
	}
}
