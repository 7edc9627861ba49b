package server

import (
	"strings"
	"testing"

	"github.com/NoLagApp/kraken/pkg/edge"
)

// upgradeWithHeader is upgradeRequest with the extra header lines (each
// ending in CRLF).
func upgradeWithHeader(extra string) string {
	return strings.TrimSuffix(upgradeRequest(), "\r\n") + extra + "\r\n"
}

// With ALLOWED_ORIGINS, a browser upgrade from an origin outside the list
// is refused with 403 and a reason that names it; one from an allowed
// origin (a wildcard subdomain too) and one without an Origin header (not
// a browser) are upgraded. Without the setting every origin is.
func TestAllowedOrigins(t *testing.T) {
	origins, err := edge.ParseOrigins("https://app.example.com, https://*.example.org")
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, func(c *testConfig) { c.AllowedOrigins = origins })
	for _, tt := range []struct {
		header string
		status int
	}{
		{"Origin: https://app.example.com\r\n", 101},
		{"Origin: https://eu.example.org\r\n", 101},
		{"", 101},
		{"Origin: https://evil.example.net\r\n", 403},
		{"Origin: https://example.org\r\n", 403},
		{"Origin: null\r\n", 403},
	} {
		resp, body := httpExchange(t, s, upgradeWithHeader(tt.header))
		if resp.StatusCode != tt.status {
			t.Errorf("%q: status %d, want %d (%q)", tt.header, resp.StatusCode, tt.status, body)
		}
		if tt.status == 403 && !strings.Contains(body, "origin not allowed: "+strings.TrimSpace(strings.TrimPrefix(tt.header, "Origin: "))) {
			t.Errorf("%q: body %q, want the reason naming the origin", tt.header, body)
		}
	}
	open := start(t, nil)
	if resp, body := httpExchange(t, open, upgradeWithHeader("Origin: https://evil.example.net\r\n")); resp.StatusCode != 101 {
		t.Fatalf("without ALLOWED_ORIGINS: %d %q, want 101", resp.StatusCode, body)
	}
}
