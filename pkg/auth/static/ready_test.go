package static

import (
	"errors"
	"strings"
	"testing"
)

// TestReloadLogsOneLineAndReportsReadiness: every reload writes exactly one
// line, naming its trigger (and, for a failure, the tokens kept); a failed
// reload makes LastError, Ready and Stats.Failing report it until a reload
// succeeds.
func TestReloadLogsOneLineAndReportsReadiness(t *testing.T) {
	path := tempFile(t, twoTokens)
	s, logs := open(t, path, 0)
	if err := s.Ready(); err != nil || s.Stats().Failing {
		t.Fatalf("after New: Ready = %v, Failing = %v", err, s.Stats().Failing)
	}
	logs.TakeAll()

	writeFile(t, path, "{\n  \"tokens\": {,\n}")
	err := s.ReloadFor("sighup")
	if !errors.Is(err, ErrParse) {
		t.Fatalf("ReloadFor = %v, want ErrParse", err)
	}
	lines := logs.TakeAll()
	if len(lines) != 1 {
		t.Fatalf("%d log lines for one failed reload, want 1: %v", len(lines), messages(lines))
	}
	ctx := lines[0].ContextMap()
	if !strings.HasPrefix(lines[0].Message, "Failed to parse auth file "+path+": line 2, column 14") ||
		ctx["trigger"] != "sighup" || ctx["tokens"] != int64(2) || ctx["path"] != path {
		t.Errorf("failure line = %q %v", lines[0].Message, ctx)
	}
	if !errors.Is(s.Ready(), ErrParse) || !errors.Is(s.LastError(), ErrParse) || !s.Stats().Failing {
		t.Errorf("after a failed reload: Ready = %v, LastError = %v, Failing = %v", s.Ready(), s.LastError(), s.Stats().Failing)
	}

	writeFile(t, path, twoTokens)
	if err := s.ReloadFor("sighup"); err != nil {
		t.Fatal(err)
	}
	lines = logs.TakeAll()
	if len(lines) != 1 || lines[0].Message != "Reloaded auth file "+path+": 2 tokens" ||
		lines[0].ContextMap()["trigger"] != "sighup" {
		t.Fatalf("success lines = %v", messages(lines))
	}
	if err := s.Ready(); err != nil || s.Stats().Failing {
		t.Errorf("after a good reload: Ready = %v, Failing = %v", err, s.Stats().Failing)
	}
}
