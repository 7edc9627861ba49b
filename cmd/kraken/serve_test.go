package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// binary builds cmd/kraken once per test run.
func binary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kraken-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "kraken")
		if out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// broker is a kraken process started by a test.
type broker struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedBuffer
	done   chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBroker runs the binary (through `sh -c` when shell is set, e.g. to
// lower ulimits) with env added, and waits until /health answers.
func startBroker(t *testing.T, shell string, env ...string) *broker {
	t.Helper()
	bin := binary(t)
	port := freePort(t)
	var cmd *exec.Cmd
	if shell != "" {
		cmd = exec.Command("sh", "-c", shell+"; exec "+bin)
	} else {
		cmd = exec.Command(bin)
	}
	cmd.Env = append(os.Environ(), append([]string{"WS_HOST=127.0.0.1", "WS_PORT=" + port,
		"AUTH_FILE=../../examples/auth.json", "LOG_LEVEL=info", "ADMIN_ADDR=off"}, env...)...)
	b := &broker{cmd: cmd, addr: "127.0.0.1:" + port, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = b.stderr, b.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-b.done
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + b.addr + "/health"); err == nil {
			resp.Body.Close()
			return b
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("broker did not come up: %s", b.stderr)
	return nil
}

// TestServeHealthAndGracefulShutdown: the quickstart's health check, then
// SIGTERM closes every connection, authenticated or not, with 1012 (never
// 1001, which the Python SDK treats as final: case 001) and exits 0.
func TestServeHealthAndGracefulShutdown(t *testing.T) {
	b := startBroker(t, "")
	resp, err := http.Get("http://" + b.addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"status":"ok"}` || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("health = %q (%s)", body, resp.Header.Get("Content-Type"))
	}
	bob := testpeer.Dial(t, b.addr)
	bob.Auth("dev-token-bob")
	alice := testpeer.Dial(t, b.addr)
	alice.Auth("dev-token-alice", "protocolVersion", 2)
	anonymous := testpeer.Dial(t, b.addr)
	anonymous.SendFrame(ws.NewPingFrame(nil))
	anonymous.Expect() // the pong: registered before the signal
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	for name, p := range map[string]*testpeer.Peer{"bob": bob, "alice": alice, "unauthenticated": anonymous} {
		if code, reason := p.ExpectClose(); code != 1012 || reason != "server shutting down" {
			t.Fatalf("%s: close %d %q, want 1012 \"server shutting down\"", name, code, reason)
		}
	}
	select {
	case err := <-b.done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, b.stderr)
		}
		b.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10 s of SIGTERM")
	}
}

// TestServeReportsEveryBadSetting: invalid values are reported together and
// the exit status is 2.
func TestServeReportsEveryBadSetting(t *testing.T) {
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "WS_PORT=abc", "IDLE_TIMEOUT_SECONDS=-1", "LOG_FORMAT=xml")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want status 2\n%s", err, out)
	}
	for _, want := range []string{"WS_PORT", "IDLE_TIMEOUT_SECONDS", "LOG_FORMAT"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not name %s:\n%s", want, out)
		}
	}
}

// TestServeBrokenTokenFileIsFatal: D-1, the path and the position are named.
func TestServeBrokenTokenFileIsFatal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte("{\n  \"tokens\": {,\n}"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "AUTH_FILE="+path, "WS_PORT="+freePort(t))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want status 2\n%s", err, out)
	}
	if !strings.Contains(string(out), path) || !strings.Contains(string(out), "line 2") {
		t.Fatalf("message should name %s and line 2:\n%s", path, out)
	}
}

// TestServeRevokesDeletedToken: removing an actor from the token file (here
// by changing its actorTokenId, §4.9) disconnects its live connection with
// 4001 (D-1, OQ-9) within seconds.
func TestServeRevokesDeletedToken(t *testing.T) {
	src, err := os.ReadFile("../../examples/auth.json")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBroker(t, "", "AUTH_FILE="+path)
	alice := testpeer.Dial(t, b.addr)
	alice.Auth("dev-token-alice")
	bob := testpeer.Dial(t, b.addr)
	bob.Auth("dev-token-bob")
	edited := strings.Replace(string(src), `"actorTokenId": "alice"`, `"actorTokenId": "alice-2"`, 1)
	if edited == string(src) {
		t.Fatal("the demo file no longer has alice's actorTokenId")
	}
	if err := os.WriteFile(path, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	alice.ExpectFields("type", "disconnect", "reason", "token_revoked")
	if code, reason := alice.ExpectClose(); code != 4001 || reason != "token_revoked" {
		t.Fatalf("close %d %q, want 4001 token_revoked", code, reason)
	}
	bob.Send("type", "subscribe", "topic", "demo/general/still-here")
	bob.ExpectFields("type", "subscribed")
}

// TestServeSurvivesFileDescriptorExhaustion: with the open-file limit
// lowered, a connection storm beyond it does not stop the accept loop; once
// descriptors free up, new connections are served.
func TestServeSurvivesFileDescriptorExhaustion(t *testing.T) {
	b := startBroker(t, "ulimit -n 64")
	var storm []net.Conn
	for i := 0; i < 120; i++ {
		c, err := net.DialTimeout("tcp", b.addr, time.Second)
		if err != nil {
			break // the backlog is full: also fine
		}
		storm = append(storm, c)
	}
	waitUntil := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.stderr.String(), "too many open files") {
		if time.Now().After(waitUntil) {
			t.Fatalf("the storm of %d connections never exhausted the broker's descriptors\n%s", len(storm), b.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range storm {
		_ = c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", b.addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			_, _ = io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
			line, _ := bufio.NewReader(c).ReadString('\n')
			_ = c.Close()
			if strings.HasPrefix(line, "HTTP/1.1 200") {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("broker did not recover after the storm\n%s", b.stderr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestServeRefusesAnOpenAdminListenerWithoutASecret: an admin listener
// beyond loopback without ADMIN_SECRET is refused at start (exit 2, the
// reason named), as the admin API can disconnect every client; with a
// secret the broker starts and its admin API takes only that secret.
func TestServeRefusesAnOpenAdminListenerWithoutASecret(t *testing.T) {
	admin := "0.0.0.0:" + freePort(t)
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "WS_PORT="+freePort(t), "ADMIN_ADDR="+admin)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want status 2\n%s", err, out)
	}
	if !strings.Contains(string(out), "ADMIN_SECRET is empty") {
		t.Fatalf("output does not name ADMIN_SECRET:\n%s", out)
	}
	b := startBroker(t, "", "ADMIN_ADDR="+admin, "ADMIN_SECRET=ops-key")
	b.waitLogs(t, "admin listener", 1)
	local := strings.Replace(admin, "0.0.0.0", "127.0.0.1", 1)
	if code, body := get(t, "http://"+local+"/api/info"); code != 401 || !strings.Contains(body, "ADMIN_SECRET") {
		t.Fatalf("/api/info without the secret: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+local+"/api/info", nil)
	req.Header.Set("Authorization", "Bearer ops-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/api/info with the secret: %d", resp.StatusCode)
	}
	for _, open := range []string{"/ready", "/health", "/metrics"} {
		if code, _ := get(t, "http://"+local+open); code != 200 {
			t.Errorf("%s without the secret: %d, want 200 (probes and scrapers)", open, code)
		}
	}
	if code, _ := get(t, "http://"+local+"/debug/pprof/"); code != 401 {
		t.Errorf("/debug/pprof/ without the secret: %d, want 401", code)
	}
}
