package config

import (
	"math"
	"strconv"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/store/memstore"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// Var describes one setting for -h, print-env and the README table.
type Var struct {
	// Env is the environment variable, e.g. "WS_PORT" (wire-reference.md §9).
	Env string
	// Flag is the flag name without leading dashes, e.g. "ws-port"; it is
	// given as --ws-port (or -ws-port).
	Flag string
	// Default is the default value as it would be written in the
	// environment; durations are whole seconds.
	Default string
	// Help is a one-line description with the unit.
	Help string
	// Secret marks a value that print-env masks (BACKEND_SECRET,
	// INTERNAL_SECRET).
	Secret bool
}

// Value is one setting's effective value in a Config, as it would be
// written in the environment.
type Value struct {
	Var
	Value string
}

// Shown is the value as print-env prints it: a set secret is masked.
func (v Value) Shown() string {
	if v.Secret && v.Value != "" {
		return "********"
	}
	return v.Value
}

// Values returns every setting of c in table order, with its effective
// value (defaults, environment and flags applied, as Load built c).
func (c Config) Values() []Value {
	out := make([]Value, len(settings))
	for i, s := range settings {
		out[i] = Value{Var: s.Var, Value: s.get(&c)}
	}
	return out
}

// AddrOff disables a listener whose address setting takes it (ADMIN_ADDR).
const AddrOff = "off"

// Vars returns every setting in table order. The slice is a copy.
func Vars() []Var {
	out := make([]Var, len(settings))
	for i, s := range settings {
		out[i] = s.Var
	}
	return out
}

// Limits that are not plain defaults.
const (
	// payloadCeiling is the hard ceiling of a message payload (OQ-7).
	payloadCeiling = session.PayloadCeiling
	// maxBytes bounds byte-size settings so that sums cannot overflow.
	maxBytes = 1 << 30
	// maxCount bounds count settings.
	maxCount = 1 << 30
)

// itoa and seconds write a component's default (hub.DefaultIdleTimeout,
// session.DefaultRateLimit, …) as a setting's Default: the component keeps
// the one copy of the value, the table documents it.
func itoa(n int) string { return strconv.Itoa(n) }

func seconds(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

// settings is the one table of every setting: variable, default, help, and
// how it is parsed and checked.
var settings = []setting{
	stringSetting("WS_HOST", "0.0.0.0", "listen address of the WebSocket and HTTP server",
		func(c *Config) *string { return &c.Host }, false),
	intSetting("WS_PORT", "8080", "WebSocket and HTTP port (0 = any free port)",
		func(c *Config) *int { return &c.WSPort }, 0, 65535),
	boolSetting("MQTT_ENABLED", "false", "serve MQTT 3.1.1 clients on MQTT_PORT and over WebSocket on the WebSocket port's /mqtt (true or false; docs/mqtt.md)",
		func(c *Config) *bool { return &c.MQTTEnabled }),
	intSetting("MQTT_PORT", "1883", "MQTT listener port, when MQTT_ENABLED=true (0 = any free port)",
		func(c *Config) *int { return &c.MQTTPort }, 0, 65535),
	intSetting("MQTT_MAX_INFLIGHT", "64", "outbound QoS 1 and 2 MQTT messages awaiting acknowledgement per connection; more wait in its queue",
		func(c *Config) *int { return &c.MQTTMaxInflight }, 1, 32768),
	intSetting("MQTT_MAX_QUEUED_BYTES", "4194304", "bytes of QoS 1 and 2 MQTT messages waiting for a free in-flight slot per connection before a slow consumer is closed",
		func(c *Config) *int { return &c.MQTTMaxQueuedBytes }, 1024, 1<<30),
	optionalPortSetting("WSS_PORT", "WebSocket over TLS port (wss:// on /ws and every path of WS_PORT), with TLS_CERT_FILE and TLS_KEY_FILE; unset = off (0 = any free port)",
		func(c *Config) *int { return &c.WSSPort }),
	optionalPortSetting("MQTTS_PORT", "MQTT over TLS port (8883 by convention), when MQTT_ENABLED=true, with TLS_CERT_FILE and TLS_KEY_FILE; unset = off",
		func(c *Config) *int { return &c.MQTTSPort }),
	stringSetting("TLS_CERT_FILE", "", "PEM certificate chain (leaf first) of the TLS listeners (WSS_PORT, MQTTS_PORT, ADMIN_TLS); reloaded on SIGHUP and when it changes",
		func(c *Config) *string { return &c.TLSCertFile }, false),
	stringSetting("TLS_KEY_FILE", "", "PEM private key of TLS_CERT_FILE",
		func(c *Config) *string { return &c.TLSKeyFile }, false),
	stringSetting("TLS_CLIENT_CA_FILE", "", "PEM CA certificates a client certificate must chain to: mutual TLS on MQTTS_PORT and the admin listener (ADMIN_TLS); empty = no client certificate asked",
		func(c *Config) *string { return &c.TLSClientCAFile }, false),
	boolSetting("ADMIN_TLS", "false", "serve the admin listener over TLS with TLS_CERT_FILE (and mutual TLS with TLS_CLIENT_CA_FILE) (true or false)",
		func(c *Config) *bool { return &c.AdminTLS }),
	addrSetting("ADMIN_ADDR", "127.0.0.1:9469", "admin listener (/metrics, /ready, /api, /status, /debug/pprof) as host:port, or off",
		func(c *Config) *string { return &c.AdminAddr }),
	secretSetting("ADMIN_SECRET", "bearer secret of the admin API (/api/...), the status page and /debug/pprof; required when ADMIN_ADDR is not on loopback",
		func(c *Config) *string { return &c.AdminSecret }),
	choiceSetting("AUTH_BACKEND", "static", "auth backend: static (the token file) or http (your auth service)",
		func(c *Config) *string { return &c.AuthBackend }, []string{"static", "http"}, nil),
	stringSetting("AUTH_HTTP_URL", "", "base URL of the HTTP auth service (AUTH_BACKEND=http); its path is kept",
		func(c *Config) *string { return &c.AuthHTTPURL }, false),
	boolSetting("AUTH_HTTP_INSECURE_SKIP_VERIFY", "false", "do not verify the TLS certificates of the auth and control services; development only (true or false)",
		func(c *Config) *bool { return &c.AuthHTTPInsecureSkipVerify }),
	intSetting("AUTH_HTTP_MAX_IN_FLIGHT", itoa(httpauth.DefaultMaxInFlight), "concurrent calls to the HTTP auth service; more wait for a slot",
		func(c *Config) *int { return &c.AuthHTTPMaxInFlight }, 1, 4096),
	secretSetting("BACKEND_SECRET", "bearer secret sent to the auth and control services",
		func(c *Config) *string { return &c.BackendSecret }),
	choiceSetting("CONTROL_BACKEND", "noop", "control plane: noop or http (usage, subscriptions, webhook failures, blocked projects)",
		func(c *Config) *string { return &c.ControlBackend }, []string{"noop", "http"}, nil),
	stringSetting("CONTROL_HTTP_URL", "", "base URL of the HTTP control service (CONTROL_BACKEND=http); its path is kept",
		func(c *Config) *string { return &c.ControlHTTPURL }, false),
	originsSetting(),
	intSetting("MAX_CONNECTIONS", "0", "connections of this node, every listener and plain HTTP requests included; more are refused (503, CONNACK 3); 0 = no bound",
		func(c *Config) *int { return &c.MaxConnections }, 0, maxCount),
	intSetting("MAX_CONNECTIONS_PER_ADDRESS", "0", "connections from one client address; more are refused (429, CONNACK 3); 0 = no bound (behind a proxy: with PROXY_PROTOCOL or TRUSTED_PROXIES only)",
		func(c *Config) *int { return &c.MaxConnectionsPerAddress }, 0, maxCount),
	intSetting("MAX_PENDING_CONNECTIONS", "0", "connections not authenticated yet on this node; more are refused (503, CONNACK 3); 0 = no bound",
		func(c *Config) *int { return &c.MaxPendingConnections }, 0, maxCount),
	intSetting("MAX_PENDING_PER_ADDRESS", "0", "connections not authenticated yet from one client address; more are refused (429, CONNACK 3); 0 = no bound",
		func(c *Config) *int { return &c.MaxPendingPerAddress }, 0, maxCount),
	intSetting("MAX_ACCEPT_RATE_PER_ADDRESS", "0", "new connections per second from one client address; more are refused (429, CONNACK 3); 0 = no bound",
		func(c *Config) *int { return &c.MaxAcceptRatePerAddress }, 0, maxCount),
	intSetting("MAX_ACCEPT_BURST_PER_ADDRESS", "0", "new connections from one client address at once (the bucket MAX_ACCEPT_RATE_PER_ADDRESS refills); 0 = the rate (one second's worth)",
		func(c *Config) *int { return &c.MaxAcceptBurstPerAddress }, 0, maxCount),
	proxyProtocolSetting(),
	trustedProxiesSetting(),
	secretSetting("INTERNAL_SECRET", "bearer secret of POST /internal/publish; unset or change_me keeps it disabled",
		func(c *Config) *string { return &c.InternalSecret }),
	intSetting("WEBHOOK_QUEUE_SIZE", itoa(webhook.DefaultQueueSize), "customer webhooks waiting to be sent; more are dropped and counted",
		func(c *Config) *int { return &c.WebhookQueueSize }, 1, maxCount),
	intSetting("WEBHOOK_WORKERS", itoa(webhook.DefaultWorkers), "concurrent customer webhook senders",
		func(c *Config) *int { return &c.WebhookWorkers }, 1, 1024),
	stringSetting("AUTH_FILE", "examples/auth.json", "static token file, relative to the working directory (empty = the default)",
		func(c *Config) *string { return &c.AuthFile }, true),
	boolSetting("AUTH_ALLOW_ALL", "false", "accept any token with full access; insecure, development only (true or false)",
		func(c *Config) *bool { return &c.AuthAllowAll }),
	choiceSetting("BROKER_BACKEND", "local", "broker backend: local (one node; syn is an alias) or nats (nodes joined over NATS_URL)",
		func(c *Config) *string { return &c.BrokerBackend }, []string{"local", "nats"}, map[string]string{"syn": "local"}, "mqtt"),
	stringSetting("NATS_URL", "", "NATS servers for BROKER_BACKEND=nats, comma separated",
		func(c *Config) *string { return &c.NATSURL }, false),
	stringSetting("NATS_CREDS", "", "NATS credentials file (BROKER_BACKEND=nats)",
		func(c *Config) *string { return &c.NATSCreds }, false),
	stringSetting("NATS_TLS_CA", "", "CA file for the NATS servers' TLS certificates (BROKER_BACKEND=nats)",
		func(c *Config) *string { return &c.NATSTLSCA }, false),
	intSetting("NATS_REPLICAS", "1", "JetStream replicas of the retained messages and the shared presence state (BROKER_BACKEND=nats; 3 on a three-server NATS cluster survives a server)",
		func(c *Config) *int { return &c.NATSReplicas }, 1, 5),
	stringSetting("NODE_ID", "", "this node's id among the nodes (empty = host name plus a random suffix)",
		func(c *Config) *string { return &c.NodeID }, false),
	choiceSetting("STORE_BACKEND", "memory", "message store: memory, noop, or jetstream (memory plus a durable history of every accepted publish in JetStream: NATS_URL's servers with BROKER_BACKEND=nats, else an embedded server under STORE_DIR; ets is an alias of memory)",
		func(c *Config) *string { return &c.StoreBackend }, []string{"memory", "noop", "jetstream"}, map[string]string{"ets": "memory"}),
	stringSetting("STORE_DIR", "data/jetstream", "directory where the embedded JetStream keeps its files (STORE_BACKEND=jetstream without BROKER_BACKEND=nats), relative to the working directory (empty = the default)",
		func(c *Config) *string { return &c.StoreDir }, true),
	intSetting("HISTORY_MAX_BYTES", itoa(history.DefaultMaxBytes), "bytes of message history kept, all topics together (STORE_BACKEND=jetstream); past it the oldest entries are removed",
		func(c *Config) *int { return &c.HistoryMaxBytes }, 1<<20, math.MaxInt),
	intSetting("HISTORY_MAX_PER_TOPIC", itoa(history.DefaultMaxMsgsPerTopic), "history entries kept per topic (STORE_BACKEND=jetstream); past it the topic's oldest entry is removed",
		func(c *Config) *int { return &c.HistoryMaxPerTopic }, 1, maxCount),
	boolSetting("RECORD_MESSAGES", "true", "stamp every message with msgId and requiresAck, and keep it in the message store (true or false)",
		func(c *Config) *bool { return &c.RecordMessages }),
	cappedIntSetting("MAX_MESSAGE_SIZE", itoa(session.PayloadCeiling), "default per-token message size limit in bytes (capped at 921600)",
		func(c *Config) *int { return &c.MaxMessageSize }, 1, payloadCeiling),
	intSetting("MAX_FRAME_SIZE", "1048576", "largest WebSocket frame in bytes (at least MAX_MESSAGE_SIZE)",
		func(c *Config) *int { return &c.MaxFrameSize }, 1, maxBytes),
	secondsSetting("IDLE_TIMEOUT_SECONDS", seconds(hub.DefaultIdleTimeout), "close a connection that sent no complete frame for this many seconds",
		func(c *Config) *time.Duration { return &c.IdleTimeout }, 1),
	secondsSetting("FRAME_TIMEOUT_SECONDS", seconds(hub.DefaultFrameTimeout), "close a connection whose frame has been arriving for this many seconds",
		func(c *Config) *time.Duration { return &c.FrameTimeout }, 1),
	secondsSetting("AUTH_TIMEOUT_SECONDS", seconds(hub.DefaultAuthTimeout), "close a connection not authenticated within this many seconds",
		func(c *Config) *time.Duration { return &c.AuthTimeout }, 1),
	secondsSetting("HANDSHAKE_TIMEOUT_SECONDS", seconds(hub.DefaultHandshakeTimeout), "limit for the WebSocket upgrade in seconds",
		func(c *Config) *time.Duration { return &c.HandshakeTimeout }, 1),
	secondsSetting("REVALIDATE_INTERVAL_SECONDS", seconds(hub.DefaultRevalidateInterval), "revalidate each connection's token every this many seconds",
		func(c *Config) *time.Duration { return &c.RevalidateInterval }, 1),
	secondsSetting("TOKEN_CACHE_SECONDS", "30", "cache successful token validations for this many seconds (0 = no cache)",
		func(c *Config) *time.Duration { return &c.TokenCacheTTL }, 0),
	intSetting("RATE_LIMIT", itoa(session.DefaultRateLimit), "publishes per second per connection when the token sets none",
		func(c *Config) *int { return &c.RateLimit }, 1, maxCount),
	intSetting("ERROR_FRAME_LIMIT", itoa(session.DefaultErrorFrameLimit), "error frames per second per connection that answer no request; more are dropped",
		func(c *Config) *int { return &c.ErrorFrameLimit }, 1, maxCount),
	intSetting("ERROR_FLOOD_LIMIT", itoa(session.DefaultErrorFloodLimit), "close a connection provoking more error frames than this in one second",
		func(c *Config) *int { return &c.ErrorFloodLimit }, 1, maxCount),
	intSetting("MAX_AUTH_FAILURES", itoa(session.DefaultMaxAuthFailures), "close a connection after this many failed auth attempts",
		func(c *Config) *int { return &c.MaxAuthFailures }, 1, maxCount),
	intSetting("WORKERS", "0", "event-loop workers (0 = GOMAXPROCS)",
		func(c *Config) *int { return &c.Workers }, 0, 1<<16),
	intSetting("OUTBOUND_MAX_BYTES", itoa(hub.DefaultOutboundMaxBytes), "queued outbound bytes per connection before a slow consumer is closed",
		func(c *Config) *int { return &c.OutboundMaxBytes }, 1, maxBytes),
	secondsSetting("WRITE_TIMEOUT_SECONDS", seconds(hub.DefaultWriteTimeout), "close as a slow consumer a connection whose socket has taken none of its queued bytes for this many seconds",
		func(c *Config) *time.Duration { return &c.WriteTimeout }, 1),
	intSetting("MAX_SUBSCRIPTIONS", itoa(hub.DefaultMaxSubscriptions), "subscriptions per connection",
		func(c *Config) *int { return &c.MaxSubscriptions }, 1, maxCount),
	secondsSetting("SHUTDOWN_TIMEOUT_SECONDS", "10", "graceful shutdown limit in seconds (0 = close at once)",
		func(c *Config) *time.Duration { return &c.ShutdownTimeout }, 0),
	secondsSetting("DRAIN_SECONDS", "30", "on SIGUSR2, close the connections spread over this many seconds, then shut down (0 = all at once)",
		func(c *Config) *time.Duration { return &c.DrainTimeout }, 0),
	secondsSetting("STORE_TTL_SECONDS", seconds(memstore.DefaultTTL), "keep stored messages for replay this many seconds (also the age bound of the history with STORE_BACKEND=jetstream)",
		func(c *Config) *time.Duration { return &c.StoreTTL }, 1),
	intSetting("STORE_MAX_MESSAGES", itoa(memstore.DefaultMaxMessages), "stored messages kept before the oldest are pruned",
		func(c *Config) *int { return &c.StoreMaxMessages }, 1, maxCount),
	boolSetting("DURABLE_GROUPS", "false", "with STORE_BACKEND=jetstream, make every load-balanced group on an exact topic durable: its messages kept while no member is connected and handed out once across nodes (tokens with persistentSession make their groups durable either way) (true or false)",
		func(c *Config) *bool { return &c.DurableGroups }),
	boolSetting("IDLE_MEMORY_RETURN", "true", "after a burst of connections (1,000 or more accepted within 5 s), once none was accepted for half a second, give the heap they left free back to the operating system (two collections, when at least a tenth of the live heap and 1 MiB can be given back); false leaves it to the Go runtime, which keeps up to twice the live heap (true or false)",
		func(c *Config) *bool { return &c.IdleMemoryReturn }),
	boolSetting("RESUME_SESSIONS", "false", "keep a dropped connection's subscriptions and missed messages for a reconnect with reconnect:true (true or false)",
		func(c *Config) *bool { return &c.ResumeSessions }),
	secondsSetting("RESUME_EXPIRY_SECONDS", seconds(resume.DefaultExpiry), "keep a dropped resumable session this many seconds (a token may set its own)",
		func(c *Config) *time.Duration { return &c.ResumeExpiry }, 1),
	intSetting("RESUME_MAX_BYTES", itoa(resume.DefaultMaxBytes), "bytes of missed messages kept per dropped resumable session",
		func(c *Config) *int { return &c.ResumeMaxBytes }, 1, maxBytes),
	intSetting("RESUME_MAX_SESSIONS", itoa(resume.DefaultMaxSessions), "dropped resumable sessions kept before the oldest is dropped",
		func(c *Config) *int { return &c.ResumeMaxSessions }, 1, maxCount),
	secondsSetting("RETAIN_TTL_SECONDS", seconds(hub.DefaultRetainTTL), "keep retained messages this many seconds",
		func(c *Config) *time.Duration { return &c.RetainTTL }, 1),
	choiceSetting("LOG_FORMAT", "json", "log format: json or console",
		func(c *Config) *string { return &c.LogFormat }, []string{"json", "console"}, nil),
	choiceSetting("LOG_LEVEL", "info", "log level: debug, info, warn or error",
		func(c *Config) *string { return &c.LogLevel }, []string{"debug", "info", "warn", "error"}, map[string]string{"warning": "warn"}),
}
