package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/node/nodetest"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
)

// cliEnv is a kraken binary built for the test and a broker with the demo
// tokens of examples/auth.json.
type cliEnv struct {
	t    *testing.T
	bin  string
	url  string
	srv  *server.Server
	node *node.Node
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	return newCLIEnvWith(t, nil)
}

// newCLIEnvWith is newCLIEnv with cfg changing the broker's Config.
func newCLIEnvWith(t *testing.T, cfg func(*session.Config)) *cliEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "kraken")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tokens, err := static.New(static.Config{Path: "../../examples/auth.json"})
	if err != nil {
		t.Fatal(err)
	}
	sc := session.Config{Auth: tokens, RecordMessages: true}
	if cfg != nil {
		cfg(&sc)
	}
	n, err := node.New(node.Config{Session: sc, Hub: hub.Config{Workers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(n, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tokens.Close() }) // runs after the node's shutdown
	nodetest.Start(t, n, srv)
	return &cliEnv{t: t, bin: bin, url: "ws://" + srv.Addr().String() + "/ws", srv: srv, node: n}
}

// run runs the binary to completion.
func (e *cliEnv) run(env []string, args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	return e.runWithInput(nil, env, args...)
}

// runWithInput is run with stdin as the binary's standard input.
func (e *cliEnv) runWithInput(stdin io.Reader, env []string, args ...string) (code int, stdout, stderr string) {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Stdin = stdin
	cmd.Env = append(os.Environ(), append([]string{"KRAKEN_URL=" + e.url, "KRAKEN_TOKEN="}, env...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		e.t.Fatalf("kraken %v did not finish; stderr: %s", args, errb.String())
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// sub is a running `kraken sub`.
type sub struct {
	cmd   *exec.Cmd
	lines chan string
	errs  chan string
	done  chan struct{}
}

// startSub starts `kraken sub` and waits until every topic is subscribed.
func (e *cliEnv) startSub(token string, args ...string) *sub {
	e.t.Helper()
	cmd := exec.Command(e.bin, append([]string{"sub"}, args...)...)
	cmd.Env = append(os.Environ(), "KRAKEN_URL="+e.url, "KRAKEN_TOKEN="+token)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	s := &sub{cmd: cmd, lines: make(chan string, 100), errs: make(chan string, 100), done: make(chan struct{})}
	// Wait closes the pipes once the process exits, so it runs only after
	// both have been read to the end: a line still in a pipe would be lost.
	var pumps sync.WaitGroup
	pump := func(r io.Reader, ch chan string) {
		defer pumps.Done()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			ch <- sc.Text()
		}
		close(ch)
	}
	pumps.Add(2)
	go pump(stdout, s.lines)
	go pump(stderr, s.errs)
	e.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	go func() { pumps.Wait(); _ = cmd.Wait(); close(s.done) }()
	topics := 0
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && strings.Contains(a, "/") {
			topics++
		}
	}
	for topics > 0 {
		line := e.next(s.errs)
		if !strings.Contains(line, "subscribed to") {
			e.t.Fatalf("kraken sub: %s", line)
		}
		topics--
	}
	return s
}

func (e *cliEnv) next(ch chan string) string {
	e.t.Helper()
	select {
	case l, ok := <-ch:
		if !ok {
			e.t.Fatal("output ended")
		}
		return l
	case <-time.After(10 * time.Second):
		e.t.Fatal("no output")
		return ""
	}
}

// line returns the next line the sub prints on standard output; when the
// sub ends instead, the test fails with what it printed on standard error.
func (e *cliEnv) line(s *sub) string {
	e.t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			var errs []string
			for l := range s.errs {
				errs = append(errs, l)
			}
			<-s.done
			e.t.Fatalf("kraken sub ended (%v) without printing a message; stderr:\n%s", s.cmd.ProcessState, strings.Join(errs, "\n"))
		}
		return l
	case <-time.After(10 * time.Second):
		e.t.Fatal("no output")
		return ""
	}
}

// wait waits for the sub to exit and returns its exit code.
func (e *cliEnv) wait(s *sub) int {
	e.t.Helper()
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(10 * time.Second):
		e.t.Fatal("kraken sub did not exit")
		return -1
	}
}

func TestCLIPubSubJSON(t *testing.T) {
	e := newCLIEnv(t)
	s := e.startSub("dev-token-bob", "--json", "--count", "2", "demo/general/messages", "demo/general/other")
	code, out, errs := e.run(nil, "pub", "--token", "dev-token-alice", "demo/general/messages", `{"text":"hello from alice"}`)
	if code != 0 || out != "published to demo/general/messages\n" {
		t.Fatalf("pub: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	var line struct {
		Topic     string          `json:"topic"`
		Data      json.RawMessage `json:"data"`
		Sender    string          `json:"sender"`
		Timestamp string          `json:"timestamp"`
		MsgID     string          `json:"msgId"`
	}
	raw := e.line(s)
	if err := json.Unmarshal([]byte(raw), &line); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	ts, err := time.Parse(time.RFC3339, line.Timestamp)
	if line.Topic != "demo/general/messages" || string(line.Data) != `{"text":"hello from alice"}` ||
		line.Sender != "alice" || err != nil || time.Since(ts) > time.Minute || line.MsgID == "" {
		t.Fatalf("line %s", raw)
	}
	// DATA after the flags, from the environment's token, to the second topic.
	code, _, errs = e.run([]string{"KRAKEN_TOKEN=dev-token-alice"}, "pub", "demo/general/other", "[1, 2.5, null]", "--no-echo")
	if code != 0 {
		t.Fatalf("pub: exit %d: %s", code, errs)
	}
	raw = e.line(s)
	if !strings.Contains(raw, `"topic":"demo/general/other","data":[1,2.5,null]`) {
		t.Fatalf("line %s", raw)
	}
	if code := e.wait(s); code != 0 {
		t.Fatalf("sub exit %d", code)
	}
}

func TestCLIHumanOutputAndFilter(t *testing.T) {
	e := newCLIEnv(t)
	s := e.startSub("dev-token-bob", "--filter", "red", "--count", "1", "demo/general/messages")
	for _, args := range [][]string{
		{"pub", "--token", "dev-token-alice", "demo/general/messages", `"not for bob"`},
		{"pub", "--token", "dev-token-alice", "--filter", "red", "demo/general/messages", `{"text":"hi"}`},
	} {
		if code, _, errs := e.run(nil, args...); code != 0 {
			t.Fatalf("%v: %s", args, errs)
		}
	}
	line := e.line(s)
	re := regexp.MustCompile(`^\[\d\d:\d\d:\d\d\.\d{3}\] demo/general/messages alice \[filter red\]: \{"text":"hi"\}$`)
	if !re.MatchString(line) {
		t.Fatalf("line %q", line)
	}
	if code := e.wait(s); code != 0 {
		t.Fatalf("sub exit %d", code)
	}
}

func TestCLILoadBalanceAndCount(t *testing.T) {
	e := newCLIEnv(t)
	w1 := e.startSub("dev-token-bob", "--load-balance", "workers", "--json", "demo/general/jobs")
	w2 := e.startSub("dev-token-bob", "--load-balance", "workers", "--json", "demo/general/jobs")
	code, out, errs := e.run(nil, "pub", "--token", "dev-token-alice", "--count", "4", "--rate", "200", "demo/general/jobs", `{"job":1}`)
	if code != 0 || !strings.HasPrefix(out, "published 4 messages to demo/general/jobs in ") {
		t.Fatalf("pub: exit %d, %q %q", code, out, errs)
	}
	for range 2 {
		e.next(w1.lines)
		e.next(w2.lines)
	}
	select {
	case l := <-w1.lines:
		t.Fatalf("a fifth message: %s", l)
	case l := <-w2.lines:
		t.Fatalf("a fifth message: %s", l)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestCLIRefusals(t *testing.T) {
	e := newCLIEnv(t)
	cases := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"pub", "--token", "wrong", "demo/general/messages", "1"}, 1, []string{"refused the token (access_denied)"}},
		{[]string{"sub", "--token", "wrong", "demo/general/messages"}, 1, []string{"refused the token (access_denied)"}},
		{[]string{"sub", "--token", "dev-token-bob", "demo/other/messages"}, 1,
			[]string{`subscribe to "demo/other/messages" refused: unknown_topic (42940): `, "grants"}},
		{[]string{"pub", "--token", "dev-token-alice", "demo/other/messages", "1"}, 1,
			[]string{`publish to "demo/other/messages" refused: unknown_topic (42940): `}},
		{[]string{"pub", "--url", "ws://127.0.0.1:1/ws", "--token", "x", "demo/general/messages", "1"}, 1, []string{"cannot connect to ws://127.0.0.1:1/ws"}},
		{[]string{"pub", "--token", "dev-token-alice", "demo/general/messages"}, 2, []string{"want TOPIC and DATA"}},
		{[]string{"pub", "--token", "dev-token-alice", "demo/general/messages", "hello"}, 2, []string{"DATA must be JSON"}},
		{[]string{"pub", "demo/general/messages", "1"}, 2, []string{"no token"}},
		{[]string{"sub", "--token", "dev-token-bob"}, 2, []string{"want at least one TOPIC"}},
		{[]string{"sub", "--token", "dev-token-bob", "--url", "http://x", "a/b/c"}, 2, []string{"must start with ws://"}},
		{[]string{"presence", "--token", "dev-token-bob", ""}, 2, []string{"ROOM is a room's slug, such as general"}},
		{[]string{"presence", "--token", "dev-token-bob", "demo/general"}, 2, []string{`ROOM is a room's slug, such as general, not "demo/general"`}},
		{[]string{"frobnicate"}, 2, []string{`kraken: unknown command "frobnicate"`, "kraken pub TOPIC DATA"}},
		{[]string{"--ws-port", "8095", "check-config"}, 2, []string{`"check-config" is a command: put it first`}},
	}
	for _, c := range cases {
		code, _, stderr := e.run(nil, c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d; stderr %q", c.args, code, c.code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr %q lacks %q", c.args, stderr, w)
			}
		}
	}
}

// TestCLIMessageTooLargeNamesTheSetting: a refusal for size says which
// limits it is.
func TestCLIMessageTooLargeNamesTheSetting(t *testing.T) {
	e := newCLIEnvWith(t, func(c *session.Config) { c.MaxMessageSize = 64 })
	code, _, stderr := e.run(nil, "pub", "--token", "dev-token-alice", "demo/general/messages", `"`+strings.Repeat("x", 100)+`"`)
	if code != 1 || !strings.Contains(stderr, "message_too_large (42930)") || !strings.Contains(stderr, "MAX_MESSAGE_SIZE") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestCLIPresence(t *testing.T) {
	e := newCLIEnv(t)
	code, out, errs := e.run(nil, "presence", "--token", "dev-token-bob", "--set", `{"name":"bob"}`, "general")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var m struct {
		ActorTokenID string          `json:"actorTokenId"`
		Presence     json.RawMessage `json:"presence"`
		Status       string          `json:"status"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &m); err != nil || m.ActorTokenID != "bob" ||
		string(m.Presence) != `{"name":"bob"}` || m.Status != "online" {
		t.Fatalf("output %q (%v)", out, err)
	}
}

// TestCLIRateLimitSaysTheLimit: a publish refused for the rate says the
// limit the broker measured it against and which settings give it
// (docs/protocol.md "Refusals": the 42910 frame's limit field).
func TestCLIRateLimitSaysTheLimit(t *testing.T) {
	e := newCLIEnv(t) // examples/auth.json: alice's rateLimit is 50
	code, _, stderr := e.run(nil, "pub", "--token", "dev-token-alice", "--count", "200", "--rate", "1000", "demo/general/messages", "1")
	for _, w := range []string{"rate_limit_exceeded (42910)", "may publish 50 messages a second", "RATE_LIMIT", "rateLimit", "--rate"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q lacks %q", stderr, w)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}
