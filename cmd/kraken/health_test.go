package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// runHealthBinary runs `kraken health args...` as a process with env added
// and returns its exit status, stdout and stderr.
func runHealthBinary(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(binary(t), append([]string{"health"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	default:
		t.Fatalf("run kraken health: %v", err)
		return 0, "", ""
	}
}

// TestHealthAgainstRunningBroker: `kraken health` prints ok and exits 0
// against a real broker, by --url, by --ws-port and by WS_PORT alone (the
// Docker HEALTHCHECK, which passes no arguments).
func TestHealthAgainstRunningBroker(t *testing.T) {
	b := startBroker(t, "")
	_, port, _ := net.SplitHostPort(b.addr)
	tests := []struct {
		name string
		env  []string
		args []string
	}{
		{name: "url", args: []string{"--url", "http://" + b.addr + "/health"}},
		{name: "ws-port flag", env: []string{"WS_PORT=1"}, args: []string{"--ws-port", port}},
		{name: "WS_PORT", env: []string{"WS_PORT=" + port}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runHealthBinary(t, tt.env, tt.args...)
			if code != 0 || stdout != "ok\n" || stderr != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0, \"ok\\n\", nothing", code, stdout, stderr)
			}
		})
	}
}

// TestHealthClosedPort: nothing listening is exit 1 with one line on stderr
// that names the URL and the refusal, and nothing on stdout.
func TestHealthClosedPort(t *testing.T) {
	port := freePort(t) // closed again when freePort returns
	code, stdout, stderr := runHealthBinary(t, []string{"WS_PORT=" + port})
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, stdout)
	}
	want := "http://127.0.0.1:" + port + "/health"
	if !strings.HasPrefix(stderr, "kraken health: ") || !strings.Contains(stderr, want) ||
		!strings.Contains(stderr, "connection refused") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("stderr = %q, want one line naming %s and the refused connection", stderr, want)
	}
}

// TestHealthBadAnswers: an answer other than 200 {"status":"ok"}, no answer
// within --timeout, and bad arguments are each exit 1 with a one-line
// reason on stderr.
func TestHealthBadAnswers(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/down", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, `{"status":"down"}`, http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/draining", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"draining"}`)) })
	mux.HandleFunc("/text", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\nfine")) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/health", http.StatusFound) })
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"status":"ok"}`)) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	base := "http://" + ln.Addr().String()

	// silent accepts connections and never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := silent.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	t.Cleanup(func() {
		_ = silent.Close()
		for c := range accepted {
			_ = c.Close()
		}
	})

	tests := []struct {
		name string
		env  []string
		args []string
		want string // in the stderr line
	}{
		{name: "503", args: []string{"--url", base + "/down"}, want: "status 503 Service Unavailable, want 200 OK"},
		{name: "no /health in the URL", args: []string{"--url", base}, want: "status 404 Not Found, want 200 OK (the health endpoint is /health"},
		{name: "not ok", args: []string{"--url", base + "/draining"}, want: `body "{\"status\":\"draining\"}", want {"status":"ok"}`},
		{name: "not JSON", args: []string{"--url", base + "/text"}, want: `body "ok\nfine"`},
		{name: "redirect not followed", args: []string{"--url", base + "/moved"}, want: "status 302 Found"},
		{name: "timeout", args: []string{"--url", "http://" + silent.Addr().String() + "/health", "--timeout", "200ms"}, want: "Client.Timeout exceeded"},
		{name: "bad url", args: []string{"--url", "ftp://x/health"}, want: `--url "ftp://x/health" must be an http:// or https:// URL`},
		{name: "bad WS_PORT", env: []string{"WS_PORT=abc"}, want: `port "abc" (WS_PORT or --ws-port) must be 1 to 65535`},
		{name: "WS_PORT 0", env: []string{"WS_PORT=0"}, want: "pass --url"},
		{name: "argument", args: []string{"extra"}, want: `takes no arguments, got ["extra"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(append([]string{"health"}, tt.args...), lookupIn(tt.env), &stdout, &stderr)
			if code != 1 || stdout.Len() != 0 {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing (stderr %q)", code, stdout.String(), stderr.String())
			}
			line := stderr.String()
			if !strings.HasPrefix(line, "kraken health: ") || !strings.Contains(line, tt.want) ||
				strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
				t.Fatalf("stderr = %q, want one line containing %q", line, tt.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}

	// The same server's good answer is ok, so the failures above are the
	// answers' fault.
	var stdout, stderr bytes.Buffer
	if code := run([]string{"health", "--url", base + "/health"}, lookupIn(nil), &stdout, &stderr); code != 0 || stdout.String() != "ok\n" {
		t.Fatalf("good answer: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// lookupIn is a lookup function over NAME=value pairs.
func lookupIn(env []string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && k == name {
				return v, true
			}
		}
		return "", false
	}
}

// With PROXY_PROTOCOL naming ws, the probe's connection begins with a
// "PROXY UNKNOWN" line; without it, with the request.
func TestHealthSendsAProxyHeaderWhenTheWebSocketPortExpectsOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	firstLines := make(chan string, 2)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			line, _ := br.ReadString('\n')
			firstLines <- line
			if strings.HasPrefix(line, "PROXY ") {
				line, _ = br.ReadString('\n')
			}
			for line != "\r\n" && line != "" {
				line, _ = br.ReadString('\n')
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 15\r\nConnection: close\r\n\r\n{\"status\":\"ok\"}")
			_ = c.Close()
		}
	}()
	target := "http://" + ln.Addr().String() + "/health"
	for _, withHeader := range []bool{true, false} {
		if err := checkHealth(target, 2*time.Second, withHeader); err != nil {
			t.Fatal(err)
		}
		if got := <-firstLines; (got == "PROXY UNKNOWN\r\n") != withHeader {
			t.Fatalf("PROXY header %v: the connection began with %q", withHeader, got)
		}
	}
	var stderr strings.Builder
	lookup := func(k string) (string, bool) { return map[string]string{"PROXY_PROTOCOL": "ws,bogus"}[k], true }
	if code := runHealth([]string{"--url", target}, lookup, io.Discard, &stderr); code != exitFail || !strings.Contains(stderr.String(), "bogus") {
		t.Fatalf("an invalid PROXY_PROTOCOL: exit %d, %q", code, stderr.String())
	}
}
