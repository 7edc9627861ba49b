package httpcontrol_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/control/controltest"
	"github.com/NoLagApp/kraken/pkg/control/httpcontrol"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newController returns a Controller for cfg, closed when t ends.
func newController(t *testing.T, cfg httpcontrol.Config) *httpcontrol.Controller {
	t.Helper()
	c, err := httpcontrol.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v) = %v", cfg, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestConformance(t *testing.T) {
	controltest.Run(t, func(t *testing.T) (control.Controller, controltest.Recorder) {
		srv := controltest.NewServer(t, "/v1/kraken-link")
		return newController(t, httpcontrol.Config{BaseURL: srv.URL, Secret: "s"}), srv
	})
}

func TestConformanceTLS(t *testing.T) {
	controltest.Run(t, func(t *testing.T) (control.Controller, controltest.Recorder) {
		srv := controltest.NewTLSServer(t, "/v1/kraken-link")
		return newController(t, httpcontrol.Config{BaseURL: srv.URL, Secret: "s", TLSConfig: srv.TLSConfig()}), srv
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// TestPathJoin checks OQ-28: the base URL's path is kept.
func TestPathJoin(t *testing.T) {
	tests := []struct {
		name   string
		prefix string // the server's
		base   string // appended to the server's root
	}{
		{name: "root", prefix: "", base: ""},
		{name: "root with slash", prefix: "", base: "/"},
		{name: "path", prefix: "/v1/kraken-link", base: "/v1/kraken-link"},
		{name: "path with slash", prefix: "/v1/kraken-link", base: "/v1/kraken-link/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := controltest.NewServer(t, tt.prefix)
			root := strings.TrimSuffix(srv.URL, tt.prefix)
			c := newController(t, httpcontrol.Config{BaseURL: root + tt.base})
			if _, _, err := c.ReportUsage(ctx(t), nil); err != nil {
				t.Fatalf("ReportUsage = %v", err)
			}
			if err := c.ReportSubscriptions(ctx(t), nil); err != nil {
				t.Fatalf("ReportSubscriptions = %v", err)
			}
			if err := c.ReportWebhookFailure(ctx(t), controltest.SampleFailure()); err != nil {
				t.Fatalf("ReportWebhookFailure = %v", err)
			}
			var paths []string
			for _, r := range srv.Requests() {
				paths = append(paths, r.Method+" "+r.Path)
			}
			want := []string{"POST " + tt.prefix + "/usage", "POST " + tt.prefix + "/subscriptions", "POST " + tt.prefix + "/webhook-failures"}
			if !slices.Equal(paths, want) {
				t.Fatalf("requests = %q, want %q", paths, want)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	srv := controltest.NewServer(t, "")
	c := newController(t, httpcontrol.Config{BaseURL: srv.URL, Secret: "s3cret"})
	if err := c.ReportSubscriptions(ctx(t), controltest.SampleChanges()); err != nil {
		t.Fatal(err)
	}
	h := srv.Requests()[0].Header
	if got := h.Get("Authorization"); got != "Bearer s3cret" {
		t.Fatalf("Authorization = %q", got)
	}
	if got := h.Get("Content-Type"); got != "application/json" {
		t.Fatalf("Content-Type = %q", got)
	}
}

func TestNoSecret(t *testing.T) {
	srv := controltest.NewServer(t, "")
	c := newController(t, httpcontrol.Config{BaseURL: srv.URL})
	if _, _, err := c.ReportUsage(ctx(t), nil); err != nil {
		t.Fatal(err)
	}
	// "Bearer " is sent; the server's header parsing trims the space.
	if got := srv.Requests()[0].Header.Get("Authorization"); strings.TrimSpace(got) != "Bearer" {
		t.Fatalf("Authorization = %q, want \"Bearer \"", got)
	}
}

func TestTLSVerifiedByDefault(t *testing.T) {
	srv := controltest.NewTLSServer(t, "")
	c := newController(t, httpcontrol.Config{BaseURL: srv.URL})
	_, _, err := c.ReportUsage(ctx(t), nil)
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) {
		t.Fatalf("ReportUsage to a self-signed server = %v, want a certificate verification error", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the server received %d requests over an unverified connection", n)
	}

	insecure := newController(t, httpcontrol.Config{BaseURL: srv.URL, InsecureSkipVerify: true})
	if _, _, err := insecure.ReportUsage(ctx(t), nil); err != nil {
		t.Fatalf("ReportUsage with InsecureSkipVerify = %v", err)
	}
	// InsecureSkipVerify applies over a given TLSConfig too.
	other := controltest.NewTLSServer(t, "")
	mixed := newController(t, httpcontrol.Config{BaseURL: srv.URL, TLSConfig: other.TLSConfig(), InsecureSkipVerify: true})
	if _, _, err := mixed.ReportUsage(ctx(t), nil); err != nil {
		t.Fatalf("ReportUsage with InsecureSkipVerify over TLSConfig = %v", err)
	}
}

func TestNewInvalidURL(t *testing.T) {
	for _, base := range []string{"", "localhost:8080", "/relative", "ftp://host/x", "http://", "http://[::1"} {
		if _, err := httpcontrol.New(httpcontrol.Config{BaseURL: base}); !errors.Is(err, httpcontrol.ErrInvalidURL) {
			t.Errorf("New(%q) = %v, want ErrInvalidURL", base, err)
		}
	}
}

func TestStatusError(t *testing.T) {
	srv := controltest.NewServer(t, "/ctl")
	c := newController(t, httpcontrol.Config{BaseURL: srv.URL})
	for _, code := range []int{http.StatusServiceUnavailable, http.StatusBadRequest, http.StatusUnauthorized} {
		srv.SetStatus(code)
		_, _, err := c.ReportUsage(ctx(t), nil)
		var se *httpcontrol.StatusError
		if !errors.As(err, &se) || se.StatusCode != code || se.Endpoint != "/usage" {
			t.Fatalf("ReportUsage answered %d = %v, want a *StatusError", code, err)
		}
		if err := c.ReportSubscriptions(ctx(t), nil); !errors.As(err, &se) || se.Endpoint != "/subscriptions" {
			t.Fatalf("ReportSubscriptions answered %d = %v", code, err)
		}
		if err := c.ReportWebhookFailure(ctx(t), controltest.SampleFailure()); !errors.As(err, &se) || se.Endpoint != "/webhook-failures" {
			t.Fatalf("ReportWebhookFailure answered %d = %v", code, err)
		}
	}
}

// TestUsageAnswers covers the 2xx bodies of /usage.
func TestUsageAnswers(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		body        string
		wantBlocked []string
		wantReplace bool
		wantErr     bool
	}{
		{name: "blocked", body: `{"blockedProjects":["a","b"]}`, wantBlocked: []string{"a", "b"}, wantReplace: true},
		{name: "empty list", body: `{"blockedProjects":[]}`, wantBlocked: []string{}, wantReplace: true},
		{name: "non-strings ignored", body: `{"blockedProjects":[1,"a",null,{"x":1}]}`, wantBlocked: []string{"a"}, wantReplace: true},
		{name: "other keys", body: `{"ok":true,"blockedProjects":["a"]}`, wantBlocked: []string{"a"}, wantReplace: true},
		{name: "no key", body: `{"ok":true}`},
		{name: "null", body: `{"blockedProjects":null}`},
		{name: "not an array", body: `{"blockedProjects":"a"}`},
		{name: "invalid JSON", body: `{"blockedProjects":[`},
		{name: "not an object", body: `["a"]`},
		{name: "empty body", body: ""},
		{name: "204", status: http.StatusNoContent},
		{name: "201 with a set", status: http.StatusCreated, body: `{"blockedProjects":["a"]}`, wantBlocked: []string{"a"}, wantReplace: true},
		{name: "too long", body: `{"x":"` + strings.Repeat("a", httpcontrol.MaxResponseBytes) + `"}`, wantErr: true},
		{name: "redirect not followed", status: http.StatusTemporaryRedirect, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.status == http.StatusTemporaryRedirect {
					http.Redirect(w, r, "/elsewhere", tt.status)
					return
				}
				if r.URL.Path != "/usage" {
					http.NotFound(w, r)
					return
				}
				if tt.status != 0 {
					w.WriteHeader(tt.status)
				}
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			c := newController(t, httpcontrol.Config{BaseURL: srv.URL})
			blocked, replace, err := c.ReportUsage(ctx(t), []control.UsageEntry{{ProjectID: "p", Count: 1}})
			if (err != nil) != tt.wantErr {
				t.Fatalf("ReportUsage error = %v, want error %v", err, tt.wantErr)
			}
			if replace != tt.wantReplace || !slices.Equal(blocked, tt.wantBlocked) {
				t.Fatalf("ReportUsage = %q, replace %v; want %q, %v", blocked, replace, tt.wantBlocked, tt.wantReplace)
			}
		})
	}
}

// TestTimeout checks Config.Timeout against a control plane that never
// answers.
func TestTimeout(t *testing.T) {
	srv := controltest.NewServer(t, "")
	srv.SetHanging(true)
	c := newController(t, httpcontrol.Config{BaseURL: srv.URL, Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, _, err := c.ReportUsage(context.Background(), nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReportUsage = %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("ReportUsage took %v with a 50 ms timeout", d)
	}
}
