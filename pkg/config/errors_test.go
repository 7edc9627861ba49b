package config

import (
	"bytes"
	"errors"
	"flag"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestManyBadValuesReportedAtOnce(t *testing.T) {
	lookup := env(
		"WS_PORT", "abc",
		"MQTT_PORT", "70000",
		"AUTH_BACKEND", "ldap",
		"BROKER_BACKEND", "redis",
		"STORE_BACKEND", "ets",
		"MAX_FRAME_SIZE", "-5",
		"IDLE_TIMEOUT_SECONDS", "1.5",
		"RATE_LIMIT", "0",
		"WORKERS", "-1",
		"LOG_LEVEL", "loud",
		"STORE_TTL_SECONDS", "99999999999999999999",
		"PROXY_PROTOCOL", "ws,http",
	)
	args := []string{"--max-subscriptions=x", "--log-format=xml", "--auth-timeout-seconds=0"}
	_, err := Load(args, lookup, nil)
	if err == nil {
		t.Fatal("Load succeeded")
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("err does not match ErrInvalid: %v", err)
	}
	want := []string{
		`config: WS_PORT="abc": not an integer`,
		`config: MQTT_PORT=70000: out of range (0..65535)`,
		`config: AUTH_BACKEND="ldap": unknown value (want static, http)`,
		`config: BROKER_BACKEND="redis": unknown value (want local, nats, syn)`,
		`config: MAX_FRAME_SIZE=-5: must be at least 1`,
		`config: IDLE_TIMEOUT_SECONDS="1.5": not an integer`,
		`config: RATE_LIMIT=0: must be at least 1`,
		`config: WORKERS=-1: must not be negative`,
		`config: LOG_LEVEL="loud": unknown value (want debug, info, warn, error, warning)`,
		`config: STORE_TTL_SECONDS="99999999999999999999": out of range`,
		`config: PROXY_PROTOCOL="ws,http": unknown listener "http" (want a comma-separated list of ws, wss, mqtt, mqtts)`,
		`config: --max-subscriptions="x": not an integer`,
		`config: LOG_FORMAT="xml": unknown value (want json, console)`,
		`config: AUTH_TIMEOUT_SECONDS=0: must be at least 1`,
	}
	got := strings.Split(err.Error(), "\n")
	for _, w := range want {
		if !contains(got, w) {
			t.Errorf("missing %q", w)
		}
	}
	// Nothing else: MAX_FRAME_SIZE=-5 is not reported again by the cross-field check.
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%s", len(got), len(want), err)
	}
}

func TestFlagSyntaxErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "unknown flag", args: []string{"--nope"}, want: "config: flag provided but not defined: -nope"},
		{name: "missing value", args: []string{"--ws-port"}, want: "config: flag needs an argument: -ws-port"},
		{name: "positional", args: []string{"serve"}, want: `config: unexpected argument "serve"`},
		{name: "empty int flag", args: []string{"--ws-port="}, want: `config: --ws-port="": not an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.args, env(), nil)
			if err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string
	}{
		{name: "valid", modify: func(*Config) {}},
		{name: "TLS listener without a certificate", modify: func(c *Config) { c.WSSPort = 8443 },
			want: []string{"config: TLS_CERT_FILE and TLS_KEY_FILE are both required by WSS_PORT, MQTTS_PORT and ADMIN_TLS"}},
		{name: "MQTT over TLS without MQTT", modify: func(c *Config) { c.MQTTSPort = 8883; c.TLSCertFile, c.TLSKeyFile = "/c", "/k" },
			want: []string{"config: MQTTS_PORT=8883: MQTT is off; set MQTT_ENABLED=true"}},
		{name: "TLS port clash", modify: func(c *Config) { c.WSSPort = 8080; c.TLSCertFile, c.TLSKeyFile = "/c", "/k" },
			want: []string{"config: WSS_PORT=8080: the port is WS_PORT's; give it a port of its own"}},
		{name: "message above the ceiling", modify: func(c *Config) { c.MaxMessageSize = 921601 },
			want: []string{"config: MAX_MESSAGE_SIZE=921601: out of range (1..921600)"}},
		{name: "frame below message", modify: func(c *Config) { c.MaxFrameSize = 1000 },
			want: []string{"config: MAX_FRAME_SIZE=1000: must be at least MAX_MESSAGE_SIZE (921600)"}},
		{name: "outbound below frame", modify: func(c *Config) { c.OutboundMaxBytes = 1024 },
			want: []string{"config: OUTBOUND_MAX_BYTES=1024: must be at least MAX_FRAME_SIZE (1048576)"}},
		{name: "empty auth file", modify: func(c *Config) { c.AuthFile = "" },
			want: []string{"config: AUTH_FILE is empty: AUTH_BACKEND=static needs a token file"}},
		{name: "empty auth file with allow-all", modify: func(c *Config) { c.AuthFile = ""; c.AuthAllowAll = true }},
		{name: "http auth without a URL", modify: func(c *Config) { c.AuthBackend = "http" },
			want: []string{"config: AUTH_HTTP_URL is empty: AUTH_BACKEND=http needs the service's base URL"}},
		{name: "http auth with a relative URL", modify: func(c *Config) { c.AuthBackend, c.AuthHTTPURL = "http", "auth.local/v1" },
			want: []string{`config: AUTH_HTTP_URL="auth.local/v1": want an http:// or https:// URL with a host`}},
		{name: "http auth with a URL", modify: func(c *Config) { c.AuthBackend, c.AuthHTTPURL = "http", "https://auth.local/v1" }},
		{name: "nats without a URL", modify: func(c *Config) { c.BrokerBackend = "nats" },
			want: []string{"config: NATS_URL is empty: BROKER_BACKEND=nats needs the NATS servers"}},
		{name: "http control without a URL", modify: func(c *Config) { c.ControlBackend = "http" },
			want: []string{"config: CONTROL_HTTP_URL is empty: CONTROL_BACKEND=http needs the service's base URL"}},
		{name: "fractional negative duration", modify: func(c *Config) { c.ShutdownTimeout = -500 * time.Millisecond },
			want: []string{"config: SHUTDOWN_TIMEOUT_SECONDS=-0.5: must not be negative"}},
		{name: "negative drain", modify: func(c *Config) { c.DrainTimeout = -time.Second },
			want: []string{"config: DRAIN_SECONDS=-1: must not be negative"}},
		{name: "unknown store", modify: func(c *Config) { c.StoreBackend = "redis" },
			want: []string{`config: STORE_BACKEND="redis": unknown value (want memory, noop, jetstream, ets)`}},
		{name: "history bytes below 1 MiB", modify: func(c *Config) { c.StoreBackend, c.HistoryMaxBytes = "jetstream", 4096 },
			want: []string{"config: HISTORY_MAX_BYTES=4096: must be at least 1048576"}},
		{name: "history per topic of 0", modify: func(c *Config) { c.HistoryMaxPerTopic = 0 },
			want: []string{"config: HISTORY_MAX_PER_TOPIC=0: must be at least 1"}},
		{name: "jetstream history on the NATS servers", modify: func(c *Config) {
			c.StoreBackend, c.BrokerBackend, c.NATSURL = "jetstream", "nats", "nats://a:4222"
		}},
		{name: "an origin with a path", modify: func(c *Config) { c.AllowedOrigins = "https://a.example.com, https://b.example.com/app" },
			want: []string{`config: ALLOWED_ORIGINS=https://a.example.com, https://b.example.com/app: edge: origin "https://b.example.com/app": an origin has no user, path, query or fragment`}},
		{name: "a trusted proxy that is not a network", modify: func(c *Config) { c.TrustedProxies = "10.0.0.0/8, 10.0.0.0/33" },
			want: []string{`config: TRUSTED_PROXIES=10.0.0.0/8, 10.0.0.0/33: edge: trusted proxy "10.0.0.0/33": not a CIDR network: netip.ParsePrefix("10.0.0.0/33"): prefix length out of range`}},
		{name: "several", modify: func(c *Config) { c.WSPort = -1; c.MaxSubscriptions = 0; c.BrokerBackend = "mqtt" },
			want: []string{"config: WS_PORT=-1: must not be negative", "config: BROKER_BACKEND=mqtt is not available in this build",
				"config: MAX_SUBSCRIPTIONS=0: must be at least 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Defaults()
			tt.modify(&c)
			err := c.Validate()
			want := tt.want
			if len(want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate = nil")
			}
			got := strings.Split(err.Error(), "\n")
			if len(got) != len(want) {
				t.Errorf("got %d errors, want %d:\n%s", len(got), len(want), err)
			}
			for _, w := range want {
				if !contains(got, w) {
					t.Errorf("missing %q in\n%s", w, err)
				}
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		t.Run(arg, func(t *testing.T) {
			var out bytes.Buffer
			_, err := Load([]string{"--ws-port=1", arg}, env(), &out)
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("err = %v, want flag.ErrHelp", err)
			}
			text := out.String()
			for _, v := range Vars() {
				if !strings.Contains(text, v.Env) || !strings.Contains(text, "--"+v.Flag) {
					t.Errorf("usage lacks %s / --%s", v.Env, v.Flag)
				}
			}
			if !strings.Contains(text, "921600") || !strings.Contains(text, "examples/auth.json") {
				t.Errorf("usage lacks the defaults:\n%s", text)
			}
		})
	}
}

// optionalString lists the settings whose default is empty: unset means
// "none" (no URL, no secret, no origin check).
var optionalString = map[string]bool{
	"AUTH_HTTP_URL": true, "BACKEND_SECRET": true, "CONTROL_HTTP_URL": true, "INTERNAL_SECRET": true, "ADMIN_SECRET": true,
	"NATS_URL": true, "NATS_CREDS": true, "NATS_TLS_CA": true, "NODE_ID": true, "ALLOWED_ORIGINS": true,
	"WSS_PORT": true, "MQTTS_PORT": true, "TLS_CERT_FILE": true, "TLS_KEY_FILE": true, "TLS_CLIENT_CA_FILE": true,
	"PROXY_PROTOCOL": true, "TRUSTED_PROXIES": true,
}

func TestVars(t *testing.T) {
	vars := Vars()
	seen := map[string]bool{}
	for _, v := range vars {
		if seen[v.Env] {
			t.Errorf("%s listed twice", v.Env)
		}
		seen[v.Env] = true
		if v.Flag != strings.ReplaceAll(strings.ToLower(v.Env), "_", "-") {
			t.Errorf("%s: flag %q", v.Env, v.Flag)
		}
		if v.Help == "" {
			t.Errorf("%s: missing help", v.Env)
		}
		if v.Default == "" && !optionalString[v.Env] {
			t.Errorf("%s: missing default", v.Env)
		}
	}
	if fields := reflect.TypeOf(Config{}).NumField(); len(vars) != fields {
		t.Errorf("%d vars, want %d (one per Config field)", len(vars), fields)
	}
	vars[0].Env = "CHANGED"
	if Vars()[0].Env == "CHANGED" {
		t.Error("Vars returned the internal table")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
