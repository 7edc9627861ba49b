package static

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

func TestEntryFields(t *testing.T) {
	tests := []struct {
		name     string
		give     string // the token entry for token "tok"
		want     *auth.Grant
		wantWarn string // a substring of a warning, "" for none
	}{
		{
			name: "defaults",
			give: `{"actorTokenId":"a"}`,
			want: &auth.Grant{ActorTokenID: "a", ActorType: "user"},
		},
		{
			name: "every field",
			give: `{
				"actorTokenId": "a", "projectId": "p", "organizationId": "o", "actorType": "service",
				"appId": "app1", "appName": "App One", "scopeSlug": "s1",
				"maxConnections": 3, "maxMessageSizeBytes": 2048, "rateLimit": 7,
				"allowedTopics": [{"pattern": "x/+/z", "topic": "tx", "permission": "publish",
					"room_id": "rid", "room_slug": "rs", "roomName": "Room", "app_id": "app1", "app_name": "App One"}],
				"activeSubscriptions": [
					"plain/topic",
					{"pattern": "p1", "load_balance": true, "load_balance_group": "g1", "filters": ["f1", "f2"]},
					{"name": "p2", "loadBalance": true, "loadBalanceGroup": "g2", "topic": "ignored"}
				],
				"allowedLobbies": [{"lobby_slug": "l1", "lobby_id": "L1"}, {"lobby_slug": "l2", "lobby_id": "L2", "rooms": ["rs", "rid"]}]
			}`,
			want: &auth.Grant{
				ActorTokenID: "a", ProjectID: "p", OrganizationID: "o", ActorType: "service",
				AppID: "app1", AppName: "App One", ScopeSlug: "s1",
				MaxConnections: 3, MaxMessageSize: 2048, RateLimit: 7,
				Rules: acl.Rules{{Pattern: "x/+/z", Topic: "tx", Permission: acl.PermPublish,
					RoomID: "rid", RoomSlug: "rs", RoomName: "Room", AppID: "app1", AppName: "App One"}},
				ActiveSubscriptions: []auth.Subscription{
					{Pattern: "plain/topic"},
					{Pattern: "p1", LoadBalance: true, LoadBalanceGroup: "g1", Filters: []string{"f1", "f2"}},
					{Pattern: "p2", LoadBalance: true, LoadBalanceGroup: "g2"},
				},
				Lobbies: []auth.Lobby{{Slug: "l1", ID: "L1"}, {Slug: "l2", ID: "L2", Rooms: []string{"rs", "rid"}}},
			},
		},
		{
			name: "permissions",
			give: `{"actorTokenId":"a","allowedTopics":[{"pattern":"s","permission":"subscribe"},{"pattern":"b","permission":"pubSub"},
				{"pattern":"n","permission":"PubSub"},{"pattern":"m"}]}`,
			want: &auth.Grant{ActorTokenID: "a", ActorType: "user", Rules: acl.Rules{
				{Pattern: "s", Permission: acl.PermSubscribe}, {Pattern: "b", Permission: acl.PermPubSub},
				{Pattern: "n", Permission: acl.PermNone}, {Pattern: "m", Permission: acl.PermNone},
			}},
			wantWarn: `allowedTopics[2] permission "PubSub" is not subscribe, publish or pubSub; the rule grants nothing`,
		},
		{
			name: "empty actorType defaults to user and null scope",
			give: `{"actorTokenId":"a","actorType":"","scopeSlug":null,"projectId":null}`,
			want: &auth.Grant{ActorTokenID: "a", ActorType: "user"},
		},
		{
			name: "rateLimit fraction rounds down with a floor of 1",
			give: `{"actorTokenId":"a","rateLimit":0.5}`,
			want: &auth.Grant{ActorTokenID: "a", ActorType: "user", RateLimit: 1},
		},
		{
			name:     "rateLimit zero ignored",
			give:     `{"actorTokenId":"a","rateLimit":0}`,
			want:     &auth.Grant{ActorTokenID: "a", ActorType: "user"},
			wantWarn: `"rateLimit" is 0`,
		},
		{
			name:     "maxConnections not an integer",
			give:     `{"actorTokenId":"a","maxConnections":2.5}`,
			want:     &auth.Grant{ActorTokenID: "a", ActorType: "user"},
			wantWarn: `"maxConnections" is 2.5, want an integer > 0`,
		},
		{
			name:     "maxMessageSizeBytes negative",
			give:     `{"actorTokenId":"a","maxMessageSizeBytes":-1}`,
			want:     &auth.Grant{ActorTokenID: "a", ActorType: "user"},
			wantWarn: `"maxMessageSizeBytes" is -1`,
		},
		{
			name: "wrong types are ignored",
			give: `{"actorTokenId":"a","projectId":5,"organizationId":true,"actorType":[],"scopeSlug":{},
				"appId":1,"maxConnections":"3","rateLimit":"fast","allowedTopics":{"pattern":"x"},
				"activeSubscriptions":"p","allowedLobbies":7}`,
			want:     &auth.Grant{ActorTokenID: "a", ActorType: "user"},
			wantWarn: `"projectId" is a number, want a string; ignored`,
		},
		{
			name: "bad elements dropped",
			give: `{"actorTokenId":"a","allowedTopics":["x",{"pattern":5,"permission":1,"room_slug":"r"}],
				"activeSubscriptions":[3,{"loadBalance":true},{"pattern":"p","filters":["f",1,null,"g"],"loadBalance":"yes"}],
				"allowedLobbies":["l",{"lobby_slug":"s"},{"lobby_id":"i"},{"lobby_slug":"s","lobby_id":"i","rooms":["r",2]}]}`,
			want: &auth.Grant{ActorTokenID: "a", ActorType: "user",
				Rules:               acl.Rules{{RoomSlug: "r", Permission: acl.PermNone}},
				ActiveSubscriptions: []auth.Subscription{{Pattern: "p", Filters: []string{"f", "g"}}},
				Lobbies:             []auth.Lobby{{Slug: "s", ID: "i", Rooms: []string{"r"}}},
			},
			wantWarn: "needs both lobby_slug and lobby_id",
		},
		{
			name: "explicit empty lobby rooms stay non-nil",
			give: `{"actorTokenId":"a","allowedLobbies":[{"lobby_slug":"s","lobby_id":"i","rooms":[]}]}`,
			want: &auth.Grant{ActorTokenID: "a", ActorType: "user",
				Lobbies: []auth.Lobby{{Slug: "s", ID: "i", Rooms: []string{}}}},
		},
		{
			name: "snake_case wins over camelCase",
			give: `{"actorTokenId":"a","activeSubscriptions":[{"pattern":"p","name":"n","load_balance":false,"loadBalance":true,
				"load_balance_group":"snake","loadBalanceGroup":"camel"}]}`,
			want: &auth.Grant{ActorTokenID: "a", ActorType: "user",
				ActiveSubscriptions: []auth.Subscription{{Pattern: "p", LoadBalanceGroup: "snake"}}},
		},
		{name: "no actorTokenId", give: `{"projectId":"p"}`, wantWarn: "no actorTokenId"},
		{name: "empty actorTokenId", give: `{"actorTokenId":""}`, wantWarn: "no actorTokenId"},
		{name: "actorTokenId not a string", give: `{"actorTokenId":42}`, wantWarn: "no actorTokenId"},
		{name: "entry not an object", give: `["a"]`, wantWarn: "the entry is an array"},
		{name: "entry null", give: `null`, wantWarn: "the entry is null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, logs := openJSON(t, `{"tokens":{"tok":`+tt.give+`}}`)
			got, err := s.Validate(context.Background(), "tok")
			if tt.want == nil {
				if !errors.Is(err, auth.ErrDenied) {
					t.Fatalf("err = %v, want ErrDenied (OQ-29)", err)
				}
			} else if err != nil {
				t.Fatalf("Validate: %v", err)
			} else if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("grant\n got %+v\nwant %+v", got, tt.want)
			}
			if tt.wantWarn != "" && logs.FilterMessageSnippet(tt.wantWarn).Len() == 0 {
				t.Fatalf("no warning containing %q; logs: %v", tt.wantWarn, messages(logs.All()))
			}
			if tt.wantWarn == "" && logs.FilterLevelExact(zapcore.WarnLevel).Len() != 0 {
				t.Fatalf("unexpected warnings: %v", messages(logs.All()))
			}
			for _, e := range logs.All() {
				if strings.Contains(e.Message, `"tok"`) {
					t.Fatalf("a log line shows the token: %q", e.Message)
				}
			}
		})
	}
}

func TestAppResolution(t *testing.T) {
	tests := []struct {
		name      string
		give      string // the token entry
		wantApp   [2]string
		wantRules [][2]string // app id, app name per rule
	}{
		{
			name:      "single app from the first rule",
			give:      `{"actorTokenId":"a","allowedTopics":[{"pattern":"1","app_id":"demo-app","app_name":"demo"},{"pattern":"2"}]}`,
			wantApp:   [2]string{"demo-app", "demo"},
			wantRules: [][2]string{{"demo-app", "demo"}, {"demo-app", "demo"}},
		},
		{
			name:      "token appId and appName fill rules without their own",
			give:      `{"actorTokenId":"a","appId":"t","appName":"T","allowedTopics":[{"pattern":"1"},{"pattern":"2","app_id":"t"}]}`,
			wantApp:   [2]string{"t", "T"},
			wantRules: [][2]string{{"t", "T"}, {"t", "T"}},
		},
		{
			name: "multi-app rules keep their own app (OQ-39)",
			give: `{"actorTokenId":"a","appId":"t","appName":"T","allowedTopics":[
				{"pattern":"1","app_id":"a1","app_name":"A1"},{"pattern":"2","app_id":"a2"},{"pattern":"3","app_id":"a2","app_name":"A2"},
				{"pattern":"4"},{"pattern":"5","app_id":"t","app_name":"Own"}]}`,
			wantApp:   [2]string{"t", "T"},
			wantRules: [][2]string{{"a1", "A1"}, {"a2", "A2"}, {"a2", "A2"}, {"t", "T"}, {"t", "Own"}},
		},
		{
			name:      "first non-empty rule app id is the token app",
			give:      `{"actorTokenId":"a","allowedTopics":[{"pattern":"1"},{"pattern":"2","app_id":"x"},{"pattern":"3","app_id":"y","app_name":"Y"}]}`,
			wantApp:   [2]string{"x", ""},
			wantRules: [][2]string{{"x", ""}, {"x", ""}, {"y", "Y"}},
		},
		{
			name:    "no app anywhere",
			give:    `{"actorTokenId":"a","allowedTopics":[{"pattern":"1"}]}`,
			wantApp: [2]string{"", ""}, wantRules: [][2]string{{"", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := openJSON(t, `{"tokens":{"tok":`+tt.give+`}}`)
			g, err := s.Validate(context.Background(), "tok")
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]string{g.AppID, g.AppName}; got != tt.wantApp {
				t.Errorf("token app = %v, want %v", got, tt.wantApp)
			}
			var got [][2]string
			for _, r := range g.Rules {
				got = append(got, [2]string{r.AppID, r.AppName})
			}
			if !reflect.DeepEqual(got, tt.wantRules) {
				t.Errorf("rule apps = %v, want %v", got, tt.wantRules)
			}
		})
	}
}

// messages lists the messages of logged entries, for failure output.
func messages(entries []observer.LoggedEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.Message
	}
	return out
}

// TestStartupNamesCheckConfigErrors: a file with errors that check-config
// reports is served as written at startup (there are no earlier tokens to
// keep), and one error line says so, naming the first error's line and
// column and the count of all.
func TestStartupNamesCheckConfigErrors(t *testing.T) {
	s, logs := openJSON(t, `{"tokens":{
"t1":{"actorTokenId":"a","allowedTopics":[{"pattern":"demo/#/x","permission":"pubSub"}]},
"t2":{"actorTokenId":"b","allowedTopics":[{"pattern":"demo/general/#","permission":"publishSubscribe"}]}}}`)
	if _, err := s.Validate(t.Context(), "t1"); err != nil {
		t.Fatalf("t1 not served as written: %v", err)
	}
	lines := logs.FilterLevelExact(zapcore.ErrorLevel).All()
	if len(lines) != 1 {
		t.Fatalf("%d error lines, want 1: %v", len(lines), messages(logs.All()))
	}
	msg := lines[0].Message
	if !strings.Contains(msg, "has 2 errors, the first at "+s.path+":2:") ||
		!strings.Contains(msg, "served as written") || !strings.Contains(msg, "kraken check-config") {
		t.Fatalf("error line %q", msg)
	}
	if n, _ := lines[0].ContextMap()["error_count"].(int64); n != 2 {
		t.Fatalf("error_count = %v", lines[0].ContextMap()["error_count"])
	}
	if logs.FilterMessageSnippet("2 tokens, with the 2 errors above").Len() != 1 {
		t.Fatalf("the Loaded line does not say the file has errors: %v", messages(logs.All()))
	}
}
