package httpauth

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
)

// endpointCase is one server behaviour and what a call must return.
type endpointCase struct {
	name     string
	handle   func(http.ResponseWriter, *http.Request)
	closed   bool    // use a port nobody listens on instead of the server
	wantIs   []error // every one must match
	wantNot  []error // none may match
	wantWire string  // the auth reply string (Validate) or "" for success
}

const minimalAttrs = `{"actor_token_id":"alice","project_id":"p1"}`

func TestValidate(t *testing.T) {
	tests := []endpointCase{
		{name: "allow", handle: reply(200, `{"result":"allow","client_attrs":`+minimalAttrs+`}`)},
		{name: "deny", handle: reply(200, `{"result":"deny"}`),
			wantIs: []error{auth.ErrDenied}, wantNot: []error{auth.ErrUnavailable, ErrAuthenticationFailed}, wantWire: "access_denied"},
		{name: "missing result", handle: reply(200, `{"client_attrs":`+minimalAttrs+`}`),
			wantIs: []error{auth.ErrDenied}, wantWire: "access_denied"},
		{name: "null result", handle: reply(200, `{"result":null}`),
			wantIs: []error{auth.ErrDenied}, wantWire: "access_denied"},
		{name: "garbage JSON", handle: reply(200, `{"result":"allow",`),
			wantIs: []error{ErrAuthenticationFailed}, wantNot: []error{auth.ErrDenied, auth.ErrUnavailable}, wantWire: "authentication_failed"},
		{name: "empty body", handle: reply(200, ``),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "array body", handle: reply(200, `[{"result":"allow"}]`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "wrong result value", handle: reply(200, `{"result":"ignore","client_attrs":`+minimalAttrs+`}`),
			wantIs: []error{ErrAuthenticationFailed}, wantNot: []error{auth.ErrDenied}, wantWire: "authentication_failed"},
		{name: "result not a string", handle: reply(200, `{"result":true,"client_attrs":`+minimalAttrs+`}`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "allow without client_attrs", handle: reply(200, `{"result":"allow"}`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "client_attrs not an object", handle: reply(200, `{"result":"allow","client_attrs":"alice"}`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "missing actor", handle: reply(200, `{"result":"allow","client_attrs":{"project_id":"p1"}}`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "actor not a string", handle: reply(200, `{"result":"allow","client_attrs":{"actor_token_id":42}}`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "empty actor", handle: reply(200, `{"result":"allow","client_attrs":{"actor_token_id":""}}`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "status 500", handle: reply(500, `{"result":"allow"}`),
			wantIs: []error{ErrAuthenticationFailed}, wantNot: []error{auth.ErrUnavailable}, wantWire: "authentication_failed"},
		{name: "status 401", handle: reply(401, `unauthorized`),
			wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "redirect not followed", handle: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
		}, wantIs: []error{ErrAuthenticationFailed}, wantWire: "authentication_failed"},
		{name: "slow", handle: hang,
			wantIs: []error{ErrConnectionFailed, auth.ErrUnavailable, context.DeadlineExceeded}, wantWire: "connection_failed"},
		{name: "closed port", closed: true,
			wantIs: []error{ErrConnectionFailed, auth.ErrUnavailable}, wantNot: []error{ErrBreakerOpen}, wantWire: "connection_failed"},
	}
	runEndpoint(t, tests, func(b *Backend) (any, error) { return b.Validate(bg, "tok-alice") },
		func(t *testing.T, got any) {
			g := got.(*auth.Grant)
			if g.ActorTokenID != "alice" || g.ProjectID != "p1" || g.ActorType != "user" {
				t.Fatalf("grant = %+v", g)
			}
		})
}

func TestRevalidate(t *testing.T) {
	revoked := func(reason string) func(*testing.T, error) {
		return func(t *testing.T, err error) {
			var re *auth.RevokedError
			if !errors.As(err, &re) || re.Reason != reason {
				t.Fatalf("err = %v, want a RevokedError with reason %q", err, reason)
			}
		}
	}
	tests := []struct {
		endpointCase
		check    func(*testing.T, error)
		wantUser string
	}{
		{endpointCase: endpointCase{name: "valid", handle: reply(200, `{"valid":true,"actor_token_id":"alice","project_id":"p2"}`)}},
		{endpointCase: endpointCase{name: "valid without actor", handle: reply(200, `{"valid":true,"project_id":"p2"}`)}},
		{endpointCase: endpointCase{name: "valid with another actor", handle: reply(200, `{"valid":true,"actor_token_id":"mallory"}`),
			wantIs: []error{auth.ErrUnavailable, ErrAuthenticationFailed}, wantNot: []error{auth.ErrDenied}}},
		{endpointCase: endpointCase{name: "disconnect_reason", handle: reply(200, `{"valid":false,"error":"token_expired","disconnect_reason":"actor_deleted"}`),
			wantIs: []error{auth.ErrDenied}, wantNot: []error{auth.ErrUnavailable}}, check: revoked("actor_deleted")},
		{endpointCase: endpointCase{name: "error only", handle: reply(200, `{"valid":false,"error":"token_expired"}`),
			wantIs: []error{auth.ErrDenied}}, check: revoked("token_expired")},
		{endpointCase: endpointCase{name: "empty reason falls back", handle: reply(200, `{"valid":false,"disconnect_reason":"","error":"token_expired"}`),
			wantIs: []error{auth.ErrDenied}}, check: revoked("token_expired")},
		{endpointCase: endpointCase{name: "no reason", handle: reply(200, `{"valid":false}`),
			wantIs: []error{auth.ErrDenied}}, check: revoked("unknown")},
		{endpointCase: endpointCase{name: "missing valid", handle: reply(200, `{"actor_token_id":"alice"}`),
			wantIs: []error{auth.ErrUnavailable, ErrAuthenticationFailed}, wantNot: []error{auth.ErrDenied}}},
		{endpointCase: endpointCase{name: "valid not a boolean", handle: reply(200, `{"valid":"false"}`),
			wantIs: []error{auth.ErrUnavailable}, wantNot: []error{auth.ErrDenied}}},
		{endpointCase: endpointCase{name: "garbage JSON", handle: reply(200, `not json`),
			wantIs: []error{auth.ErrUnavailable, ErrAuthenticationFailed}, wantNot: []error{auth.ErrDenied}}},
		{endpointCase: endpointCase{name: "status 500", handle: reply(500, ``),
			wantIs: []error{auth.ErrUnavailable}, wantNot: []error{auth.ErrDenied}}},
		{endpointCase: endpointCase{name: "status 404", handle: reply(404, ``),
			wantIs: []error{auth.ErrUnavailable, ErrAuthenticationFailed}, wantNot: []error{auth.ErrDenied}}},
		{endpointCase: endpointCase{name: "slow", handle: hang,
			wantIs: []error{auth.ErrUnavailable, context.DeadlineExceeded}}},
		{endpointCase: endpointCase{name: "closed port", closed: true,
			wantIs: []error{auth.ErrUnavailable, ErrConnectionFailed}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, s := endpointBackend(t, tt.endpointCase)
			g, err := b.Revalidate(bg, "alice")
			checkErr(t, err, tt.endpointCase)
			if tt.check != nil {
				tt.check(t, err)
			}
			if err == nil && (g.ActorTokenID != "alice" || g.ProjectID != "p2") {
				t.Fatalf("grant = %+v", g)
			}
			if s != nil && err == nil {
				if got := s.last().Body; !reflect.DeepEqual(got, map[string]any{"actorTokenId": "alice"}) {
					t.Fatalf("request body = %v", got)
				}
			}
		})
	}
}

func TestCheckRoomAccess(t *testing.T) {
	tests := []endpointCase{
		{name: "allow", handle: reply(200, `{"allow":true,"allowed_topics":[
			{"pattern":"chat/lobby/+","permission":"subscribe","room_id":"r1","room_slug":"lobby","app_id":"app_chat","app_name":"chat"},
			{"pattern":"news/#","permission":"pubSub","app_id":"app_news"},
			{"pattern":"bare/#","permission":"subscribe"}]}`)},
		{name: "allow false", handle: reply(200, `{"allow":false}`),
			wantIs: []error{auth.ErrDenied}, wantNot: []error{auth.ErrUnavailable}},
		{name: "allow missing", handle: reply(200, `{}`), wantIs: []error{auth.ErrDenied}},
		{name: "allow without rules", handle: reply(200, `{"allow":true,"allowed_topics":[]}`), wantIs: []error{auth.ErrDenied}},
		{name: "allow not a boolean", handle: reply(200, `{"allow":"yes"}`),
			wantIs: []error{auth.ErrUnavailable, ErrAuthenticationFailed}, wantNot: []error{auth.ErrDenied}},
		{name: "garbage JSON", handle: reply(200, `{"allow":`),
			wantIs: []error{auth.ErrUnavailable, ErrAuthenticationFailed}},
		{name: "status 500", handle: reply(500, ``), wantIs: []error{auth.ErrUnavailable}},
		{name: "status 403", handle: reply(403, ``), wantIs: []error{auth.ErrUnavailable, ErrAuthenticationFailed}},
		{name: "slow", handle: hang, wantIs: []error{auth.ErrUnavailable, context.DeadlineExceeded}},
		{name: "closed port", closed: true, wantIs: []error{auth.ErrUnavailable, ErrConnectionFailed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, s := endpointBackend(t, tt)
			rules, err := b.CheckRoomAccess(bg, "alice", "chat/lobby/x")
			checkErr(t, err, tt)
			if err != nil {
				return
			}
			want := acl.Rules{
				{Pattern: "chat/lobby/+", Permission: acl.PermSubscribe, RoomID: "r1", RoomSlug: "lobby", AppID: "app_chat", AppName: "chat"},
				{Pattern: "news/#", Permission: acl.PermPubSub, AppID: "app_news"},
				{Pattern: "bare/#", Permission: acl.PermSubscribe},
			}
			if !reflect.DeepEqual(rules, want) {
				t.Fatalf("rules = %+v\nwant    %+v", rules, want)
			}
			if got := s.last().Body; !reflect.DeepEqual(got, map[string]any{"actorTokenId": "alice", "pattern": "chat/lobby/x"}) {
				t.Fatalf("request body = %v", got)
			}
		})
	}
}

// endpointBackend starts the case's server (or none, for a closed port) and
// a Backend with short timeouts and no breaker.
func endpointBackend(t *testing.T, tt endpointCase) (*Backend, *authServer) {
	t.Helper()
	cfg := Config{Timeout: 150 * time.Millisecond, RoomAccessTimeout: 150 * time.Millisecond, BreakerThreshold: -1}
	if tt.closed {
		cfg.BaseURL = closedPortURL(t)
		return newBackend(t, nil, cfg), nil
	}
	s := newAuthServer(t, plainHTTP, tt.handle)
	return newBackend(t, s, cfg), s
}

func checkErr(t *testing.T, err error, tt endpointCase) {
	t.Helper()
	if len(tt.wantIs) == 0 && err != nil {
		t.Fatalf("err = %v, want nil", err)
	}
	if len(tt.wantIs) > 0 && err == nil {
		t.Fatalf("err = nil, want %v", tt.wantIs)
	}
	for _, w := range tt.wantIs {
		if !errors.Is(err, w) {
			t.Errorf("err = %v, want it to wrap %v", err, w)
		}
	}
	for _, w := range tt.wantNot {
		if errors.Is(err, w) {
			t.Errorf("err = %v must not wrap %v", err, w)
		}
	}
}

func runEndpoint(t *testing.T, tests []endpointCase, call func(*Backend) (any, error), ok func(*testing.T, any)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := endpointBackend(t, tt)
			got, err := call(b)
			checkErr(t, err, tt)
			if w := wireError(err); w != tt.wantWire {
				t.Errorf("auth reply error = %q, want %q (err %v)", w, tt.wantWire, err)
			}
			if err == nil {
				ok(t, got)
			}
		})
	}
}

func TestCallerCancelIsNotATimeout(t *testing.T) {
	s := newAuthServer(t, plainHTTP, hang)
	b := newBackend(t, s, Config{BreakerThreshold: 1})
	ctx, cancel := context.WithCancel(bg)
	go func() {
		for s.inFlight.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := b.Validate(ctx, "tok")
	if !errors.Is(err, auth.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want ErrUnavailable and Canceled", err)
	}
	if st := b.breaker.current(); st != breakerClosed {
		t.Fatalf("breaker = %v after a caller cancel, want closed: a cancel is not the backend's failure", st)
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		name string
		give error
		want string
	}{
		{name: "status", give: &StatusError{Endpoint: "validate", StatusCode: 502}, want: "httpauth: validate: HTTP status 502"},
		{name: "retryable keeps the message", give: retryable(&StatusError{Endpoint: "revalidate", StatusCode: 404}),
			want: "httpauth: revalidate: HTTP status 404"},
		{name: "breaker", give: ErrBreakerOpen, want: "httpauth: circuit breaker open"},
		{name: "long result quoted short", give: malformed("validate", "result %q", truncate(strings.Repeat("é", 40))),
			want: `httpauth: authentication failed: validate: result "` + strings.Repeat("é", 32) + `…"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.give.Error(); got != tt.want {
				t.Fatalf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
	if s := breakerHalfOpen.String() + breakerState(0).String(); s != "half-openunknown" {
		t.Fatalf("breakerState strings: %q", s)
	}
}
