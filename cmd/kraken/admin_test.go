package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestAdminListener: with ADMIN_ADDR set, the broker serves /metrics (the
// Prometheus text format, kraken_* and the Go and process collectors),
// /ready, /health and /debug/pprof/ there, and none of them but /ready and
// /health on the WebSocket port. A failed reload makes both /ready answer
// 503, the admin one with the reason. Log lines carry ISO-8601 timestamps.
func TestAdminListener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	writeTokenFile(t, path, hupAliceBob)
	admin := "127.0.0.1:" + freePort(t)
	b := startBroker(t, "", "AUTH_FILE="+path, "ADMIN_ADDR="+admin)
	b.waitLogs(t, "admin listener", 1)
	base := "http://" + admin

	code, body := get(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	for _, name := range []string{"kraken_connections", "kraken_auth_results_total", "kraken_token_file_tokens",
		"kraken_build_info", "go_goroutines", "process_open_fds"} {
		if fams[name] == nil {
			t.Errorf("/metrics has no %s", name)
		}
	}
	if code, body := get(t, base+"/ready"); code != 200 || body != `{"status":"ready"}` {
		t.Errorf("/ready: %d %s", code, body)
	}
	if code, body := get(t, base+"/health"); code != 200 || body != `{"status":"ok"}` {
		t.Errorf("/health: %d %s", code, body)
	}
	if code, body := get(t, base+"/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %d", code)
	}
	if code, _ := get(t, base+"/debug/pprof/heap?debug=1"); code != 200 {
		t.Errorf("/debug/pprof/heap: %d", code)
	}
	for _, p := range []string{"/metrics", "/debug/pprof/"} {
		if code, _ := get(t, "http://"+b.addr+p); code != 404 {
			t.Errorf("WebSocket port %s: %d, want 404", p, code)
		}
	}

	writeTokenFile(t, path, hupBroken)
	b.sighup(t)
	b.waitLogs(t, "Failed to parse auth file", 1)
	code, body = get(t, base+"/ready")
	if code != 503 || !strings.Contains(body, `"failing":["token_file"]`) || !strings.Contains(body, "line 2, column 14") {
		t.Errorf("admin /ready after a failed reload: %d %s", code, body)
	}
	code, body = get(t, "http://"+b.addr+"/ready")
	if code != 503 || body != `{"status":"not_ready","failing":["token_file"]}` {
		t.Errorf("WebSocket port /ready after a failed reload: %d %s", code, body)
	}
	if code, _ := get(t, "http://"+b.addr+"/health"); code != 200 {
		t.Errorf("/health after a failed reload: %d, want 200 (liveness)", code)
	}

	iso := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}`)
	for _, line := range b.logLines("") {
		if ts, _ := line["ts"].(string); !iso.MatchString(ts) {
			t.Errorf("log line %q has ts %v, want ISO-8601", line["msg"], line["ts"])
		}
	}
}

// TestAdminAddrTaken: a taken ADMIN_ADDR is logged at error level and the
// broker serves without it.
func TestAdminAddrTaken(t *testing.T) {
	first := startBroker(t, "", "ADMIN_ADDR=127.0.0.1:"+freePort(t))
	line := first.waitLogs(t, "admin listener", 1)[0]
	addr, _ := line["addr"].(string)
	b := startBroker(t, "", "ADMIN_ADDR="+addr)
	failed := b.waitLogs(t, "admin listener not started", 1)[0]
	checkField(t, failed, "level", "error")
	if code, _ := get(t, "http://"+b.addr+"/health"); code != 200 {
		t.Errorf("/health: %d", code)
	}
}

// TestFatalStartupErrorIsALogLine: a broken token file at startup is
// reported as one JSON log line, like every other line, naming the path
// and the position.
func TestFatalStartupErrorIsALogLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	writeTokenFile(t, path, hupBroken)
	b := &broker{stderr: &lockedBuffer{}}
	code, _, errs := runIn([]string{"AUTH_FILE=" + path, "ADMIN_ADDR=off", "WS_PORT=0"})
	_, _ = b.stderr.Write([]byte(errs))
	if code != 2 {
		t.Fatalf("exit %d, want 2\n%s", code, errs)
	}
	lines := b.logLines("kraken cannot start")
	if len(lines) != 1 {
		t.Fatalf("stderr is not one log line:\n%s", errs)
	}
	checkField(t, lines[0], "level", "error")
	if e, _ := lines[0]["error"].(string); !strings.Contains(e, path) || !strings.Contains(e, "line 2, column 14") {
		t.Errorf("error %q does not name %s and the position", e, path)
	}
}

// NATS credentials in a URL setting never reach /api/info.
func TestSettingsShowNoCredentials(t *testing.T) {
	for give, want := range map[string]string{
		"nats://u:p@a:4222,nats://b:4222": "nats://redacted@a:4222,nats://b:4222",
		"nats://s3cret-token@a:4222":      "nats://redacted@a:4222",
		"nats://a:4222":                   "nats://a:4222",
		"demo@example":                    "demo@example",
	} {
		if got := withoutCredentials(give); got != want || strings.Contains(got, "s3cret") || strings.Contains(got, ":p@") {
			t.Errorf("withoutCredentials(%q) = %q, want %q", give, got, want)
		}
	}
}
