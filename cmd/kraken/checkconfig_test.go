package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/certs/certstest"
	"github.com/NoLagApp/kraken/pkg/config"
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
			want: []string{fmt.Sprintf("settings: ok (all %d settings valid, environment and flags applied)", len(config.Vars())),
				"token file ../../examples/auth.json: ok (2 tokens)", "kraken check-config: OK (0 warnings)"}},
		{name: "durable groups without the store", args: []string{"check-config"}, env: []string{"AUTH_FILE=" + good, "DURABLE_GROUPS=true"},
			want: []string{"warning: DURABLE_GROUPS=true has no effect without STORE_BACKEND=jetstream (STORE_BACKEND=memory)", "kraken check-config: OK (1 warning)"}},
		{name: "durable groups with the store", args: []string{"check-config"}, env: []string{"AUTH_FILE=" + good, "DURABLE_GROUPS=true", "STORE_BACKEND=jetstream"},
			want: []string{"kraken check-config: OK (0 warnings)"}},
		{name: "-t with a flag", args: []string{"-t", "--auth-file", good},
			want: []string{"token file " + good + ": ok (1 token)", "kraken check-config: OK"}},
		{name: "-t after flags", args: []string{"--ws-port", "9000", "-t"}, env: []string{"AUTH_FILE=" + good},
			want: []string{"kraken check-config: OK"}},
		{name: "unknown permission", args: []string{"check-config"}, env: []string{"AUTH_FILE=" + readwrite}, wantCode: 2,
			want: []string{
				"token file " + readwrite + ": 1 error: a running broker refuses to reload this file and keeps the tokens in force",
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
			env: []string{"AUTH_ALLOW_ALL=true", "ADMIN_ADDR=0.0.0.0:9469", "ADMIN_SECRET=ops-key", "INTERNAL_SECRET=change_me"},
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

// TestCheckConfigTokenFile: check-config checks every grant pattern with
// the broker's topic rules and requires the {"tokens": {...}} shape; each
// bad file exits 2 with its error at path:line:column, under a heading
// that counts the errors and says a running broker would not reload the
// file, never "accepted"; a file with warnings only exits 0.
func TestCheckConfigTokenFile(t *testing.T) {
	dir := t.TempDir()
	rule := func(pattern string) string {
		return "{\"tokens\": {\n  \"tok\": {\"actorTokenId\": \"alice\",\n    \"allowedTopics\": [{\"pattern\": " + pattern +
			", \"permission\": \"pubSub\"}]}}}"
	}
	const head = ": a running broker refuses to reload this file and keeps the tokens in force"
	tests := []struct {
		name     string
		give     string
		wantCode int
		want     []string // lines of stdout after the settings line, each a prefix; "{file}" stands for the file's path
	}{
		{name: "hash not last", give: rule(`"demo/#/general"`), wantCode: 2, want: []string{
			"token file {file}: 1 error" + head,
			`{file}:3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "demo/#/general" misplaces a wildcard ('+' and '#' must be whole levels, '#' only the last); the rule grants nothing`,
			"kraken check-config: 1 error, 0 warnings"}},
		{name: "plus inside a level", give: rule(`"demo/gen+/x"`), wantCode: 2, want: []string{
			"token file {file}: 1 error" + head,
			`{file}:3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "demo/gen+/x" misplaces a wildcard`,
			"kraken check-config: 1 error, 0 warnings"}},
		{name: "empty pattern", give: rule(`""`), wantCode: 2, want: []string{
			"token file {file}: 1 error" + head,
			`{file}:3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern is empty; the rule grants nothing`,
			"kraken check-config: 1 error, 0 warnings"}},
		{name: "2,000-byte pattern", give: rule(`"` + strings.Repeat("a", 2000) + `"`), wantCode: 2, want: []string{
			"token file {file}: 1 error" + head,
			`{file}:3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…" is 2000 bytes, more than the 1024 a topic may have; no client can subscribe to it as written`,
			"kraken check-config: 1 error, 0 warnings"}},
		{name: "65 levels", give: rule(`"a` + strings.Repeat("/a", 64) + `"`), wantCode: 2, want: []string{
			"token file {file}: 1 error" + head,
			`{file}:3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/…" has 65 levels, more than the 64 a topic may have`,
			"kraken check-config: 1 error, 0 warnings"}},
		{name: "no tokens object", give: "{\n  \"_comment\": \"no tokens\",\n  \"users\": {}\n}", wantCode: 2, want: []string{
			"token file {file}: 1 error, 1 warning" + head,
			`{file}:1:1: error: no "tokens" key: the file grants nothing; want {"tokens": {"<token>": {"actorTokenId": ...}}}`,
			`{file}:3:3: warning: unknown top-level key "users" is ignored`,
			"kraken check-config: 1 error, 1 warning"}},
		{name: "tokens null", give: `{"tokens": null}`, wantCode: 2, want: []string{
			"token file {file}: 1 error" + head, `{file}:1:12: error: "tokens" is null: the file grants nothing`}},
		{name: "tokens an array", give: `{"tokens": [{"actorTokenId": "alice"}]}`, wantCode: 2, want: []string{
			"token file {file}: 1 error" + head, `{file}:1:12: error: "tokens" is an array, want an object`}},
		{name: "top-level array", give: `[{"tokens": {}}]`, wantCode: 2, want: []string{
			"token file {file}: 1 error" + head, `{file}:1:1: error: the top-level value is an array, want an object with a "tokens" object`}},
		{name: "bad active subscription", give: "{\"tokens\": {\"tok\": {\"actorTokenId\": \"alice\",\n  \"activeSubscriptions\": [\"demo/#/x\"]}}}", wantCode: 2,
			want: []string{"token file {file}: 1 error" + head,
				`{file}:2:27: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0] "demo/#/x" misplaces a wildcard ('+' and '#' must be whole levels, '#' only the last); it is never restored`}},
		{name: "valid wildcards", give: rule(`"demo/+/x/#"`), want: []string{
			"token file {file}: ok (1 token)", "kraken check-config: OK (0 warnings)"}},
		{name: "warnings only", give: "{\"tokens\": {\"tok\": {\"actorTokenId\": \"alice\", \"typo\": 1}}}", want: []string{
			"token file {file}: ok (1 token), 1 warning:", `{file}:1:46: warning: token entry 1 (actorTokenId "alice"): unknown key "typo" is ignored`,
			"kraken check-config: OK (1 warning)"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("auth-%d.json", i))
			if err := os.WriteFile(path, []byte(tt.give), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errs := runIn([]string{"AUTH_FILE=" + path}, "check-config")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errs)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) < 1 || !strings.HasPrefix(lines[0], "settings: ok (all ") {
				t.Fatalf("first line %q, want the settings", lines[0])
			}
			lines = lines[1:]
			if len(lines) < len(tt.want) {
				t.Fatalf("stdout has %d lines after the settings, want at least %d:\n%s", len(lines), len(tt.want), out)
			}
			for j, w := range tt.want {
				if w = strings.ReplaceAll(w, "{file}", path); !strings.HasPrefix(lines[j], w) {
					t.Errorf("line %d = %q\nwant prefix %q", j+2, lines[j], w)
				}
			}
			if strings.Contains(out, "accepted") {
				t.Errorf("stdout says accepted:\n%s", out)
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

// TestCheckConfigTLSCertificate: check-config loads the certificate files
// as the broker would and judges the certificate's dates.
func TestCheckConfigTLSCertificate(t *testing.T) {
	ca := certstest.New(t, "check")
	good, goodKey := ca.Server("good", 365*24*time.Hour)
	soon, soonKey := ca.Server("soon", 10*24*time.Hour)
	expired, expiredKey := ca.Server("expired", -time.Minute)
	base := []string{"AUTH_FILE=../../examples/auth.json", "WSS_PORT=8443"}
	tests := []struct {
		name     string
		env      []string
		wantCode int
		want     string
	}{
		{"valid", []string{"TLS_CERT_FILE=" + good, "TLS_KEY_FILE=" + goodKey}, 0, "TLS certificate: ok (" + good + ", key matches, expires "},
		{"expires soon", []string{"TLS_CERT_FILE=" + soon, "TLS_KEY_FILE=" + soonKey}, 0, "warning: TLS certificate " + soon + " expires in 9 days"},
		{"expired", []string{"TLS_CERT_FILE=" + expired, "TLS_KEY_FILE=" + expiredKey}, 2, "error: TLS certificate: " + expired + " expired on "},
		{"client CA without mutual TLS", []string{"TLS_CERT_FILE=" + good, "TLS_KEY_FILE=" + goodKey, "TLS_CLIENT_CA_FILE=" + ca.File}, 0, "warning: TLS_CLIENT_CA_FILE=" + ca.File + " is not used"},
		{"key of another certificate", []string{"TLS_CERT_FILE=" + good, "TLS_KEY_FILE=" + soonKey}, 2, "private key does not match public key"},
		{"client CA", []string{"TLS_CERT_FILE=" + good, "TLS_KEY_FILE=" + goodKey, "TLS_CLIENT_CA_FILE=" + ca.File, "ADMIN_TLS=true"}, 0, "TLS client CA: ok (" + ca.File},
		{"no certificate", nil, 2, "TLS_CERT_FILE and TLS_KEY_FILE are both required by WSS_PORT, MQTTS_PORT and ADMIN_TLS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, _ := runIn(append(append([]string{}, base...), tt.env...), "check-config")
			if code != tt.wantCode || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, want %d; output lacks %q:\n%s", code, tt.wantCode, tt.want, out)
			}
		})
	}
	code, out, _ := runIn([]string{"AUTH_FILE=../../examples/auth.json", "TLS_CERT_FILE=" + good}, "check-config")
	if code != 0 || !strings.Contains(out, "no listener serves TLS") {
		t.Fatalf("files without a TLS listener: exit %d\n%s", code, out)
	}
}
