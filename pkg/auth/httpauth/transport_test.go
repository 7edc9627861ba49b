package httpauth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
)

const allowAlice = `{"result":"allow","client_attrs":{"actor_token_id":"alice"}}`

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		wantErr string // substring; "" means success
	}{
		{name: "http", give: "http://auth.internal:8080"},
		{name: "https with path", give: "https://core.example/v1/kraken-link/"},
		{name: "empty", give: "", wantErr: "empty"},
		{name: "no scheme", give: "core.example/v1", wantErr: "scheme"},
		{name: "other scheme", give: "ftp://core.example", wantErr: "scheme"},
		{name: "no host", give: "https:///v1", wantErr: "no host"},
		{name: "query", give: "https://core.example/v1?x=1", wantErr: "query"},
		{name: "fragment", give: "https://core.example/v1#x", wantErr: "fragment"},
		{name: "credentials", give: "https://u:p@core.example/v1", wantErr: "credentials"},
		{name: "unparsable", give: "http://[::1", wantErr: "AUTH_HTTP_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(Config{BaseURL: tt.give})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				_ = b.Close()
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	b, err := New(Config{BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.timeout != 5*time.Second || b.roomTimeout != 2*time.Second || b.maxBody != 1<<20 ||
		cap(b.slots) != 64 || b.breaker.threshold != 5 || b.breaker.cooldown != 5*time.Second ||
		b.denies.ttl != 5*time.Second || b.denies.maxEntries != 10000 {
		t.Fatalf("defaults: timeout %v room %v body %d slots %d breaker %d/%v deny %v/%d", b.timeout, b.roomTimeout,
			b.maxBody, cap(b.slots), b.breaker.threshold, b.breaker.cooldown, b.denies.ttl, b.denies.maxEntries)
	}
	if b.transport.TLSClientConfig.InsecureSkipVerify {
		t.Fatal("TLS verification must be on by default (OQ-30)")
	}
}

// TestRequestShape: every endpoint is POSTed under the base URL's path with
// JSON and the bearer secret (wire-reference.md §5.1, OQ-28).
func TestRequestShape(t *testing.T) {
	tests := []struct {
		name     string
		basePath string
		want     string // path prefix of every endpoint
	}{
		{name: "root", basePath: "", want: "/"},
		{name: "root slash", basePath: "/", want: "/"},
		{name: "path kept", basePath: "/v1/kraken-link", want: "/v1/kraken-link/"},
		{name: "trailing slash", basePath: "/v1/kraken-link/", want: "/v1/kraken-link/"},
		{name: "nolag-core", basePath: "/v1/internal/actors", want: "/v1/internal/actors/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAuthServer(t, plainHTTP, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case strings.HasSuffix(r.URL.Path, "/validate"):
					reply(200, allowAlice)(w, r)
				case strings.HasSuffix(r.URL.Path, "/revalidate"):
					reply(200, `{"valid":true,"actor_token_id":"alice"}`)(w, r)
				default:
					reply(200, `{"allow":true,"allowed_topics":[{"pattern":"a/#","permission":"subscribe"}]}`)(w, r)
				}
			})
			b := newBackend(t, s, Config{BaseURL: s.URL + tt.basePath, Secret: "backend-secret"})
			calls := []struct {
				endpoint string
				call     func() error
			}{
				{"validate", func() error { _, err := b.Validate(bg, "tok"); return err }},
				{"revalidate", func() error { _, err := b.Revalidate(bg, "alice"); return err }},
				{"check-room-access", func() error { _, err := b.CheckRoomAccess(bg, "alice", "a/b"); return err }},
			}
			for _, c := range calls {
				if err := c.call(); err != nil {
					t.Fatalf("%s: %v", c.endpoint, err)
				}
				r := s.last()
				if r.Method != http.MethodPost || r.Path != tt.want+c.endpoint {
					t.Errorf("%s: %s %s, want POST %s", c.endpoint, r.Method, r.Path, tt.want+c.endpoint)
				}
				if r.Authorization != "Bearer backend-secret" {
					t.Errorf("%s: Authorization = %q", c.endpoint, r.Authorization)
				}
				if r.ContentType != "application/json" {
					t.Errorf("%s: Content-Type = %q", c.endpoint, r.ContentType)
				}
			}
			if r := s.requests[0].Body; len(r) != 1 || r["accessToken"] != "tok" {
				t.Errorf("validate body = %v, want {accessToken: tok}", r)
			}
		})
	}
}

func TestEmptySecretSendsNoAuthorization(t *testing.T) {
	s := newAuthServer(t, plainHTTP, reply(200, allowAlice))
	b, err := New(Config{BaseURL: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Validate(bg, "tok"); err != nil {
		t.Fatal(err)
	}
	if r := s.last(); r.HasAuth {
		t.Fatalf("Authorization = %q, want no header for an empty secret", r.Authorization)
	}
}

func TestTLS(t *testing.T) {
	s := newAuthServer(t, tlsHTTP1, reply(200, allowAlice))
	pool := x509.NewCertPool()
	pool.AddCert(s.Certificate())
	tests := []struct {
		name    string
		cfg     Config
		wantErr bool
	}{
		{name: "self-signed refused by default", cfg: Config{BaseURL: s.URL}, wantErr: true},
		{name: "insecure skip verify", cfg: Config{BaseURL: s.URL, InsecureSkipVerify: true}},
		{name: "root CAs", cfg: Config{BaseURL: s.URL, RootCAs: pool}},
		{name: "TLS config", cfg: Config{BaseURL: s.URL, TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}},
		{name: "insecure over a TLS config", cfg: Config{BaseURL: s.URL, TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}, InsecureSkipVerify: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Secret = "x"
			b, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			before := s.calls.Load()
			_, err = b.Validate(bg, "tok")
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var verr *tls.CertificateVerificationError
			if !errors.As(err, &verr) || !errors.Is(err, ErrConnectionFailed) || wireError(err) != "connection_failed" {
				t.Fatalf("err = %v, want a certificate verification failure reported as connection_failed", err)
			}
			if s.calls.Load() != before {
				t.Fatal("a request reached the handler over an unverified connection")
			}
		})
	}
}

func TestProtocolAndReuse(t *testing.T) {
	tests := []struct {
		name      string
		kind      serverKind
		wantMajor int
	}{
		{name: "http/1.1 over plain http", kind: plainHTTP, wantMajor: 1},
		{name: "http/1.1 when TLS offers no h2", kind: tlsHTTP1, wantMajor: 1},
		{name: "http/2 over TLS", kind: tlsHTTP2, wantMajor: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAuthServer(t, tt.kind, reply(200, allowAlice))
			b := newBackend(t, s, Config{})
			for range 20 {
				if _, err := b.Validate(bg, "tok"); err != nil {
					t.Fatal(err)
				}
			}
			if r := s.last(); r.ProtoMajor != tt.wantMajor {
				t.Fatalf("server saw HTTP/%d, want HTTP/%d", r.ProtoMajor, tt.wantMajor)
			}
			if n := s.newConns.Load(); n != 1 {
				t.Fatalf("%d connections for 20 sequential calls, want 1 (keep-alive)", n)
			}
		})
	}
}

func TestHTTP2Concurrent(t *testing.T) {
	s := newAuthServer(t, tlsHTTP2, reply(200, allowAlice))
	b := newBackend(t, s, Config{})
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if _, err := b.Validate(bg, "tok"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if s.last().ProtoMajor != 2 {
		t.Fatal("not HTTP/2")
	}
}

func TestBodyBound(t *testing.T) {
	const limit = 256
	pad := func(n int) string { // a valid answer of exactly n bytes
		s := allowAlice
		return s[:len(s)-1] + strings.Repeat(" ", n-len(s)) + "}"
	}
	tests := []struct {
		name    string
		body    string
		chunked bool
		wantErr bool
	}{
		{name: "at the bound", body: pad(limit)},
		{name: "over the bound", body: pad(limit + 1), wantErr: true},
		{name: "at the bound chunked", body: pad(limit), chunked: true},
		{name: "over the bound chunked", body: pad(limit + 1), chunked: true, wantErr: true},
		{name: "far over the bound chunked", body: pad(100 * limit), chunked: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newAuthServer(t, plainHTTP, func(w http.ResponseWriter, _ *http.Request) {
				if tt.chunked {
					_, _ = w.Write([]byte(tt.body[:10]))
					w.(http.Flusher).Flush() // no Content-Length from here on
					_, _ = w.Write([]byte(tt.body[10:]))
					return
				}
				_, _ = w.Write([]byte(tt.body))
			})
			b := newBackend(t, s, Config{MaxBodyBytes: limit})
			_, err := b.Validate(bg, "tok")
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrResponseTooLarge) || wireError(err) != "authentication_failed" {
				t.Fatalf("err = %v, want ErrResponseTooLarge (authentication_failed)", err)
			}
		})
	}
}

func TestMaxInFlight(t *testing.T) {
	const limit, callers = 4, 20
	release := make(chan struct{})
	s := newAuthServer(t, plainHTTP, func(w http.ResponseWriter, r *http.Request) {
		<-release
		reply(200, allowAlice)(w, r)
	})
	b := newBackend(t, s, Config{MaxInFlight: limit})
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			if _, err := b.Validate(bg, "tok"); err != nil {
				t.Error(err)
			}
		})
	}
	eventually(t, "the cap to fill", func() bool { return s.inFlight.Load() == limit })

	// A caller over the cap waits for a slot until its ctx is done, then gets
	// connection_failed without any request.
	before := s.calls.Load()
	ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
	_, err := b.Validate(ctx, "tok")
	cancel()
	if !errors.Is(err, ErrConnectionFailed) || !errors.Is(err, auth.ErrUnavailable) || wireError(err) != "connection_failed" {
		t.Fatalf("over the cap: err = %v, want ErrConnectionFailed", err)
	}
	if s.calls.Load() != before || s.inFlight.Load() != limit {
		t.Fatalf("calls %d → %d, in flight %d: the cap was passed", before, s.calls.Load(), s.inFlight.Load())
	}
	close(release)
	wg.Wait()
	if got := s.maxSeen.Load(); got != limit {
		t.Fatalf("at most %d requests at once on the server, want %d", got, limit)
	}
	if got := s.calls.Load(); got != callers {
		t.Fatalf("calls = %d, want %d", got, callers)
	}
}
