package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
	"unicode"

	"github.com/NoLagApp/kraken/pkg/edge"
)

// Config is the server configuration. Each field names its environment
// variable and default; the flag is the variable lowercased with '_' -> '-'.
type Config struct {
	// Host is the listen address (WS_HOST, "0.0.0.0").
	Host string
	// WSPort is the WebSocket and HTTP port (WS_PORT, 8080, wire-reference.md §9);
	// 0..65535, 0 lets the operating system choose.
	WSPort int
	// MQTTEnabled serves MQTT 3.1.1 on MQTTPort, and over WebSocket on
	// WSPort's /mqtt (MQTT_ENABLED, false; docs/mqtt.md). Off by default: the quickstart does not use it, and a
	// laptop often runs another MQTT broker on 1883.
	MQTTEnabled bool
	// MQTTPort is the MQTT listener's port (MQTT_PORT, 1883, wire-reference.md
	// §9) on Host, used when MQTTEnabled; 0 lets the operating system
	// choose.
	MQTTPort int
	// MQTTMaxInflight bounds an MQTT connection's outbound QoS 1 and 2
	// PUBLISHes awaiting acknowledgement (MQTT_MAX_INFLIGHT, 64, 1..32768);
	// more wait in its queue (docs/mqtt.md).
	MQTTMaxInflight int
	// MQTTMaxQueuedBytes bounds the bytes of an MQTT connection's QoS 1 and
	// 2 PUBLISHes waiting for an in-flight slot (MQTT_MAX_QUEUED_BYTES,
	// 4194304, at least 1024); past it the connection is closed as a slow
	// consumer.
	MQTTMaxQueuedBytes int
	// WSSPort is the port of WebSocket over TLS (WSS_PORT; PortOff, the
	// default, when unset; 0 lets the operating system choose) on Host:
	// wss:// on /ws and every path of WSPort, with TLSCertFile.
	WSSPort int
	// MQTTSPort is the port of MQTT over TLS (MQTTS_PORT, 8883 by
	// convention; PortOff when unset) on Host, when MQTTEnabled; mutual
	// TLS with TLSClientCAFile.
	MQTTSPort int
	// TLSCertFile and TLSKeyFile are the PEM certificate chain and key of
	// the TLS listeners (TLS_CERT_FILE, TLS_KEY_FILE; both required by
	// WSSPort, MQTTSPort and AdminTLS), reloaded on SIGHUP and when they
	// change (pkg/certs; docs/SECURITY.md).
	TLSCertFile, TLSKeyFile string
	// TLSClientCAFile is the PEM CA certificates a client certificate must
	// chain to on MQTTSPort and the admin listener over TLS
	// (TLS_CLIENT_CA_FILE, "": no client certificate asked).
	TLSClientCAFile string
	// AdminTLS serves the admin listener over TLS (ADMIN_TLS, false).
	AdminTLS bool
	// AdminAddr is the admin listener's host:port (ADMIN_ADDR,
	// "127.0.0.1:9469"): /metrics, /ready, /health and /debug/pprof over
	// net/http, apart from the WebSocket port. "off" disables it. 9469 is
	// in Prometheus' exporter range and clashes with no common exporter
	// (docs/operations.md).
	AdminAddr string
	// AdminSecret is the bearer secret of the admin API, the status page
	// and the profiler on the admin listener (ADMIN_SECRET, ""; /metrics,
	// /ready and /health stay open for probes and scrapers). Required when
	// ADMIN_ADDR is not a loopback address: a listener others can reach
	// must not let them disconnect clients (docs/operations.md).
	AdminSecret string
	// AuthBackend selects the auth backend (AUTH_BACKEND, "static"): the
	// token file, or "http", the user's auth service (wire-reference.md §5.1).
	AuthBackend string
	// AuthHTTPURL is the base URL of the HTTP auth service (AUTH_HTTP_URL,
	// required with AUTH_BACKEND=http); /validate, /revalidate and
	// /check-room-access are joined to its path (OQ-28).
	AuthHTTPURL string
	// AuthHTTPInsecureSkipVerify turns TLS certificate verification off for
	// the auth and control services (AUTH_HTTP_INSECURE_SKIP_VERIFY, false;
	// OQ-30). Development only.
	AuthHTTPInsecureSkipVerify bool
	// AuthHTTPMaxInFlight caps the concurrent calls to the HTTP auth service
	// (AUTH_HTTP_MAX_IN_FLIGHT, 64); more wait for a slot within their 5 s.
	AuthHTTPMaxInFlight int
	// BackendSecret is the bearer secret sent to the auth and control
	// services (BACKEND_SECRET, "", wire-reference.md §5.1).
	BackendSecret string
	// ControlBackend selects the control plane (CONTROL_BACKEND, "noop"):
	// "http" reports usage, subscriptions and webhook failures and learns
	// blocked projects (wire-reference.md §5.2).
	ControlBackend string
	// ControlHTTPURL is the base URL of the HTTP control service
	// (CONTROL_HTTP_URL, required with CONTROL_BACKEND=http).
	ControlHTTPURL string
	// AllowedOrigins is the browser origins a WebSocket upgrade may come
	// from (ALLOWED_ORIGINS, "": every origin; docs/SECURITY.md): a
	// comma-separated list of edge.ParseOrigins patterns. An upgrade with an
	// Origin header that matches none is refused with 403; one without an
	// Origin header (not a browser) is not checked.
	AllowedOrigins string
	// MaxConnections, MaxConnectionsPerAddress, MaxPendingConnections and
	// MaxPendingPerAddress are the node's edge limits (edge.Limits;
	// MAX_CONNECTIONS, MAX_CONNECTIONS_PER_ADDRESS,
	// MAX_PENDING_CONNECTIONS, MAX_PENDING_PER_ADDRESS; 0, no bound, by
	// default; docs/SECURITY.md).
	MaxConnections, MaxConnectionsPerAddress, MaxPendingConnections, MaxPendingPerAddress int
	// MaxAcceptRatePerAddress is the new connections per second one client
	// address may open (MAX_ACCEPT_RATE_PER_ADDRESS, 0: no bound), with
	// MaxAcceptBurstPerAddress at once (MAX_ACCEPT_BURST_PER_ADDRESS, 0:
	// the rate); edge.Limits.AcceptRate and AcceptBurst.
	MaxAcceptRatePerAddress, MaxAcceptBurstPerAddress int
	// ProxyProtocol is the listeners whose connections begin with a PROXY
	// protocol header, version 1 or 2 (PROXY_PROTOCOL, "": none;
	// docs/SECURITY.md): the client's address is read from it. Set only
	// for a listener that a proxy alone reaches and that always sends one.
	ProxyProtocol Listeners
	// TrustedProxies is the proxies whose Forwarded and X-Forwarded-For
	// headers are believed on the WebSocket port (TRUSTED_PROXIES, "":
	// none; docs/SECURITY.md): a comma-separated list of CIDR networks or
	// addresses, edge.ParseTrustedProxies.
	TrustedProxies string
	// InternalSecret is the bearer secret of POST /internal/publish
	// (INTERNAL_SECRET, ""; wire-reference.md §5.4). While it is "" or
	// "change_me" the endpoint answers 404 (OQ-26).
	InternalSecret string
	// WebhookQueueSize bounds the customer webhooks waiting to be sent
	// (WEBHOOK_QUEUE_SIZE, 10000); beyond it a webhook is dropped and
	// counted, never the publish or the subscribe (wire-reference.md §5.3).
	WebhookQueueSize int
	// WebhookWorkers is the fixed number of webhook senders
	// (WEBHOOK_WORKERS, 16).
	WebhookWorkers int
	// AuthFile is the static token file (AUTH_FILE, "examples/auth.json",
	// relative to the working directory; an empty value means the default,
	// wire-reference.md §4.1). The container sets /app/examples/auth.json.
	AuthFile string
	// AuthAllowAll accepts any token with full access (AUTH_ALLOW_ALL, false;
	// wire-reference.md §4.1). Insecure; "true" or "false".
	AuthAllowAll bool
	// BrokerBackend selects the broker (BROKER_BACKEND, "local"; "syn" is an
	// alias of "local"): "nats" joins the nodes that share NATSURL into one
	// broker.
	BrokerBackend string
	// NATSURL lists the NATS servers of BROKER_BACKEND=nats (NATS_URL, comma
	// separated, e.g. "nats://nats-1:4222,nats://nats-2:4222").
	NATSURL string
	// NATSCreds is a NATS credentials file (NATS_CREDS, "" for none).
	NATSCreds string
	// NATSTLSCA is a CA file to verify the NATS servers' TLS certificates
	// with (NATS_TLS_CA, "" for the system roots or no TLS).
	NATSTLSCA string
	// NATSReplicas is the JetStream replica count of the retained stream
	// and the shared-state bucket (NATS_REPLICAS, 1–5).
	NATSReplicas int
	// NodeID names this node to the other nodes (NODE_ID; "" means the host
	// name plus a random suffix, new at every start).
	NodeID string
	// StoreBackend selects the message store (STORE_BACKEND, "memory"; "ets"
	// is an alias of "memory"; "noop" records nothing; "jetstream" is
	// "memory" plus a durable history of every accepted publish in
	// JetStream, pkg/history, decisions.md OQ-72): on NATSURL's servers
	// with NATSReplicas replicas when BrokerBackend is "nats", else on an
	// embedded NATS server whose files are under StoreDir.
	StoreBackend string
	// StoreDir is where the embedded JetStream server of
	// STORE_BACKEND=jetstream keeps its files (STORE_DIR, "data/jetstream",
	// relative to the working directory; "" means the default). Unused with
	// BROKER_BACKEND=nats. serve checks at start that it can be created
	// and written.
	StoreDir string
	// HistoryMaxBytes bounds the history's stored bytes, all topics
	// together (HISTORY_MAX_BYTES, 1 GiB, at least 1 MiB); past it the
	// oldest entries are removed. HistoryMaxPerTopic bounds the entries
	// kept per routing key (HISTORY_MAX_PER_TOPIC, 10000). The age bound
	// is StoreTTL.
	HistoryMaxBytes    int
	HistoryMaxPerTopic int
	// RecordMessages switches message recording (RECORD_MESSAGES, true):
	// msgId and requiresAck on every message, and the message store
	// (wire-reference.md §6.4).
	RecordMessages bool
	// MaxMessageSize is the default per-token message size limit in bytes
	// (MAX_MESSAGE_SIZE, 921600). Larger values are capped at 921600 (OQ-7).
	MaxMessageSize int
	// MaxFrameSize is the largest WebSocket frame accepted, in bytes
	// (MAX_FRAME_SIZE, 1048576; wire-reference.md §1.2). At least MaxMessageSize.
	MaxFrameSize int
	// IdleTimeout closes a connection that sends no complete frame for this
	// long (IDLE_TIMEOUT_SECONDS, 60 s; OQ-44), with 4000 idle_timeout.
	IdleTimeout time.Duration
	// FrameTimeout closes, with 1008 frame_timeout, a connection whose frame
	// or fragmented message has been in progress for this long
	// (FRAME_TIMEOUT_SECONDS, 30 s).
	FrameTimeout time.Duration
	// AuthTimeout closes a connection that has not authenticated within this
	// long (AUTH_TIMEOUT_SECONDS, 30 s; OQ-44).
	AuthTimeout time.Duration
	// HandshakeTimeout bounds the HTTP upgrade (HANDSHAKE_TIMEOUT_SECONDS, 10 s).
	HandshakeTimeout time.Duration
	// RevalidateInterval is the period of the per-connection revalidation
	// timer (REVALIDATE_INTERVAL_SECONDS, 600 s; wire-reference.md §4.9, OQ-9).
	RevalidateInterval time.Duration
	// TokenCacheTTL is how long a successful token validation is cached
	// (TOKEN_CACHE_SECONDS, 30 s; wire-reference.md §4.8); 0 disables the cache.
	TokenCacheTTL time.Duration
	// RateLimit is the publishes per second per connection when the token
	// sets none (RATE_LIMIT, 50; OQ-6).
	RateLimit int
	// ErrorFrameLimit caps, per second per connection, the error frames that
	// answer no request (ERROR_FRAME_LIMIT, 10; OQ-67 amended); answers are
	// never dropped.
	ErrorFrameLimit int
	// ErrorFloodLimit closes, with 1008 too_many_errors, a connection that
	// provokes more error frames than this in one second
	// (ERROR_FLOOD_LIMIT, 1000; OQ-67 amended).
	ErrorFloodLimit int
	// MaxAuthFailures closes a connection after this many failed auth
	// attempts (MAX_AUTH_FAILURES, 5; OQ-65).
	MaxAuthFailures int
	// Workers is the number of event-loop workers (WORKERS, 0 = GOMAXPROCS).
	Workers int
	// OutboundMaxBytes bounds a connection's queued outbound bytes before it
	// is closed as a slow consumer (OUTBOUND_MAX_BYTES, 4194304). At least
	// MaxFrameSize.
	OutboundMaxBytes int
	// WriteTimeout closes, as a slow consumer (1008), a connection with
	// bytes queued whose socket has taken none of them for this long,
	// whether or not it still sends frames (WRITE_TIMEOUT_SECONDS, 30 s;
	// nats-server's write_deadline).
	WriteTimeout time.Duration
	// MaxSubscriptions bounds the subscriptions of one connection
	// (MAX_SUBSCRIPTIONS, 1000).
	MaxSubscriptions int
	// ShutdownTimeout bounds a graceful shutdown (SHUTDOWN_TIMEOUT_SECONDS,
	// 10 s); 0 closes at once.
	ShutdownTimeout time.Duration
	// DrainTimeout is how long a drain (SIGUSR2, node.Node.Drain) spreads
	// the closing of the connections over before the shutdown
	// (DRAIN_SECONDS, 30 s); 0 closes them all at once.
	DrainTimeout time.Duration
	// StoreTTL is the replay window of stored messages (STORE_TTL_SECONDS,
	// 3600 s; wire-reference.md §6.5).
	StoreTTL time.Duration
	// StoreMaxMessages is the message cap of the store before pruning
	// (STORE_MAX_MESSAGES, 10000; wire-reference.md §6.5).
	StoreMaxMessages int
	// ResumeSessions makes every connection resumable (RESUME_SESSIONS,
	// false); ResumeExpiry (RESUME_EXPIRY_SECONDS, 120 s) is how
	// long a dropped session is kept, ResumeMaxBytes (RESUME_MAX_BYTES,
	// 1 MiB) bounds its missed messages and ResumeMaxSessions
	// (RESUME_MAX_SESSIONS, 100000) the sessions kept.
	ResumeSessions bool
	ResumeExpiry   time.Duration
	// DurableGroups makes every load-balanced group on an exact topic
	// durable with STORE_BACKEND=jetstream (DURABLE_GROUPS, false; a
	// token's persistentSession does it for its own groups; decisions.md
	// OQ-74).
	DurableGroups bool
	// IdleMemoryReturn gives the heap a burst of connections left free back
	// to the operating system once no connection was accepted for half a
	// second and it is worth a collection (IDLE_MEMORY_RETURN, true;
	// pkg/memory).
	IdleMemoryReturn  bool
	ResumeMaxBytes    int
	ResumeMaxSessions int
	// RetainTTL is how long a retained message is kept (RETAIN_TTL_SECONDS,
	// 3600 s; wire-reference.md §6.7).
	RetainTTL time.Duration
	// LogFormat is "json" or "console" (LOG_FORMAT, "json").
	LogFormat string
	// LogLevel is "debug", "info", "warn" or "error" (LOG_LEVEL, "info").
	LogLevel string
}

// Defaults returns the Config built from the Default column of Vars alone.
func Defaults() Config {
	var c Config
	for _, s := range settings {
		if err := s.set(&c, s.Default); err != nil {
			panic("config: bad default for " + s.Env + ": " + err.Error())
		}
	}
	return c
}

// Load builds the Config: Defaults, then the environment read through lookup
// (nil means os.LookupEnv), then the flags parsed from args (args exclude the
// program name), then Validate.
//
// "-h" or "--help" writes the usage text (a table of every Var: flag,
// environment variable, default, help) to out (nil means os.Stderr) and
// returns flag.ErrHelp. Otherwise every problem, from the environment, the
// flags and Validate, is returned together with errors.Join; each names the
// variable or flag and the bad value and matches ErrInvalid. A bad
// environment value that a flag overrides is not reported. The returned
// Config is only meaningful when the error is nil.
func Load(args []string, lookup func(string) (string, bool), out io.Writer) (Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if out == nil {
		out = os.Stderr
	}
	c := Defaults()
	rec := &recorder{}
	for _, s := range settings {
		v, ok := lookup(s.Env)
		if !ok || v == "" {
			continue
		}
		if err := s.set(&c, v); err != nil {
			rec.add(s.Env, invalid(s.Env, v, err.Error()))
		}
	}

	fs := flag.NewFlagSet("kraken", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	for _, s := range settings {
		fs.Var(&flagValue{s: s, c: &c, rec: rec}, s.Flag, s.Help)
	}
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		writeUsage(out)
		return c, flag.ErrHelp
	case err != nil:
		rec.add("", &fieldError{msg: err.Error()})
	case fs.NArg() > 0:
		rec.add("", &fieldError{msg: fmt.Sprintf("unexpected argument %q", fs.Arg(0))})
	}
	errs := append(rec.errs, c.problems()...)
	return c, errors.Join(errs...)
}

// Validate checks the ranges and choices of every setting and the relations
// between them; all problems are joined with errors.Join, each naming the
// environment variable and matching ErrInvalid. It returns nil for a valid
// Config.
func (c Config) Validate() error {
	return errors.Join(c.problems()...)
}

func (c Config) problems() []error {
	var errs []error
	bad := map[string]bool{}
	for _, s := range settings {
		if s.check != nil {
			if err := s.check(&c); err != nil {
				errs = append(errs, err)
				bad[s.Env] = true
			}
		}
	}
	// Cross-field checks run only when both values passed their own checks.
	ok := func(envs ...string) bool {
		for _, e := range envs {
			if bad[e] {
				return false
			}
		}
		return true
	}
	if ok("MAX_FRAME_SIZE", "MAX_MESSAGE_SIZE") && c.MaxFrameSize < c.MaxMessageSize {
		errs = append(errs, &fieldError{msg: fmt.Sprintf(
			"MAX_FRAME_SIZE=%d: must be at least MAX_MESSAGE_SIZE (%d)", c.MaxFrameSize, c.MaxMessageSize)})
	}
	if ok("OUTBOUND_MAX_BYTES", "MAX_FRAME_SIZE") && c.OutboundMaxBytes < c.MaxFrameSize {
		errs = append(errs, &fieldError{msg: fmt.Sprintf(
			"OUTBOUND_MAX_BYTES=%d: must be at least MAX_FRAME_SIZE (%d)", c.OutboundMaxBytes, c.MaxFrameSize)})
	}
	if ok("ADMIN_ADDR", "WS_PORT", "WS_HOST") && c.adminClashes() {
		errs = append(errs, &fieldError{msg: fmt.Sprintf(
			"ADMIN_ADDR=%s: the port is WS_PORT's (%d); give the admin listener a port of its own, or off", c.AdminAddr, c.WSPort)})
	}
	if ok("ADMIN_SECRET") && UnsendableSecret(c.AdminSecret) {
		errs = append(errs, &fieldError{msg: "ADMIN_SECRET holds a space, a newline or a control character (a trailing newline from a file?): " +
			"no Authorization header can carry it; use printable characters only, e.g. openssl rand -hex 32"})
	}
	if ok("ADMIN_ADDR", "ADMIN_SECRET") && c.AdminSecret == "" && !c.AdminOnLoopback() {
		errs = append(errs, &fieldError{msg: fmt.Sprintf(
			"ADMIN_ADDR=%s is not a loopback address and ADMIN_SECRET is empty: set ADMIN_SECRET (the admin API can disconnect clients), or keep the admin listener on 127.0.0.1", c.AdminAddr)})
	}
	if ok("MQTT_ENABLED", "MQTT_PORT", "WS_PORT") && c.MQTTEnabled && c.MQTTPort != 0 && c.MQTTPort == c.WSPort {
		errs = append(errs, &fieldError{msg: fmt.Sprintf(
			"MQTT_PORT=%d: the port is WS_PORT's; give the MQTT listener a port of its own", c.MQTTPort)})
	}
	errs = append(errs, c.tlsProblems(ok)...)
	if ok("AUTH_BACKEND") && c.AuthBackend == "static" && !c.AuthAllowAll && c.AuthFile == "" {
		errs = append(errs, &fieldError{msg: "AUTH_FILE is empty: AUTH_BACKEND=static needs a token file"})
	}
	if ok("AUTH_BACKEND", "AUTH_HTTP_URL") && c.AuthBackend == "http" && !c.AuthAllowAll {
		if err := checkBaseURL("AUTH_HTTP_URL", c.AuthHTTPURL, "AUTH_BACKEND=http"); err != nil {
			errs = append(errs, err)
		}
	}
	if ok("BROKER_BACKEND", "NATS_URL") && c.BrokerBackend == "nats" && strings.TrimSpace(c.NATSURL) == "" {
		errs = append(errs, &fieldError{msg: "NATS_URL is empty: BROKER_BACKEND=nats needs the NATS servers"})
	}
	if ok("CONTROL_BACKEND", "CONTROL_HTTP_URL") && c.ControlBackend == "http" {
		if err := checkBaseURL("CONTROL_HTTP_URL", c.ControlHTTPURL, "CONTROL_BACKEND=http"); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// AdminOnLoopback reports whether the admin listener is off or only on a
// loopback address (127.0.0.0/8, ::1, localhost): then ADMIN_SECRET may
// be empty.
func (c Config) AdminOnLoopback() bool {
	if c.AdminAddr == AddrOff {
		return true
	}
	host, _, err := net.SplitHostPort(c.AdminAddr)
	return err == nil && edge.LoopbackHost(host)
}

// UnsendableSecret reports whether secret holds a space, a newline or a
// control character: no Authorization header can carry it as sent (a
// secret read from a file with its trailing newline).
func UnsendableSecret(secret string) bool {
	return strings.IndexFunc(secret, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0
}

// adminClashes reports an admin listener on the WebSocket port of an
// address the WebSocket listener also holds.
func (c Config) adminClashes() bool {
	if c.AdminAddr == AddrOff || c.WSPort == 0 {
		return false
	}
	host, _, _ := net.SplitHostPort(c.AdminAddr)
	port, _ := splitAddr(c.AdminAddr)
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return port == c.WSPort && (wildcard(host) || wildcard(c.Host) || host == c.Host)
}

// checkBaseURL reports a base URL that is missing, or not an absolute
// http or https URL with a host.
func checkBaseURL(env, v, needs string) error {
	if v == "" {
		return &fieldError{msg: fmt.Sprintf("%s is empty: %s needs the service's base URL", env, needs)}
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &fieldError{msg: fmt.Sprintf("%s=%q: want an http:// or https:// URL with a host", env, v)}
	}
	return nil
}

// TLSWanted reports whether a listener serves TLS (WSS_PORT, MQTTS_PORT
// with MQTT_ENABLED, ADMIN_TLS with the admin listener on): the
// certificate files are then required.
func (c *Config) TLSWanted() bool {
	return c.WSSPort != PortOff || c.MQTTEnabled && c.MQTTSPort != PortOff || c.AdminTLS && c.AdminAddr != AddrOff
}

// tlsProblems checks the TLS settings together: a TLS listener needs both
// certificate files, MQTTS_PORT needs MQTT, and a TLS port is not another
// listener's.
func (c *Config) tlsProblems(ok func(...string) bool) []error {
	var errs []error
	if !ok("WSS_PORT", "MQTTS_PORT", "ADMIN_TLS", "TLS_CERT_FILE", "TLS_KEY_FILE", "MQTT_ENABLED", "ADMIN_ADDR") {
		return nil
	}
	if c.TLSWanted() && (c.TLSCertFile == "" || c.TLSKeyFile == "") {
		errs = append(errs, &fieldError{msg: "TLS_CERT_FILE and TLS_KEY_FILE are both required by WSS_PORT, MQTTS_PORT and ADMIN_TLS"})
	}
	if c.MQTTSPort != PortOff && !c.MQTTEnabled {
		errs = append(errs, &fieldError{msg: fmt.Sprintf("MQTTS_PORT=%d: MQTT is off; set MQTT_ENABLED=true", c.MQTTSPort)})
	}
	ports := map[int]string{c.WSPort: "WS_PORT"}
	if c.MQTTEnabled {
		ports[c.MQTTPort] = "MQTT_PORT"
	}
	for _, p := range []struct {
		env  string
		port int
	}{{"WSS_PORT", c.WSSPort}, {"MQTTS_PORT", c.MQTTSPort}} {
		if p.port == PortOff || p.port == 0 {
			continue
		}
		if other, taken := ports[p.port]; taken {
			errs = append(errs, &fieldError{msg: fmt.Sprintf("%s=%d: the port is %s's; give it a port of its own", p.env, p.port, other)})
			continue
		}
		ports[p.port] = p.env
	}
	return errs
}
