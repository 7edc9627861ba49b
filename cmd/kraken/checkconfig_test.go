package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runIn runs the command in process with env as the environment.
func runIn(env []string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, lookupIn(env), &out, &errb)
	return code, out.String(), errb.String()
}

// TestCheckConfig: check-config (and -t) reads the environment and the
// flags as the broker does, checks every setting and the token file, and
// exits 0 with OK or 2 with every problem, token file problems with
// path:line:column.
func TestCheckConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"tokens": {"t": {"actorTokenId": "a", "allowedTopics": [{"pattern": "x/#", "permission": "pubSub"}]}}}`)
	readwrite := write("readwrite.json", "{\"tokens\": {\n  \"t\": {\"actorTokenId\": \"a\",\n    \"allowedTopics\": [{\"pattern\": \"x/#\", \"permission\": \"readwrite\"}]}}}")
	broken := write("broken.json", "{\n  \"tokens\": {,\n}")
	tests := []struct {
		name     string
		env      []string
		args     []string
		wantCode int
		want     []string // lines (or parts of lines) of stdout
		dontWant []string
	}{
		{name: "demo defaults", args: []string{"check-config"}, env: []string{"AUTH_FILE=../../examples/auth.json"},
			want: []string{"settings: ok", "token file ../../examples/auth.json: ok (2 tokens)", "kraken check-config: OK (0 warnings)"}},
		{name: "-t with a flag", args: []string{"-t", "--auth-file", good},
			want: []string{"token file " + good + ": ok (1 token)", "kraken check-config: OK"}},
		{name: "-t after flags", args: []string{"--ws-port", "9000", "-t"}, env: []string{"AUTH_FILE=" + good},
			want: []string{"kraken check-config: OK"}},
		{name: "unknown permission", args: []string{"check-config"}, env: []string{"AUTH_FILE=" + readwrite}, wantCode: 2,
			want: []string{
				"token file " + readwrite + ": 1 token accepted as written",
				readwrite + `:3:56: error: token entry 1 (actorTokenId "a"): allowedTopics[0].permission "readwrite" is not`,
				"kraken check-config: 1 error, 0 warnings",
			}},
		{name: "broken file", args: []string{"-t"}, env: []string{"AUTH_FILE=" + broken}, wantCode: 2,
			want: []string{broken + ":2:14: error: invalid character ','"}},
		{name: "missing file", args: []string{"-t"}, env: []string{"AUTH_FILE=" + filepath.Join(dir, "none.json")}, wantCode: 2,
			want: []string{"error: cannot read " + filepath.Join(dir, "none.json") + ": no such file or directory"}},
		{name: "every bad setting", args: []string{"check-config", "--rate-limit", "0"},
			env: []string{"WS_PORT=abc", "AUTH_FILE=" + good, "ADMIN_ADDR=nowhere"}, wantCode: 2,
			want: []string{`error: config: WS_PORT="abc": not an integer`, `error: config: ADMIN_ADDR="nowhere": not host:port`,
				"error: config: RATE_LIMIT=0: must be at least 1", "kraken check-config: 3 errors"},
			dontWant: []string{"settings: ok"}},
		{name: "a flag fixes a bad variable", args: []string{"-t", "--ws-port=9000"}, env: []string{"WS_PORT=abc", "AUTH_FILE=" + good},
			want: []string{"kraken check-config: OK"}},
		{name: "warnings do not fail", args: []string{"-t"},
			env: []string{"AUTH_ALLOW_ALL=true", "ADMIN_ADDR=0.0.0.0:9469", "INTERNAL_SECRET=change_me"},
			want: []string{"warning: AUTH_ALLOW_ALL=true", "warning: ADMIN_ADDR=0.0.0.0:9469 listens beyond loopback",
				`warning: INTERNAL_SECRET is the placeholder "change_me"`, "token file: not used (AUTH_ALLOW_ALL=true)",
				"kraken check-config: OK (3 warnings)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runIn(tt.env, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.dontWant {
				if strings.Contains(out, w) {
					t.Errorf("stdout has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestPrintEnvIsEffective: print-env prints the values the broker would
// run with, environment and flags applied, with secrets masked.
func TestPrintEnvIsEffective(t *testing.T) {
	code, out, errs := runIn([]string{"WS_PORT=9000", "RATE_LIMIT=5", "BACKEND_SECRET=hunter2", "INTERNAL_SECRET="},
		"print-env", "--rate-limit", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, w := range []string{"\nWS_PORT=9000\n", "\nRATE_LIMIT=7\n", "\nBACKEND_SECRET=********\n", "\nINTERNAL_SECRET=\n",
		"\nADMIN_ADDR=127.0.0.1:9469\n", "\nIDLE_TIMEOUT_SECONDS=60\n"} {
		if !strings.Contains("\n"+out, w) {
			t.Errorf("print-env lacks %q:\n%s", strings.TrimSpace(w), out)
		}
	}
	if strings.Contains(out, "hunter2") {
		t.Errorf("print-env shows a secret:\n%s", out)
	}
	if code, _, errs := runIn([]string{"WS_PORT=abc"}, "print-env"); code != 2 || !strings.Contains(errs, "WS_PORT") {
		t.Errorf("bad setting: exit %d, stderr %q", code, errs)
	}
}
