package static

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckFindsWhatServingWouldIgnore: Check reports, with line and
// column, everything the broker would refuse or silently not apply, and
// passes the demo file and a clean one.
func TestCheckFindsWhatServingWouldIgnore(t *testing.T) {
	tests := []struct {
		name       string
		give       string
		wantTokens int
		want       []string // each rendered problem, in order ("line:col: kind: msg" prefixes)
	}{
		{
			name:       "clean",
			give:       `{"tokens": {"t": {"actorTokenId": "a", "allowedTopics": [{"pattern": "x/#", "permission": "pubSub"}]}}}`,
			wantTokens: 1,
		},
		{
			name: "unknown permission",
			give: "{\"tokens\": {\n  \"t\": {\"actorTokenId\": \"a\",\n    \"allowedTopics\": [{\"pattern\": \"x/#\", \"permission\": \"readwrite\"}]}}}",
			want: []string{`3:56: error: token entry 1 (actorTokenId "a"): allowedTopics[0].permission "readwrite" is not "subscribe", "publish" or "pubSub" (exact case); the rule grants nothing`},
			// The token is accepted; its rule grants nothing.
			wantTokens: 1,
		},
		{
			name: "wrong case permission and a missing one",
			give: `{"tokens": {"t": {"actorTokenId": "a", "allowedTopics": [{"pattern": "x", "permission": "PubSub"}, {"pattern": "y"}]}}}`,
			want: []string{
				`1:89: error: token entry 1 (actorTokenId "a"): allowedTopics[0].permission "PubSub" is not`,
				`1:100: warning: token entry 1 (actorTokenId "a"): allowedTopics[1] has no permission`,
			},
			wantTokens: 1,
		},
		{
			name: "refused entries and ignored fields",
			give: "{\"tokens\": {\n\"t1\": {\"projectId\": \"p\"},\n\"t2\": [1],\n\"t3\": {\"actorTokenId\": \"c\", \"maxConnections\": 2.5, \"scopeSlug\": 7, \"typo\": 1}}}",
			want: []string{
				`2:7: error: token entry 1 has no actorTokenId string; the token is refused`,
				`3:7: error: token entry 2 is an array, want an object; the token is refused`,
				`4:47: error: token entry 3 (actorTokenId "c"): "maxConnections" is 2.5, want an integer > 0; it is ignored`,
				`4:65: error: token entry 3 (actorTokenId "c"): "scopeSlug" is a number, want a string; it is ignored`,
				`4:68: warning: token entry 3 (actorTokenId "c"): unknown key "typo" is ignored`,
			},
			wantTokens: 1,
		},
		{
			name: "patterns the broker's topic rules refuse",
			give: "{\"tokens\": {\"t\": {\"actorTokenId\": \"a\", \"allowedTopics\": [\n" +
				`{"pattern": "demo/#/general", "permission": "pubSub"},` + "\n" +
				`{"pattern": "demo/gen+/x", "permission": "subscribe"},` + "\n" +
				`{"pattern": "", "permission": "publish"},` + "\n" +
				`{"pattern": "` + strings.Repeat("x", 2000) + `", "permission": "pubSub"},` + "\n" +
				`{"pattern": "a/#", "permission": "pubSub"}, {"permission": "pubSub"}, {"room_slug": "r"}],` + "\n" +
				`"activeSubscriptions": ["a/#/b", {"pattern": "a/+", "name": "ignored#"}, {"name": "a/b+"}]}}}`,
			want: []string{
				`2:13: error: token entry 1 (actorTokenId "a"): allowedTopics[0].pattern "demo/#/general" misplaces a wildcard ('+' and '#' must be whole levels, '#' only the last); the rule grants nothing`,
				`3:13: error: token entry 1 (actorTokenId "a"): allowedTopics[1].pattern "demo/gen+/x" misplaces a wildcard`,
				`4:13: error: token entry 1 (actorTokenId "a"): allowedTopics[2].pattern is empty; the rule grants nothing`,
				`5:13: error: token entry 1 (actorTokenId "a"): allowedTopics[3].pattern "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…" is 2000 bytes, more than the 1024 a topic may have`,
				`6:45: error: token entry 1 (actorTokenId "a"): allowedTopics[5] has a permission but no pattern; the rule grants nothing`,
				`6:71: warning: token entry 1 (actorTokenId "a"): allowedTopics[6] has no permission; the rule grants nothing`,
				`7:25: error: token entry 1 (actorTokenId "a"): activeSubscriptions[0] "a/#/b" misplaces a wildcard`,
				`7:83: error: token entry 1 (actorTokenId "a"): activeSubscriptions[2].name "a/b+" misplaces a wildcard`,
			},
			wantTokens: 1,
		},
		{
			name: "syntax error",
			give: "{\n  \"tokens\": {,\n}",
			want: []string{`2:14: error: invalid character ',' looking for beginning of object key string`},
		},
		{
			name: "tokens not an object",
			give: `{"tokens": []}`,
			want: []string{`1:12: error: "tokens" is an array, want an object`},
		},
		{
			name: "no tokens",
			give: `{"_comment": "empty"}`,
			want: []string{`1:1: error: no "tokens" key: the file grants nothing`},
		},
		{
			name: "null tokens",
			give: `{"tokens": null}`,
			want: []string{`1:12: error: "tokens" is null: the file grants nothing`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, probs := Check(tempFile(t, tt.give))
			var got []string
			for _, p := range probs {
				got = append(got, p.String())
			}
			if n != tt.wantTokens || len(got) != len(tt.want) {
				t.Fatalf("Check = %d tokens, %q; want %d tokens, %d problems", n, got, tt.wantTokens, len(tt.want))
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d = %q, want it to start with %q", i, got[i], tt.want[i])
				}
			}
			for _, p := range probs {
				if strings.Contains(p.Msg, `"t1"`) || strings.Contains(p.Msg, `"t3"`) {
					t.Errorf("%q names a token", p.Msg)
				}
			}
		})
	}
}

func TestCheckDemoFileAndMissingFile(t *testing.T) {
	if n, probs := Check("../../../examples/auth.json"); n != 2 || len(probs) != 0 {
		t.Errorf("examples/auth.json: %d tokens, %v; want 2 and no problem", n, probs)
	}
	missing := filepath.Join(t.TempDir(), "none.json")
	n, probs := Check(missing)
	if n != 0 || len(probs) != 1 || probs[0].Warning || probs[0].Line != 0 ||
		probs[0].String() != "error: cannot read "+missing+": no such file or directory" {
		t.Errorf("missing file: %d, %v", n, probs)
	}
}
