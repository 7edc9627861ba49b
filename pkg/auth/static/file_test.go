package static

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

func TestFileLevel(t *testing.T) {
	tests := []struct {
		name       string
		give       string
		wantTokens int
		wantErr    string // substring after the path, "" for success
	}{
		{name: "comment ignored", give: `{"_comment":"hi","tokens":{"t":{"actorTokenId":"a"}}}`, wantTokens: 1},
		{name: "missing tokens", give: `{"_comment":"hi"}`, wantTokens: 0},
		{name: "null tokens", give: `{"tokens":null}`, wantTokens: 0},
		{name: "empty tokens", give: `{"tokens":{}}`, wantTokens: 0},
		{name: "skipped entry not counted", give: `{"tokens":{"t":{"actorTokenId":"a"},"u":{}}}`, wantTokens: 1},
		{name: "byte order mark", give: "\ufeff" + `{"tokens":{"t":{"actorTokenId":"a"}}}`, wantTokens: 1},
		{name: "top-level array", give: `[{"tokens":{}}]`, wantErr: "line 1, column 1: the top-level value is an array, want an object"},
		{name: "top-level string", give: `"x"`, wantErr: "line 1, column 1: the top-level value is a string"},
		{name: "top-level null", give: `null`, wantErr: "line 1, column 1: the top-level value is null"},
		{name: "tokens not an object", give: `{"tokens":["t"]}`, wantErr: `line 1, column 11: "tokens" is an array, want an object`},
		{name: "empty file", give: ``, wantErr: "line 1, column 1: unexpected end of JSON input"},
		{name: "trailing comma", give: "{\n  \"tokens\": {\n    \"t\": {\"actorTokenId\": \"a\"},\n  }\n}", wantErr: "line 4, column 3: invalid character '}'"},
		{name: "truncated", give: "{\"tokens\": {\n\"t\": {", wantErr: "line 2, column 7: unexpected end of JSON input"},
		{name: "column counts characters", give: `{"é": 1 2}`, wantErr: "line 1, column 9: invalid character '2'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tempFile(t, tt.give)
			s, err := New(Config{Path: path})
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				defer s.Close()
				if got := s.Stats().Tokens; got != tt.wantTokens {
					t.Fatalf("Tokens = %d, want %d", got, tt.wantTokens)
				}
				return
			}
			if err == nil {
				s.Close()
				t.Fatal("New succeeded, want an error")
			}
			if !errors.Is(err, ErrParse) {
				t.Errorf("err = %v, want ErrParse", err)
			}
			want := "static: cannot parse auth file " + path + ": " + tt.wantErr
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("err = %q\nwant prefix %q", err, want)
			}
		})
	}
}

func TestNewMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.json")
	_, err := New(Config{Path: path})
	if !errors.Is(err, ErrRead) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrRead and fs.ErrNotExist", err)
	}
	if want := "static: cannot read auth file " + path + ": no such file or directory"; err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	if _, err := New(Config{}); !errors.Is(err, ErrRead) {
		t.Fatalf("empty path: err = %v, want ErrRead", err)
	}
}

func TestTokensAreByteExact(t *testing.T) {
	s, _ := openJSON(t, `{"tokens":{"Tok":{"actorTokenId":"a"},"tok ":{"actorTokenId":"b"}}}`)
	tests := []struct {
		give string
		want string // actor, "" for denied
	}{
		{give: "Tok", want: "a"},
		{give: "tok ", want: "b"},
		{give: "tok"},
		{give: "TOK"},
		{give: " Tok"},
		{give: ""},
	}
	for _, tt := range tests {
		g, err := s.Validate(context.Background(), tt.give)
		if tt.want == "" {
			if !errors.Is(err, auth.ErrDenied) {
				t.Errorf("Validate(%q) err = %v, want ErrDenied", tt.give, err)
			}
			continue
		}
		if err != nil || g.ActorTokenID != tt.want {
			t.Errorf("Validate(%q) = %+v, %v; want actor %q", tt.give, g, err, tt.want)
		}
	}
}

func TestRevalidate(t *testing.T) {
	s, _ := openJSON(t, `{"tokens":{
		"t2":{"actorTokenId":"shared","projectId":"first"},
		"t1":{"actorTokenId":"shared","projectId":"second"},
		"t3":{"actorTokenId":"solo"},
		"t4":{"projectId":"skipped"}}}`)
	tests := []struct {
		give        string
		wantProject string
		wantErr     error
	}{
		{give: "shared", wantProject: "first"},
		{give: "solo"},
		{give: "ghost", wantErr: auth.ErrDenied},
		{give: "", wantErr: auth.ErrDenied},
	}
	for _, tt := range tests {
		g, err := s.Revalidate(context.Background(), tt.give)
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("Revalidate(%q) err = %v, want %v", tt.give, err, tt.wantErr)
			continue
		}
		if err == nil && (g.ActorTokenID != tt.give || g.ProjectID != tt.wantProject) {
			t.Errorf("Revalidate(%q) = %+v", tt.give, g)
		}
	}
}

func TestDemoFile(t *testing.T) {
	s, _ := open(t, filepath.Join("..", "..", "..", "examples", "auth.json"), 0)
	if got := s.Stats().Tokens; got != 2 {
		t.Fatalf("Tokens = %d, want 2", got)
	}
	for tok, actor := range map[string]string{"dev-token-alice": "alice", "dev-token-bob": "bob"} {
		g, err := s.Validate(context.Background(), tok)
		if err != nil {
			t.Fatalf("%s: %v", tok, err)
		}
		want := &auth.Grant{
			ActorTokenID: actor, ProjectID: "demo-project", OrganizationID: "demo-org", ActorType: "user",
			AppID: "demo-app", AppName: "demo", RateLimit: 50,
			Rules: acl.Rules{{Pattern: "demo/general/#", Topic: "demo-general", Permission: acl.PermPubSub,
				RoomID: "room-general", RoomSlug: "general", AppID: "demo-app", AppName: "demo"}},
		}
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("%s:\n got %+v\nwant %+v", tok, g, want)
		}
		if r, err := s.Revalidate(context.Background(), actor); err != nil || r != g {
			t.Fatalf("Revalidate(%s) = %v, %v", actor, r, err)
		}
	}
}

func TestAllowAll(t *testing.T) {
	tests := []struct {
		give      string
		wantActor string
	}{
		{give: "anything", wantActor: "anything"},
		{give: "", wantActor: "dev-actor"},
	}
	var a auth.Authenticator = AllowAll{}
	for _, tt := range tests {
		for _, call := range []func(context.Context, string) (*auth.Grant, error){a.Validate, a.Revalidate} {
			g, err := call(context.Background(), tt.give)
			if err != nil {
				t.Fatal(err)
			}
			want := &auth.Grant{
				ActorTokenID: tt.wantActor, OrganizationID: "dev-org", ProjectID: "dev-project", ActorType: "user",
				AppID: "dev-app", AppName: "dev",
				Rules: acl.Rules{{Pattern: "#", Permission: acl.PermPubSub, AppID: "dev-app", AppName: "dev"}},
			}
			if !reflect.DeepEqual(g, want) {
				t.Fatalf("%q:\n got %+v\nwant %+v", tt.give, g, want)
			}
		}
	}
}
