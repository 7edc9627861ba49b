package config

import (
	"strings"
	"testing"
	"time"
)

// env turns pairs into a lookup function.
func env(pairs ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		m[pairs[i]] = pairs[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestDefaults(t *testing.T) {
	want := Config{
		Host: "0.0.0.0", WSPort: 8080, MQTTPort: 1883, AdminAddr: "127.0.0.1:9469",
		AuthBackend: "static", AuthHTTPMaxInFlight: 64, ControlBackend: "noop", WebhookQueueSize: 10000, WebhookWorkers: 16, AuthFile: "examples/auth.json", AuthAllowAll: false,
		BrokerBackend: "local", NATSReplicas: 1, StoreBackend: "memory", RecordMessages: true,
		StoreDir: "data/jetstream", HistoryMaxBytes: 1 << 30, HistoryMaxPerTopic: 10000,
		MaxMessageSize: 921600, MaxFrameSize: 1048576,
		IdleTimeout: 60 * time.Second, FrameTimeout: 30 * time.Second, AuthTimeout: 30 * time.Second, HandshakeTimeout: 10 * time.Second,
		RevalidateInterval: 600 * time.Second, TokenCacheTTL: 30 * time.Second,
		RateLimit: 50, ErrorFrameLimit: 10, ErrorFloodLimit: 1000, MaxAuthFailures: 5, Workers: 0,
		MQTTMaxInflight: 64, MQTTMaxQueuedBytes: 4194304, WSSPort: PortOff, MQTTSPort: PortOff,
		OutboundMaxBytes: 4194304, WriteTimeout: 30 * time.Second, MaxSubscriptions: 1000, ShutdownTimeout: 10 * time.Second,
		DrainTimeout: 30 * time.Second,
		StoreTTL:     time.Hour, StoreMaxMessages: 10000, RetainTTL: time.Hour,
		ResumeExpiry: 120 * time.Second, ResumeMaxBytes: 1 << 20, ResumeMaxSessions: 100000, IdleMemoryReturn: true,
		LogFormat: "json", LogLevel: "info",
	}
	if got := Defaults(); got != want {
		t.Fatalf("Defaults\n got %+v\nwant %+v", got, want)
	}
	if err := want.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	got, err := Load(nil, env(), nil)
	if err != nil || got != want {
		t.Fatalf("Load with nothing set = %+v, %v", got, err)
	}
}

func TestEveryVariableParses(t *testing.T) {
	tests := []struct {
		env  string
		give string
		want func(Config) bool
	}{
		{"WS_HOST", "127.0.0.1", func(c Config) bool { return c.Host == "127.0.0.1" }},
		{"WS_PORT", "9000", func(c Config) bool { return c.WSPort == 9000 }},
		{"WS_PORT", " 0 ", func(c Config) bool { return c.WSPort == 0 }},
		{"MQTT_PORT", "1884", func(c Config) bool { return c.MQTTPort == 1884 }},
		{"WSS_PORT", "8443", func(c Config) bool { return c.WSSPort == 8443 }},
		{"WSS_PORT", "off", func(c Config) bool { return c.WSSPort == PortOff }},
		{"MQTTS_PORT", "8883", func(c Config) bool { return c.MQTTSPort == 8883 }},
		{"TLS_CERT_FILE", "/etc/kraken/tls.crt", func(c Config) bool { return c.TLSCertFile == "/etc/kraken/tls.crt" }},
		{"TLS_KEY_FILE", "/etc/kraken/tls.key", func(c Config) bool { return c.TLSKeyFile == "/etc/kraken/tls.key" }},
		{"TLS_CLIENT_CA_FILE", "/etc/kraken/ca.crt", func(c Config) bool { return c.TLSClientCAFile == "/etc/kraken/ca.crt" }},
		{"ADMIN_TLS", "true", func(c Config) bool { return c.AdminTLS }},
		{"MQTT_MAX_INFLIGHT", "20", func(c Config) bool { return c.MQTTMaxInflight == 20 }},
		{"MAX_CONNECTIONS", "100", func(c Config) bool { return c.MaxConnections == 100 }},
		{"MAX_CONNECTIONS_PER_ADDRESS", "10", func(c Config) bool { return c.MaxConnectionsPerAddress == 10 }},
		{"MAX_PENDING_CONNECTIONS", "50", func(c Config) bool { return c.MaxPendingConnections == 50 }},
		{"MAX_PENDING_PER_ADDRESS", "5", func(c Config) bool { return c.MaxPendingPerAddress == 5 }},
		{"ALLOWED_ORIGINS", "https://a.example.com", func(c Config) bool { return c.AllowedOrigins == "https://a.example.com" }},
		{"MAX_ACCEPT_RATE_PER_ADDRESS", "5", func(c Config) bool { return c.MaxAcceptRatePerAddress == 5 }},
		{"MAX_ACCEPT_BURST_PER_ADDRESS", "20", func(c Config) bool { return c.MaxAcceptBurstPerAddress == 20 }},
		{"PROXY_PROTOCOL", " WS, mqtts ", func(c Config) bool {
			return c.ProxyProtocol == Listeners{WS: true, MQTTS: true} && c.ProxyProtocol.String() == "ws,mqtts"
		}},
		{"TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.7", func(c Config) bool { return c.TrustedProxies == "10.0.0.0/8, 192.0.2.7" }},
		{"MQTT_MAX_QUEUED_BYTES", "65536", func(c Config) bool { return c.MQTTMaxQueuedBytes == 65536 }},
		{"MQTT_ENABLED", "true", func(c Config) bool { return c.MQTTEnabled }},
		{"ADMIN_ADDR", "0.0.0.0:9469", func(c Config) bool { return c.AdminAddr == "0.0.0.0:9469" }},
		{"ADMIN_SECRET", "ops-key", func(c Config) bool { return c.AdminSecret == "ops-key" }},
		{"ADMIN_ADDR", "off", func(c Config) bool { return c.AdminAddr == "off" }},
		{"AUTH_BACKEND", "Static", func(c Config) bool { return c.AuthBackend == "static" }},
		{"AUTH_HTTP_URL", "https://auth.example/v1/kraken", func(c Config) bool { return c.AuthHTTPURL == "https://auth.example/v1/kraken" }},
		{"AUTH_HTTP_INSECURE_SKIP_VERIFY", "true", func(c Config) bool { return c.AuthHTTPInsecureSkipVerify }},
		{"AUTH_HTTP_MAX_IN_FLIGHT", "128", func(c Config) bool { return c.AuthHTTPMaxInFlight == 128 }},
		{"BACKEND_SECRET", "s3", func(c Config) bool { return c.BackendSecret == "s3" }},
		{"CONTROL_BACKEND", "NOOP", func(c Config) bool { return c.ControlBackend == "noop" }},
		{"CONTROL_HTTP_URL", "http://control:9000", func(c Config) bool { return c.ControlHTTPURL == "http://control:9000" }},
		{"INTERNAL_SECRET", "backend-key", func(c Config) bool { return c.InternalSecret == "backend-key" }},
		{"WEBHOOK_QUEUE_SIZE", "50", func(c Config) bool { return c.WebhookQueueSize == 50 }},
		{"WEBHOOK_WORKERS", "4", func(c Config) bool { return c.WebhookWorkers == 4 }},
		{"AUTH_FILE", "/app/examples/auth.json", func(c Config) bool { return c.AuthFile == "/app/examples/auth.json" }},
		{"AUTH_ALLOW_ALL", "true", func(c Config) bool { return c.AuthAllowAll }},
		{"BROKER_BACKEND", "syn", func(c Config) bool { return c.BrokerBackend == "local" }},
		{"BROKER_BACKEND", "local", func(c Config) bool { return c.BrokerBackend == "local" }},
		{"NATS_URL", "nats://a:4222,nats://b:4222", func(c Config) bool { return c.NATSURL == "nats://a:4222,nats://b:4222" }},
		{"NATS_CREDS", "/etc/kraken/nats.creds", func(c Config) bool { return c.NATSCreds == "/etc/kraken/nats.creds" }},
		{"NATS_TLS_CA", "/etc/kraken/ca.pem", func(c Config) bool { return c.NATSTLSCA == "/etc/kraken/ca.pem" }},
		{"NATS_REPLICAS", "3", func(c Config) bool { return c.NATSReplicas == 3 }},
		{"NODE_ID", "kraken-1", func(c Config) bool { return c.NodeID == "kraken-1" }},
		{"STORE_BACKEND", "ets", func(c Config) bool { return c.StoreBackend == "memory" }},
		{"STORE_BACKEND", "noop", func(c Config) bool { return c.StoreBackend == "noop" }},
		{"STORE_BACKEND", "JetStream", func(c Config) bool { return c.StoreBackend == "jetstream" }},
		{"STORE_DIR", "/var/lib/kraken", func(c Config) bool { return c.StoreDir == "/var/lib/kraken" }},
		{"HISTORY_MAX_BYTES", "1048576", func(c Config) bool { return c.HistoryMaxBytes == 1<<20 }},
		{"HISTORY_MAX_PER_TOPIC", "50", func(c Config) bool { return c.HistoryMaxPerTopic == 50 }},
		{"RECORD_MESSAGES", "false", func(c Config) bool { return !c.RecordMessages }},
		{"MAX_MESSAGE_SIZE", "1000", func(c Config) bool { return c.MaxMessageSize == 1000 }},
		{"MAX_MESSAGE_SIZE", "5000000", func(c Config) bool { return c.MaxMessageSize == 921600 }},
		{"MAX_FRAME_SIZE", "2097152", func(c Config) bool { return c.MaxFrameSize == 2097152 }},
		{"IDLE_TIMEOUT_SECONDS", "90", func(c Config) bool { return c.IdleTimeout == 90*time.Second }},
		{"WRITE_TIMEOUT_SECONDS", "45", func(c Config) bool { return c.WriteTimeout == 45*time.Second }},
		{"FRAME_TIMEOUT_SECONDS", "5", func(c Config) bool { return c.FrameTimeout == 5*time.Second }},
		{"AUTH_TIMEOUT_SECONDS", "5", func(c Config) bool { return c.AuthTimeout == 5*time.Second }},
		{"HANDSHAKE_TIMEOUT_SECONDS", "3", func(c Config) bool { return c.HandshakeTimeout == 3*time.Second }},
		{"REVALIDATE_INTERVAL_SECONDS", "120", func(c Config) bool { return c.RevalidateInterval == 2*time.Minute }},
		{"TOKEN_CACHE_SECONDS", "0", func(c Config) bool { return c.TokenCacheTTL == 0 }},
		{"RATE_LIMIT", "100", func(c Config) bool { return c.RateLimit == 100 }},
		{"ERROR_FRAME_LIMIT", "20", func(c Config) bool { return c.ErrorFrameLimit == 20 }},
		{"ERROR_FLOOD_LIMIT", "50", func(c Config) bool { return c.ErrorFloodLimit == 50 }},
		{"MAX_AUTH_FAILURES", "3", func(c Config) bool { return c.MaxAuthFailures == 3 }},
		{"WORKERS", "8", func(c Config) bool { return c.Workers == 8 }},
		{"OUTBOUND_MAX_BYTES", "8388608", func(c Config) bool { return c.OutboundMaxBytes == 8388608 }},
		{"MAX_SUBSCRIPTIONS", "50", func(c Config) bool { return c.MaxSubscriptions == 50 }},
		{"SHUTDOWN_TIMEOUT_SECONDS", "0", func(c Config) bool { return c.ShutdownTimeout == 0 }},
		{"DRAIN_SECONDS", "2", func(c Config) bool { return c.DrainTimeout == 2*time.Second }},
		{"DRAIN_SECONDS", "0", func(c Config) bool { return c.DrainTimeout == 0 }},
		{"STORE_TTL_SECONDS", "60", func(c Config) bool { return c.StoreTTL == time.Minute }},
		{"RESUME_SESSIONS", "true", func(c Config) bool { return c.ResumeSessions }},
		{"DURABLE_GROUPS", "true", func(c Config) bool { return c.DurableGroups }},
		{"IDLE_MEMORY_RETURN", "false", func(c Config) bool { return !c.IdleMemoryReturn }},
		{"RESUME_EXPIRY_SECONDS", "30", func(c Config) bool { return c.ResumeExpiry == 30*time.Second }},
		{"RESUME_MAX_BYTES", "4096", func(c Config) bool { return c.ResumeMaxBytes == 4096 }},
		{"RESUME_MAX_SESSIONS", "10", func(c Config) bool { return c.ResumeMaxSessions == 10 }},
		{"STORE_MAX_MESSAGES", "5", func(c Config) bool { return c.StoreMaxMessages == 5 }},
		{"RETAIN_TTL_SECONDS", "7200", func(c Config) bool { return c.RetainTTL == 2*time.Hour }},
		{"LOG_FORMAT", "console", func(c Config) bool { return c.LogFormat == "console" }},
		{"LOG_LEVEL", "DEBUG", func(c Config) bool { return c.LogLevel == "debug" }},
		{"LOG_LEVEL", "warning", func(c Config) bool { return c.LogLevel == "warn" }},
	}
	// The settings that are valid only with others: those others.
	files := []string{"TLS_CERT_FILE", "/c", "TLS_KEY_FILE", "/k"}
	with := map[string][]string{
		"WSS_PORT": files, "ADMIN_TLS": files, "MQTTS_PORT": append([]string{"MQTT_ENABLED", "true"}, files...),
		"TLS_CERT_FILE": {"WSS_PORT", "8443", "TLS_KEY_FILE", "/k"}, "TLS_KEY_FILE": {"WSS_PORT", "8443", "TLS_CERT_FILE", "/c"},
		"TLS_CLIENT_CA_FILE": append([]string{"WSS_PORT", "8443"}, files...),
		"ADMIN_ADDR":         {"ADMIN_SECRET", "ops-key"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.env] = true
		t.Run(tt.env+"="+tt.give, func(t *testing.T) {
			others := with[tt.env]
			c, err := Load(nil, env(append([]string{tt.env, tt.give}, others...)...), nil)
			if err != nil {
				t.Fatalf("env: %v", err)
			}
			if !tt.want(c) {
				t.Fatalf("env: wrong value in %+v", c)
			}
			c, err = Load([]string{"--" + flagName(tt.env) + "=" + tt.give}, env(others...), nil)
			if err != nil {
				t.Fatalf("flag: %v", err)
			}
			if !tt.want(c) {
				t.Fatalf("flag: wrong value in %+v", c)
			}
		})
	}
	for _, v := range Vars() {
		if !covered[v.Env] {
			t.Errorf("%s has no parse case", v.Env)
		}
	}
}

func TestFlagsOverrideEnv(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		args []string
		want func(Config) bool
	}{
		{name: "int", env: []string{"WS_PORT", "9000"}, args: []string{"--ws-port", "9100"},
			want: func(c Config) bool { return c.WSPort == 9100 }},
		{name: "single dash", env: []string{"WS_PORT", "9000"}, args: []string{"-ws-port=9200"},
			want: func(c Config) bool { return c.WSPort == 9200 }},
		{name: "env kept without a flag", env: []string{"WS_PORT", "9000", "RATE_LIMIT", "7"}, args: []string{"--rate-limit=8"},
			want: func(c Config) bool { return c.WSPort == 9000 && c.RateLimit == 8 }},
		{name: "bare bool flag", env: []string{"AUTH_ALLOW_ALL", "false"}, args: []string{"--auth-allow-all"},
			want: func(c Config) bool { return c.AuthAllowAll }},
		{name: "bool flag false", env: []string{"RECORD_MESSAGES", "true"}, args: []string{"--record-messages=false"},
			want: func(c Config) bool { return !c.RecordMessages }},
		{name: "bad env overridden", env: []string{"WS_PORT", "abc"}, args: []string{"--ws-port=81"},
			want: func(c Config) bool { return c.WSPort == 81 }},
		{name: "empty env is unset", env: []string{"WS_PORT", "", "AUTH_FILE", ""},
			want: func(c Config) bool { return c.WSPort == 8080 && c.AuthFile == "examples/auth.json" }},
		{name: "empty auth file flag is the default", env: []string{"AUTH_FILE", "/x.json"}, args: []string{"--auth-file="},
			want: func(c Config) bool { return c.AuthFile == "examples/auth.json" }},
		{name: "duration", env: []string{"IDLE_TIMEOUT_SECONDS", "5"}, args: []string{"--idle-timeout-seconds=7"},
			want: func(c Config) bool { return c.IdleTimeout == 7*time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Load(tt.args, env(tt.env...), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.want(c) {
				t.Fatalf("wrong value in %+v", c)
			}
		})
	}
}

func TestBoolsTakeOnlyTrueOrFalse(t *testing.T) {
	tests := []struct {
		give    string
		want    bool
		wantErr bool
	}{
		{give: "true", want: true},
		{give: "false"},
		{give: "TRUE", wantErr: true},
		{give: "True", wantErr: true},
		{give: "1", wantErr: true},
		{give: "yes", wantErr: true},
		{give: "on", wantErr: true},
		{give: " true", wantErr: true},
		{give: "0", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.give, func(t *testing.T) {
			c, err := Load(nil, env("AUTH_ALLOW_ALL", tt.give, "RECORD_MESSAGES", tt.give), nil)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "AUTH_ALLOW_ALL") || !strings.Contains(err.Error(), "RECORD_MESSAGES") {
					t.Fatalf("err = %v, want both variables reported", err)
				}
				if _, err := Load([]string{"--auth-allow-all=" + tt.give}, env(), nil); err == nil {
					t.Fatalf("--auth-allow-all=%s accepted", tt.give)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.AuthAllowAll != tt.want || c.RecordMessages != tt.want {
				t.Fatalf("AUTH_ALLOW_ALL=%v RECORD_MESSAGES=%v, want both %v", c.AuthAllowAll, c.RecordMessages, tt.want)
			}
		})
	}
}
