package static

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/NoLagApp/kraken/pkg/auth"
)

const twoTokens = `{"tokens":{"ta":{"actorTokenId":"a"},"tb":{"actorTokenId":"b"}}}`

func TestWatcherReloadsChangedFile(t *testing.T) {
	path := tempFile(t, twoTokens)
	s, logs := open(t, path, 5*time.Millisecond)
	changed := make(chan struct{}, 10)
	s.OnChange(func() {
		if _, err := s.Validate(context.Background(), "tc"); err != nil {
			t.Errorf("OnChange ran before the new set was in place: %v", err)
		}
		changed <- struct{}{}
	})

	writeFile(t, path, `{"tokens":{"ta":{"actorTokenId":"a2"},"tc":{"actorTokenId":"c"}}}`)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("OnChange did not fire")
	}
	tests := []struct {
		give      string
		wantActor string
	}{
		{give: "ta", wantActor: "a2"},
		{give: "tb"}, // removed: denied
		{give: "tc", wantActor: "c"},
	}
	for _, tt := range tests {
		g, err := s.Validate(context.Background(), tt.give)
		if tt.wantActor == "" {
			if !errors.Is(err, auth.ErrDenied) {
				t.Errorf("%s: err = %v, want ErrDenied", tt.give, err)
			}
			continue
		}
		if err != nil || g.ActorTokenID != tt.wantActor {
			t.Errorf("%s: %+v, %v; want actor %s", tt.give, g, err, tt.wantActor)
		}
	}
	if _, err := s.Revalidate(context.Background(), "b"); !errors.Is(err, auth.ErrDenied) {
		t.Errorf("revoked actor: err = %v, want ErrDenied", err)
	}
	waitFor(t, "the reload to be counted", func() bool { return s.Stats().Reloads == 1 })
	if st := s.Stats(); st.Reloads != 1 || st.ReloadFailures != 0 || st.Tokens != 2 {
		t.Errorf("Stats = %+v, want 1 reload, 0 failures, 2 tokens", st)
	}
	if logs.FilterMessage("Reloaded auth file "+path+": 2 tokens").Len() != 1 {
		t.Errorf("no token-count line; logs: %v", messages(logs.All()))
	}
}

func TestBrokenReloadKeepsLastValidSet(t *testing.T) {
	path := tempFile(t, twoTokens)
	s, logs := open(t, path, 5*time.Millisecond)
	var calls atomic.Int32
	s.OnChange(func() { calls.Add(1) })

	writeFile(t, path, "{\n  \"tokens\": {,\n}")
	waitFor(t, "a reload failure", func() bool { return s.Stats().ReloadFailures == 1 })

	want := "Failed to parse auth file " + path + ": line 2, column 14: invalid character ',' looking for beginning of object key string"
	errs := logs.FilterLevelExact(zapcore.ErrorLevel).All()
	if len(errs) != 1 || errs[0].Message != want {
		t.Fatalf("error logs = %q\nwant [%q]", messages(errs), want)
	}
	for _, tok := range []string{"ta", "tb"} {
		if _, err := s.Validate(context.Background(), tok); err != nil {
			t.Errorf("%s after a broken reload: %v, want the last valid set (D-1)", tok, err)
		}
	}
	if _, err := s.Revalidate(context.Background(), "a"); err != nil {
		t.Errorf("Revalidate after a broken reload: %v", err)
	}
	if st := s.Stats(); st.Reloads != 0 || st.Tokens != 2 || calls.Load() != 0 {
		t.Errorf("Stats = %+v, OnChange calls = %d; want no reload, 2 tokens, no calls", st, calls.Load())
	}

	// The same broken file is not reported again; a fixed file loads.
	writeFile(t, path, `{"tokens":{"ta":{"actorTokenId":"a"}}}`)
	waitFor(t, "the fixed file", func() bool { return s.Stats().Reloads == 1 })
	if st := s.Stats(); st.ReloadFailures != 1 || st.Tokens != 1 || calls.Load() != 1 {
		t.Errorf("Stats = %+v, OnChange calls = %d; want 1 failure, 1 token, 1 call", st, calls.Load())
	}
}

func TestUnreadableReloadKeepsLastValidSet(t *testing.T) {
	path := tempFile(t, twoTokens)
	s, logs := open(t, path, 5*time.Millisecond)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a reload failure", func() bool { return s.Stats().ReloadFailures == 1 })
	want := "Cannot read auth file " + path + ": no such file or directory"
	if logs.FilterMessage(want).FilterLevelExact(zapcore.ErrorLevel).Len() != 1 {
		t.Fatalf("logs = %q, want %q", messages(logs.All()), want)
	}
	if _, err := s.Validate(context.Background(), "ta"); err != nil {
		t.Fatalf("Validate with the file gone: %v", err)
	}
	writeFile(t, path, `{"tokens":{}}`)
	waitFor(t, "the file to come back", func() bool { return s.Stats().Reloads == 1 })
	if st := s.Stats(); st.Tokens != 0 || st.ReloadFailures != 1 {
		t.Fatalf("Stats = %+v, want 0 tokens and 1 failure", st)
	}
}

func TestReloadNow(t *testing.T) {
	path := tempFile(t, twoTokens)
	s, _ := open(t, path, 0) // the watcher never fires
	var calls atomic.Int32
	s.OnChange(func() { calls.Add(1) })

	tests := []struct {
		name       string
		give       string
		wantErr    error
		wantTokens int
		wantCalls  int32
	}{
		{name: "valid", give: `{"tokens":{"x":{"actorTokenId":"x"}}}`, wantTokens: 1, wantCalls: 1},
		{name: "unchanged file reloads too", give: "", wantTokens: 1, wantCalls: 2},
		{name: "broken", give: `{"tokens": 5}`, wantErr: ErrParse, wantTokens: 1, wantCalls: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.give != "" {
				writeFile(t, path, tt.give)
			}
			err := s.Reload()
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Reload err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Fatalf("error %q does not name the path", err)
			}
			if got := s.Stats().Tokens; got != tt.wantTokens {
				t.Fatalf("Tokens = %d, want %d", got, tt.wantTokens)
			}
			if got := calls.Load(); got != tt.wantCalls {
				t.Fatalf("OnChange calls = %d, want %d", got, tt.wantCalls)
			}
		})
	}
}

func TestCacheFlushedOnReload(t *testing.T) {
	path := tempFile(t, twoTokens)
	s, _ := open(t, path, 0)
	c := auth.NewCache(s, time.Minute, 100, nil)
	if _, err := c.Validate(context.Background(), "tb"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, `{"tokens":{"ta":{"actorTokenId":"a"}}}`)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Validate(context.Background(), "tb"); !errors.Is(err, auth.ErrDenied) {
		t.Fatalf("removed token through the cache: err = %v, want ErrDenied (D-1)", err)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	s, err := New(Config{Path: tempFile(t, twoTokens)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if _, err := s.Validate(context.Background(), "ta"); err != nil {
		t.Fatalf("Validate after Close: %v", err)
	}
}

// TestRuleSets: the token file's rule lists, once per distinct routing, in
// file order, through the token cache too; a reload replaces them.
func TestRuleSets(t *testing.T) {
	path := tempFile(t, `{"tokens": {
  "t1": {"actorTokenId": "a", "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "demo-app", "room_slug": "general"}]},
  "t2": {"actorTokenId": "b", "allowedTopics": [{"pattern": "demo/general/#", "permission": "subscribe", "app_id": "demo-app"}]},
  "t3": {"actorTokenId": "c", "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "other-app"}]},
  "t4": {"actorTokenId": "d"}
}}`)
	s, _ := open(t, path, 0)
	var lister auth.RuleLister = auth.NewCache(s, time.Minute, 100, nil)
	sets, ok := lister.RuleSets()
	if !ok || len(sets) != 2 || sets[0][0].AppID != "demo-app" || sets[1][0].AppID != "other-app" {
		t.Fatalf("RuleSets = %v, %v; want the lists of demo-app and other-app", sets, ok)
	}
	writeFile(t, path, `{"tokens":{"ta":{"actorTokenId":"a"}}}`)
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if sets, ok := lister.RuleSets(); !ok || len(sets) != 0 {
		t.Fatalf("after the reload RuleSets = %v, %v; want none", sets, ok)
	}
	if _, ok := auth.NewCache(AllowAll{}, time.Minute, 100, nil).RuleSets(); !ok {
		t.Fatal("AllowAll lists no rules")
	}
}
