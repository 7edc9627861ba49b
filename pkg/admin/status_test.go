package admin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestStatusPage: GET /status answers the page without the secret, with a
// policy that lets it reach only its own listener, while /api/ still asks
// for the secret; the page names no remote asset and reads only
// /api/info and /api/topics.
func TestStatusPage(t *testing.T) {
	a := &API{cfg: Config{Secret: "status-test-secret"}}
	mux := http.NewServeMux()
	a.Register(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/status")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /status: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") ||
		!strings.Contains(csp, "connect-src 'self'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	page := string(body)
	if strings.Contains(page, "status-test-secret") {
		t.Error("the page carries the secret")
	}
	for _, u := range regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^"'\s)]*`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" { // the SVG namespace, never fetched
			t.Errorf("the page names a remote address: %s", u)
		}
	}
	for _, bad := range []string{"src=", "href=", "@import", "url(", "/metrics"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, id := range []string{"conn-websocket", "conn-mqtt", "conn-authenticated", "pub-rate", "del-rate",
		"topics", "nodes", "refused", "closed", "slow-consumers", "secret"} {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("the page has no element id=%q", id)
		}
	}
	paths := regexp.MustCompile(`get\("([^"]+)"\)`).FindAllStringSubmatch(page, -1)
	if len(paths) != 2 || paths[0][1] != "api/info" || paths[1][1] != "api/topics?limit=10" {
		t.Errorf("the page reads %q, want api/info and api/topics?limit=10", paths)
	}

	resp, err = http.Get(srv.URL + "/api/info")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/info without the secret: %d, want 401", resp.StatusCode)
	}
	resp, err = http.Post(srv.URL+"/status", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /status: %d, want 405", resp.StatusCode)
	}
}
