package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Token files of the SIGHUP tests. Every actor may use demo/#.
const (
	hupAliceBob = `{"tokens": {
  "tok-alice": {"actorTokenId": "alice", "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]},
  "tok-bob": {"actorTokenId": "bob", "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]}
}}`
	// hupEdited adds carol and revokes bob by renaming his actor (§4.9).
	hupEdited = `{"tokens": {
  "tok-alice": {"actorTokenId": "alice", "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]},
  "tok-bob": {"actorTokenId": "bob-2", "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]},
  "tok-carol": {"actorTokenId": "carol", "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]}
}}`
	hupBroken = "{\n  \"tokens\": {,\n}"
)

// tokenFileSize and tokenFileTime are the size and mtime of every version
// of a SIGHUP test's token file. The watcher compares only these two, so it
// never sees a change and only SIGHUP can load a new version.
const tokenFileSize = 4096

var tokenFileTime = time.Unix(1_600_000_000, 0)

// writeTokenFile replaces path atomically with content padded with spaces to
// tokenFileSize bytes and with mtime tokenFileTime.
func writeTokenFile(t *testing.T, path, content string) {
	t.Helper()
	if len(content) > tokenFileSize {
		t.Fatalf("token file of %d bytes, more than %d", len(content), tokenFileSize)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content+strings.Repeat(" ", tokenFileSize-len(content))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(tmp, tokenFileTime, tokenFileTime); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// exited reports whether the broker process has ended, and its Wait error.
func (b *broker) exited() (error, bool) {
	select {
	case err := <-b.done:
		b.done <- err // for the next caller and the cleanup
		return err, true
	default:
		return nil, false
	}
}

// logLines returns the broker's JSON log lines whose "msg" starts with
// prefix, in order.
func (b *broker) logLines(prefix string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(b.stderr.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if msg, _ := m["msg"].(string); strings.HasPrefix(msg, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// waitLogs waits up to 10 s until the broker has logged n lines whose "msg"
// starts with prefix and returns them; it fails at once if the broker exits.
func (b *broker) waitLogs(t *testing.T, prefix string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if lines := b.logLines(prefix); len(lines) >= n {
			return lines
		}
		if err, ok := b.exited(); ok {
			t.Fatalf("broker exited (%v) before logging %q\n%s", err, prefix, b.stderr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %d log lines %q within 10 s\n%s", n, prefix, b.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sighup sends SIGHUP to the broker.
func (b *broker) sighup(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
}

// expectRunning fails if the broker process has ended.
func (b *broker) expectRunning(t *testing.T) {
	t.Helper()
	if err, ok := b.exited(); ok {
		t.Fatalf("broker exited after SIGHUP: %v\n%s", err, b.stderr)
	}
}

// authAccepted opens a connection and reports whether token is accepted.
func authAccepted(t *testing.T, addr, token string) bool {
	t.Helper()
	p := testpeer.Dial(t, addr)
	p.Send("type", "auth", "token", token)
	ok := p.ExpectType("auth").Map["success"] == true
	_ = p.Conn.Close()
	return ok
}

// checkField fails unless line[key], compared after JSON rendering, is want.
func checkField(t *testing.T, line map[string]any, key string, want any) {
	t.Helper()
	got, _ := json.Marshal(line[key])
	w, _ := json.Marshal(want)
	if string(got) != string(w) {
		t.Errorf("log %q: %s = %s, want %s", line["msg"], key, got, w)
	}
}

// TestServeSIGHUPReloadsTokenFile: SIGHUP loads an edited token file at once
// through the watcher's path (a new token authenticates, a revoked actor's
// live connection is closed with 4001), logs the reload in one line with
// the path, the token count and the trigger, and does not end the process;
// SIGTERM afterwards still closes the connections and exits with status 0.
func TestServeSIGHUPReloadsTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	writeTokenFile(t, path, hupAliceBob)
	b := startBroker(t, "", "AUTH_FILE="+path)
	alice := testpeer.Dial(t, b.addr)
	alice.Auth("tok-alice")
	bob := testpeer.Dial(t, b.addr)
	bob.Auth("tok-bob")
	if authAccepted(t, b.addr, "tok-carol") {
		t.Fatal("tok-carol accepted before it was in the file")
	}

	writeTokenFile(t, path, hupEdited) // same size and mtime: the watcher cannot see it
	b.sighup(t)
	line := b.waitLogs(t, "Reloaded auth file "+path+": 3 tokens", 1)[0]
	checkField(t, line, "level", "info")
	checkField(t, line, "path", path)
	checkField(t, line, "tokens", 3)
	checkField(t, line, "trigger", "sighup")
	b.expectRunning(t)

	carol := testpeer.Dial(t, b.addr)
	carol.Auth("tok-carol") // fails the test unless accepted
	bob.ExpectFields("type", "disconnect", "reason", "token_revoked")
	if code, reason := bob.ExpectClose(); code != 4001 || reason != "token_revoked" {
		t.Fatalf("bob: close %d %q, want 4001 token_revoked", code, reason)
	}
	alice.Send("type", "subscribe", "topic", "demo/still-here")
	alice.ExpectFields("type", "subscribed")
	if n := len(b.logLines("Reloaded auth file ")); n != 1 {
		t.Errorf("%d reloads of the token file, want 1 (SIGHUP's; the watcher must not have fired)\n%s", n, b.stderr)
	}

	// SIGTERM is unchanged (its close code is TestServeHealthAndGracefulShutdown's).
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	alice.ExpectClose()
	expectExit0(t, b, 10*time.Second, "SIGTERM")
}

// TestServeSIGHUPBrokenTokenFileKeepsTokens: SIGHUP with an unparsable file
// logs one line, "Failed to parse auth file <path>: <reason>" at error
// level with the trigger and the count of the tokens kept, keeps the last
// valid tokens for new and live connections and keeps running (D-1); a
// later SIGHUP with a fixed file loads it.
func TestServeSIGHUPBrokenTokenFileKeepsTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	writeTokenFile(t, path, hupAliceBob)
	b := startBroker(t, "", "AUTH_FILE="+path)
	alice := testpeer.Dial(t, b.addr)
	alice.Auth("tok-alice")

	writeTokenFile(t, path, hupBroken)
	b.sighup(t)
	failed := b.waitLogs(t, "Failed to parse auth file "+path+": ", 1)[0]
	checkField(t, failed, "level", "error")
	if msg := failed["msg"].(string); !strings.Contains(msg, "line 2, column 14") {
		t.Errorf("parse failure %q does not give the position, line 2, column 14", msg)
	}
	checkField(t, failed, "path", path)
	checkField(t, failed, "tokens", 2) // kept
	checkField(t, failed, "trigger", "sighup")
	b.expectRunning(t)

	bob := testpeer.Dial(t, b.addr)
	bob.Auth("tok-bob") // the last valid set is still in force
	alice.ExpectNothing(300 * time.Millisecond)
	alice.Send("type", "subscribe", "topic", "demo/still-here")
	alice.ExpectFields("type", "subscribed")
	if n := len(b.logLines("Reloaded auth file ")); n != 0 {
		t.Errorf("%d reloads, want 0\n%s", n, b.stderr)
	}
	if n := len(b.logLines("Failed to parse auth file ")) + len(b.logLines("token file not reloaded")); n != 1 {
		t.Errorf("%d lines about the failed reload, want 1\n%s", n, b.stderr)
	}

	writeTokenFile(t, path, hupEdited)
	b.sighup(t)
	checkField(t, b.waitLogs(t, "Reloaded auth file ", 1)[0], "tokens", 3)
	carol := testpeer.Dial(t, b.addr)
	carol.Auth("tok-carol")
	b.expectRunning(t)
}

// TestServeSIGHUPWithAllowAll: with AUTH_ALLOW_ALL=true there is no file;
// each SIGHUP logs that there is nothing to reload and the broker keeps
// serving.
func TestServeSIGHUPWithAllowAll(t *testing.T) {
	b := startBroker(t, "", "AUTH_ALLOW_ALL=true")
	p := testpeer.Dial(t, b.addr)
	p.Auth("anything")
	for i := 1; i <= 2; i++ {
		b.sighup(t)
		checkField(t, b.waitLogs(t, "SIGHUP: AUTH_ALLOW_ALL=true, there is no token file to reload", i)[i-1], "level", "info")
	}
	b.expectRunning(t)
	p.Send("type", "subscribe", "topic", "any/topic")
	p.ExpectFields("type", "subscribed")
	testpeer.Dial(t, b.addr).Auth("someone-else")
}
