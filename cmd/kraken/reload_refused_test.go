package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestServeSIGHUPRefusesWhatCheckConfigReports: for each kind of error
// check-config reports (the files of pkg/auth/static/testdata/refused, one
// kind each), SIGHUP with that file in place keeps the tokens in force with
// their grants (a live publisher's publishes still reach a live
// subscriber, a new connection still authenticates), logs one error line
// naming path:line:column of the error check-config reports first, makes
// the admin /ready answer 503 with that reason, and counts a failed reload
// in kraken_token_file_reloads_total; a valid file then loads and the
// node is ready again.
func TestServeSIGHUPRefusesWhatCheckConfigReports(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "pkg", "auth", "static", "testdata", "refused", "*.json"))
	if err != nil || len(files) < 30 {
		t.Fatalf("%d refused token files (%v), want every kind", len(files), err)
	}
	path := filepath.Join(t.TempDir(), "auth.json")
	writeTokenFile(t, path, hupAliceBob)
	admin := "http://127.0.0.1:" + freePort(t)
	b := startBroker(t, "", "AUTH_FILE="+path, "ADMIN_ADDR="+strings.TrimPrefix(admin, "http://"))
	b.waitLogs(t, "admin listener", 1)

	alice := testpeer.Dial(t, b.addr)
	alice.Auth("tok-alice")
	alice.Send("type", "subscribe", "topic", "demo/general/#")
	alice.ExpectFields("type", "subscribed")
	bob := testpeer.Dial(t, b.addr)
	bob.Auth("tok-bob")

	failures := func() []map[string]any {
		return append(b.logLines("Refused auth file "+path+": "), b.logLines("Failed to parse auth file "+path+": ")...)
	}
	for i, file := range files {
		kind := strings.TrimSuffix(filepath.Base(file), ".json")
		bad, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		writeTokenFile(t, path, string(bad))
		// Where check-config puts the first error, as the log and /ready
		// must name it.
		_, probs := static.Check(path)
		var at, parseAt string
		for _, p := range probs {
			if !p.Warning {
				at = fmt.Sprintf("%s:%d:%d: ", path, p.Line, p.Column)
				parseAt = fmt.Sprintf("%s: line %d, column %d: ", path, p.Line, p.Column)
				break
			}
		}
		if at == "" {
			t.Fatalf("%s: check-config finds no error: %v", kind, probs)
		}

		b.sighup(t)
		deadline := time.Now().Add(10 * time.Second)
		for len(failures()) < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no failed reload logged within 10 s\n%s", kind, b.stderr)
			}
			if err, ok := b.exited(); ok {
				t.Fatalf("%s: broker exited: %v\n%s", kind, err, b.stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		line := newest(b, path)
		msg, _ := line["msg"].(string)
		if !strings.Contains(msg, at) && !strings.Contains(msg, parseAt) {
			t.Errorf("%s: log %q does not name %s", kind, msg, strings.TrimSuffix(at, ": "))
		}
		checkField(t, line, "level", "error")
		checkField(t, line, "trigger", "sighup")
		checkField(t, line, "tokens", 2) // kept

		code, body := get(t, admin+"/ready")
		var ready struct {
			Status  string
			Failing []string
			Reasons map[string]string
		}
		if err := json.Unmarshal([]byte(body), &ready); err != nil || code != 503 || ready.Status != "not_ready" ||
			len(ready.Failing) != 1 || ready.Failing[0] != "token_file" {
			t.Fatalf("%s: /ready = %d %s", kind, code, body)
		}
		if r := ready.Reasons["token_file"]; !strings.Contains(r, at) && !strings.Contains(r, parseAt) {
			t.Errorf("%s: /ready reason %q does not name %s", kind, r, strings.TrimSuffix(at, ": "))
		}

		// The grants in force are those of the last valid file.
		bob.Send("type", "publish", "topic", "demo/general/x", "data", i, "msgRef", kind)
		bob.ExpectFields("type", "published")
		alice.ExpectFields("type", "message", "topic", "demo/general/#", "data", i)
		if !authAccepted(t, b.addr, "tok-bob") {
			t.Fatalf("%s: tok-bob refused after the refused reload", kind)
		}
	}
	if n, r := len(failures()), len(b.logLines("Reloaded auth file ")); n != len(files) || r != 0 {
		t.Errorf("%d failed reloads and %d reloads logged, want %d and 0\n%s", n, r, len(files), b.stderr)
	}
	_, metrics := get(t, admin+"/metrics")
	if want := fmt.Sprintf(`kraken_token_file_reloads_total{result="failed"} %d`, len(files)); !strings.Contains(metrics, want+"\n") {
		t.Errorf("/metrics lacks %q", want)
	}

	writeTokenFile(t, path, hupEdited)
	b.sighup(t)
	checkField(t, b.waitLogs(t, "Reloaded auth file ", 1)[0], "tokens", 3)
	if code, body := get(t, admin+"/ready"); code != 200 || body != `{"status":"ready"}` {
		t.Errorf("/ready after a valid reload: %d %s", code, body)
	}
	b.expectRunning(t)
}

// newest returns the last log line about a failed reload of path.
func newest(b *broker, path string) map[string]any {
	var last map[string]any
	for _, l := range b.logLines("") {
		if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "Refused auth file "+path+": ") ||
			strings.HasPrefix(msg, "Failed to parse auth file "+path+": ") {
			last = l
		}
	}
	return last
}
