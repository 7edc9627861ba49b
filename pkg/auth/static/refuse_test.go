package static

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"

	"github.com/NoLagApp/kraken/pkg/acl"
)

// goodFile is the token file in force before each refused reload: alice
// may publish and subscribe under demo/#.
const goodFile = `{"tokens": {"tok-alice": {"actorTokenId": "alice",
  "allowedTopics": [{"pattern": "demo/#", "permission": "pubSub"}]}}}`

// refusedFiles are the files of testdata/refused, each with one kind of
// error Check reports, and the first problem Check renders for each.
var refusedFiles = map[string]string{
	"syntax":                               `2:14: error: invalid character ','`,
	"top-level-array":                      `1:1: error: the top-level value is an array, want an object`,
	"tokens-not-object":                    `1:12: error: "tokens" is an array, want an object`,
	"no-tokens-key":                        `1:1: error: no "tokens" key: the file grants nothing`,
	"tokens-null":                          `1:12: error: "tokens" is null: the file grants nothing`,
	"entry-not-object":                     `2:16: error: token entry 1 is an array, want an object; the token is refused`,
	"entry-without-actor":                  `2:16: error: token entry 1 has no actorTokenId string; the token is refused`,
	"string-field-wrong-type":              `3:18: error: token entry 1 (actorTokenId "alice"): "projectId" is a number, want a string`,
	"integer-field-not-positive":           `3:23: error: token entry 1 (actorTokenId "alice"): "maxConnections" is 0, want an integer > 0`,
	"rate-not-a-number":                    `3:18: error: token entry 1 (actorTokenId "alice"): "rateLimit" is a string, want a number > 0`,
	"boolean-field-wrong-type":             `3:26: error: token entry 1 (actorTokenId "alice"): "persistentSession" is a string, want a boolean`,
	"array-field-wrong-type":               `3:22: error: token entry 1 (actorTokenId "alice"): "allowedTopics" is an object, want an array`,
	"rule-not-object":                      `3:23: error: token entry 1 (actorTokenId "alice"): allowedTopics[0] is a string, want an object; the rule is dropped`,
	"permission-not-string":                `3:59: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].permission is a number`,
	"permission-unknown":                   `3:59: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].permission "publishSubscribe" is not "subscribe", "publish" or "pubSub" (exact case); the rule grants nothing`,
	"pattern-not-string":                   `3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern is an array, want a string`,
	"pattern-missing":                      `3:23: error: token entry 1 (actorTokenId "alice"): allowedTopics[0] has a permission but no pattern; the rule grants nothing`,
	"pattern-empty":                        `3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern is empty; the rule grants nothing`,
	"pattern-hash-not-last":                `3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "demo/#/general" misplaces a wildcard ('+' and '#' must be whole levels, '#' only the last); the rule grants nothing`,
	"pattern-plus-inside-level":            `3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "demo/gen+/x" misplaces a wildcard ('+' and '#' must be whole levels, '#' only the last); the rule grants nothing`,
	"pattern-too-long":                     `3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "demo/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…" is 2000 bytes, more than the 1024 a topic may have; no client can subscribe to it as written`,
	"pattern-too-deep":                     `3:35: error: token entry 1 (actorTokenId "alice"): allowedTopics[0].pattern "demo/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a…" has 65 levels, more than the 64 a topic may have; no client can subscribe to it as written`,
	"subscription-wrong-type":              `3:29: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0] is a number, want a string or an object`,
	"subscription-empty":                   `3:29: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0] is an empty pattern`,
	"subscription-without-pattern":         `3:29: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0] has no pattern`,
	"subscription-bad-pattern":             `3:29: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0] "demo/#/general" misplaces a wildcard ('+' and '#' must be whole levels, '#' only the last); it is never restored`,
	"subscription-bad-name":                `3:38: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0].name "demo/gen+" misplaces a wildcard`,
	"subscription-load-balance-wrong-type": `3:66: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0].loadBalance is a string, want a boolean`,
	"subscription-filter-not-string":       `3:68: error: token entry 1 (actorTokenId "alice"): activeSubscriptions[0].filters[1] is a number, want a string`,
	"lobby-not-object":                     `3:24: error: token entry 1 (actorTokenId "alice"): allowedLobbies[0] is a string, want an object`,
	"lobby-without-id":                     `3:24: error: token entry 1 (actorTokenId "alice"): allowedLobbies[0] needs both lobby_slug and lobby_id strings`,
	"lobby-room-not-string":                `3:76: error: token entry 1 (actorTokenId "alice"): allowedLobbies[0].rooms[0] is a number, want a string`,
}

// TestReloadRefusesWhatCheckReports: for each kind of error Check reports
// (testdata/refused), a reload of a file holding it is refused: the tokens
// in force keep their grants, Ready and LastError say why with the path,
// line and column of Check's first error, the failure is counted, and the
// reload writes one error line naming the same place. Check and the reload
// share one validator, so they never disagree.
func TestReloadRefusesWhatCheckReports(t *testing.T) {
	names, err := filepath.Glob(filepath.Join("testdata", "refused", "*.json"))
	if err != nil || len(names) != len(refusedFiles) {
		t.Fatalf("testdata/refused holds %d files (%v), want the %d of refusedFiles", len(names), err, len(refusedFiles))
	}
	for _, name := range names {
		kind := strings.TrimSuffix(filepath.Base(name), ".json")
		t.Run(kind, func(t *testing.T) {
			want, ok := refusedFiles[kind]
			if !ok {
				t.Fatalf("no expectation for %s", name)
			}
			bad, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			path := tempFile(t, goodFile)
			s, logs := open(t, path, 0)
			logs.TakeAll()

			writeFile(t, path, string(bad))
			_, probs := Check(path)
			var first *Problem
			for i := range probs {
				if !probs[i].Warning {
					first = &probs[i]
					break
				}
			}
			if first == nil || !strings.HasPrefix(first.String(), want) {
				t.Fatalf("Check: %v\nwant the first error to start with %q", probs, want)
			}

			err = s.ReloadFor("sighup")
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrParse) {
				t.Fatalf("ReloadFor = %v, want ErrInvalid or ErrParse", err)
			}
			// The place, as a refusal ("path:line:column") or a parse
			// failure ("line L, column C" after the path) words it.
			at := fmt.Sprintf("%s:%d:%d: ", path, first.Line, first.Column)
			if errors.Is(err, ErrParse) {
				at = fmt.Sprintf("%s: line %d, column %d: ", path, first.Line, first.Column)
			}
			if !strings.Contains(err.Error(), at) {
				t.Errorf("error %q does not name %q", err, at)
			}
			if r := s.Ready(); r == nil || r.Error() != err.Error() || !s.Stats().Failing {
				t.Errorf("Ready = %v, Failing = %v; want the reload's error", r, s.Stats().Failing)
			}
			if st := s.Stats(); st.ReloadFailures != 1 || st.Reloads != 0 || st.Tokens != 1 {
				t.Errorf("Stats = %+v, want 1 failure, no reload, the 1 token kept", st)
			}

			g, verr := s.Validate(context.Background(), "tok-alice")
			if verr != nil || g.ActorTokenID != "alice" {
				t.Fatalf("tok-alice after the refused reload: %+v, %v", g, verr)
			}
			for _, op := range []acl.Op{acl.OpPublish, acl.OpSubscribe} {
				if d := g.Rules.Check("demo/general", op); d != acl.Allowed {
					t.Errorf("tok-alice %v demo/general: %v, want the grants of the file in force", op, d)
				}
			}

			lines := logs.TakeAll()
			if len(lines) != 1 || lines[0].Level != zapcore.ErrorLevel || !strings.Contains(lines[0].Message, at) {
				t.Fatalf("log lines = %q, want one error line naming %q", messages(lines), at)
			}
			if ctx := lines[0].ContextMap(); ctx["trigger"] != "sighup" || ctx["tokens"] != int64(1) {
				t.Errorf("log fields = %v", ctx)
			}
		})
	}
}

// TestReloadWithWarningsLoads: a file whose only problems are warnings
// (Check exits 0) is loaded by a reload, in one line that lists them.
func TestReloadWithWarningsLoads(t *testing.T) {
	path := tempFile(t, goodFile)
	s, logs := open(t, path, 0)
	logs.TakeAll()
	writeFile(t, path, `{"tokens": {"tok-bob": {"actorTokenId": "bob", "typo": 1,
  "allowedTopics": [{"pattern": "demo/#", "permission": "subscribe"}, {"room_slug": "lobby"}]}}, "extra": 1}`)
	_, probs := Check(path)
	for _, p := range probs {
		if !p.Warning {
			t.Fatalf("Check found an error: %v", p)
		}
	}
	if len(probs) != 3 {
		t.Fatalf("Check = %v, want 3 warnings", probs)
	}
	if err := s.ReloadFor("sighup"); err != nil {
		t.Fatalf("ReloadFor = %v", err)
	}
	if _, err := s.Validate(context.Background(), "tok-bob"); err != nil {
		t.Fatalf("tok-bob: %v", err)
	}
	lines := logs.TakeAll()
	if len(lines) != 1 || lines[0].Message != "Reloaded auth file "+path+": 1 tokens" {
		t.Fatalf("log lines = %q", messages(lines))
	}
	warnings, _ := lines[0].ContextMap()["warnings"].([]any)
	if len(warnings) != 3 || !strings.HasPrefix(fmt.Sprint(warnings[0]), path+":1:") {
		t.Errorf("warnings field = %v", lines[0].ContextMap()["warnings"])
	}
}
