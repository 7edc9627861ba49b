package config

import (
	"errors"
	"strings"
	"testing"
)

// TestValuesAreEffectiveAndMaskSecrets: Values reports what Load built
// (environment and flags applied), and Shown masks set secrets only.
func TestValuesAreEffectiveAndMaskSecrets(t *testing.T) {
	c, err := Load([]string{"--rate-limit=7", "--idle-timeout-seconds", "90"},
		env("WS_PORT", "9000", "RATE_LIMIT", "5", "BACKEND_SECRET", "s3cret", "RECORD_MESSAGES", "false"), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Value{}
	for _, v := range c.Values() {
		got[v.Env] = v
	}
	if len(got) != len(Vars()) {
		t.Fatalf("%d values for %d settings", len(got), len(Vars()))
	}
	for env, want := range map[string]string{
		"WS_PORT": "9000", "RATE_LIMIT": "7", "IDLE_TIMEOUT_SECONDS": "90", "RECORD_MESSAGES": "false",
		"BACKEND_SECRET": "********", "INTERNAL_SECRET": "", "ADMIN_ADDR": "127.0.0.1:9469", "LOG_LEVEL": "info",
	} {
		if s := got[env].Shown(); s != want {
			t.Errorf("%s shown as %q, want %q", env, s, want)
		}
	}
	if got["BACKEND_SECRET"].Value != "s3cret" || !got["BACKEND_SECRET"].Secret || !got["INTERNAL_SECRET"].Secret {
		t.Errorf("secrets: %+v %+v", got["BACKEND_SECRET"], got["INTERNAL_SECRET"])
	}
	// Every default renders back to itself.
	for _, v := range Defaults().Values() {
		if v.Value != v.Default {
			t.Errorf("%s: default %q renders as %q", v.Env, v.Default, v.Value)
		}
	}
}

func TestAdminAddrIsChecked(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		want string // in the error; "" for none
	}{
		{name: "default", env: nil},
		{name: "off", env: []string{"ADMIN_ADDR", "off"}},
		{name: "all interfaces", env: []string{"ADMIN_ADDR", ":9469", "ADMIN_SECRET", "ops-key"}},
		{name: "all interfaces without a secret", env: []string{"ADMIN_ADDR", ":9469"},
			want: "ADMIN_ADDR=:9469 is not a loopback address and ADMIN_SECRET is empty"},
		{name: "another address without a secret", env: []string{"ADMIN_ADDR", "10.0.0.7:9469"},
			want: "ADMIN_ADDR=10.0.0.7:9469 is not a loopback address and ADMIN_SECRET is empty"},
		{name: "loopback without a secret", env: []string{"ADMIN_ADDR", "[::1]:9469"}},
		{name: "a secret with a trailing newline", env: []string{"ADMIN_SECRET", "ops-key\n"},
			want: "ADMIN_SECRET holds a space, a newline or a control character"},
		{name: "a secret of one space", env: []string{"ADMIN_ADDR", ":9469", "ADMIN_SECRET", " "},
			want: "ADMIN_SECRET holds a space"},
		{name: "localhost without a secret", env: []string{"ADMIN_ADDR", "localhost:9469"}},
		{name: "no port", env: []string{"ADMIN_ADDR", "localhost"}, want: `ADMIN_ADDR="localhost": not host:port`},
		{name: "bad port", env: []string{"ADMIN_ADDR", "127.0.0.1:99999"}, want: "the port must be 0 to 65535"},
		{name: "the WebSocket port", env: []string{"ADMIN_ADDR", "127.0.0.1:8080"}, want: "ADMIN_ADDR=127.0.0.1:8080: the port is WS_PORT's (8080)"},
		{name: "same port, other address", env: []string{"WS_HOST", "10.0.0.1", "ADMIN_ADDR", "127.0.0.1:8080"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(nil, env(tt.env...), nil)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalid)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
