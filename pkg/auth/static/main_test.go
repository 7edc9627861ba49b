package static

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitFor polls cond until it holds or a 5 s deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// fileVersion is bumped for every rewrite so each one gets a distinct mtime.
var fileVersion int

// writeFile replaces path with content, atomically and with a fresh,
// distinct mtime, so the watcher never sees a half-written file.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	fileVersion++
	mt := time.Unix(1_600_000_000+int64(fileVersion), 0)
	if err := os.Chtimes(tmp, mt, mt); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tempFile writes content to a new file in a test directory.
func tempFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	writeFile(t, path, content)
	return path
}

// open starts a Static on path with an observed logger; poll 0 means the
// watcher effectively never fires during the test.
func open(t *testing.T, path string, poll time.Duration) (*Static, *observer.ObservedLogs) {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	if poll == 0 {
		poll = time.Hour
	}
	s, err := New(Config{Path: path, PollInterval: poll, Logger: zap.New(core)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, logs
}

// openJSON starts a Static on a temp file holding content.
func openJSON(t *testing.T, content string) (*Static, *observer.ObservedLogs) {
	t.Helper()
	return open(t, tempFile(t, content), 0)
}
