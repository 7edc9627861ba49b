package main

import (
	"context"
	"errors"
	stdlog "log"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/config"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/node"
)

// The admin listener (ADMIN_ADDR, default 127.0.0.1:9469): Prometheus
// metrics, readiness with its reasons, liveness, the admin API and its
// status page (pkg/admin) and the Go profiler, over net/http and apart
// from the WebSocket port, whose hand-written HTTP path serves only /ws,
// /health, /ready and /internal/publish. /metrics, /ready and /health are
// open (probes and scrapers), and so is the status page, which holds no
// figures itself; the admin API (which the status page reads) and the
// profiler take the bearer secret ADMIN_SECRET when it is set, which it
// must be off loopback (config.Load; docs/operations.md).

// adminIndex is the answer of GET / on the admin listener.
const adminIndex = `kraken admin listener
  /metrics       Prometheus metrics (text format)
  /ready         readiness: 200 {"status":"ready"}, or 503 with the failing checks and their reasons; "warnings" lists problems that leave it ready
  /health        liveness: 200 {"status":"ok"}
  /status        the status page (a browser; asks for ADMIN_SECRET when one is set)
  /api/          the admin API: connections, disconnect, revoke, topics, presence, info, drain (GET /api/openapi.json)
  /debug/pprof/  Go profiler (heap, goroutine, profile?seconds=N, trace?seconds=N)
`

// adminHandler routes the admin listener: src's metrics, n's readiness
// with its reasons, and api.
func adminHandler(src metrics.Sources, n *node.Node, api *admin.API) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(metrics.NewRegistry(src)))
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) {
		failing := n.NotReady()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if len(failing) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_, _ = w.Write([]byte(node.ReadyDetailJSON(failing, n.ReadyWarnings(), true)))
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	api.Register(mux)
	// The profiler, registered here only: net/http/pprof's init also puts
	// it on http.DefaultServeMux, which nothing in kraken serves.
	mux.Handle("/debug/pprof/", api.Guard(http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", api.Guard(http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("/debug/pprof/profile", api.Guard(http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", api.Guard(http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", api.Guard(http.HandlerFunc(pprof.Trace)))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(adminIndex))
	})
	return mux
}

// adminServer is a running admin listener.
type adminServer struct {
	hs   *http.Server
	addr net.Addr
	done chan struct{}
}

// startAdmin listens on cfg.AdminAddr and serves the admin listener in the
// background; it returns nil with ADMIN_ADDR=off. A failure to listen is
// logged and the broker goes on without it: the WebSocket service matters
// more than its metrics, and several nodes on one host would otherwise
// need distinct ports before any of them starts (set ADMIN_ADDR for each).
func startAdmin(cfg config.Config, src metrics.Sources, n *node.Node, tc *tlsCerts, drain func(exit bool) error, log *zap.Logger) *adminServer {
	if cfg.AdminAddr == config.AddrOff {
		log.Info("admin listener disabled (ADMIN_ADDR=off): no /metrics, /ready or /debug/pprof")
		return nil
	}
	ln, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		log.Error("admin listener not started: /metrics, /ready and /debug/pprof are unavailable; set ADMIN_ADDR to a free host:port, or off",
			zap.String("addr", cfg.AdminAddr), zap.Error(err))
		return nil
	}
	a := &adminServer{addr: ln.Addr(), done: make(chan struct{}),
		hs: &http.Server{
			Handler:           adminHandler(src, n, admin.New(n, adminConfig(cfg, src.Version, drain, log))),
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
			ErrorLog:          adminErrorLog(log.Named("admin")),
			// No WriteTimeout: /debug/pprof/profile?seconds=N writes after N seconds.
		}}
	if cfg.AdminTLS && tc != nil {
		a.hs.TLSConfig = tc.store.Config(true) // mutual TLS with TLS_CLIENT_CA_FILE; ServeTLS adds h2
	}
	// Owned by the adminServer: close shuts the server down and waits on done.
	go func() {
		defer close(a.done)
		serve := a.hs.Serve
		if a.hs.TLSConfig != nil {
			serve = func(ln net.Listener) error { return a.hs.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin listener stopped", zap.Error(err))
		}
	}()
	log.Info("admin listener", zap.String("addr", a.addr.String()), zap.Bool("tls", a.hs.TLSConfig != nil),
		zap.Strings("paths", []string{"/metrics", "/ready", "/health", "/status", "/api/", "/debug/pprof/"}),
		zap.Bool("secret", cfg.AdminSecret != ""))
	return a
}

// adminConfig is the admin API's configuration from cfg: its secret, and
// every setting for GET /api/info (secrets masked).
func adminConfig(cfg config.Config, version string, drain func(exit bool) error, log *zap.Logger) admin.Config {
	settings := map[string]string{}
	for _, v := range cfg.Values() {
		settings[v.Env] = withoutCredentials(v.Shown())
	}
	return admin.Config{Secret: cfg.AdminSecret, Version: version, Settings: settings, Drain: drain,
		Logger: log.Named("admin")}
}

// withoutCredentials returns v with the user information of every URL in
// it (a comma-separated list, as NATS_URL is) replaced by "redacted": a
// NATS_URL of nats://user:password@host, or nats://token@host, must not
// travel in /api/info to every node and operator.
func withoutCredentials(v string) string {
	if !strings.Contains(v, "@") {
		return v
	}
	parts := strings.Split(v, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = url.User("redacted")
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}

// close stops the admin listener within a second (a profile in progress is
// cut short).
func (a *adminServer) close() {
	if a == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := a.hs.Shutdown(ctx); err != nil {
		_ = a.hs.Close()
	}
	<-a.done
}

// brokerStats adapts a broker backend's counters to metrics.BrokerStats
// (nil for a backend without any, such as local).
func brokerStats(b any) func() metrics.BrokerStats {
	nb, ok := b.(*natsbroker.Broker)
	if !ok {
		return nil
	}
	return func() metrics.BrokerStats {
		s := nb.Stats()
		return metrics.BrokerStats{Published: s.Published, Dropped: s.Dropped, Received: s.Received,
			Duplicates: s.Duplicates, Malformed: s.Malformed, Reconnects: s.Reconnects,
			StateWrites: s.StateWrites, StateDropped: s.StateDropped, StateErrors: s.StateErrors,
			StateMalformed: s.StateMalformed, StatePurged: s.Purged, StateRejoins: s.Rejoins, NodesDown: s.NodesDown,
			RetainedRecaptured: s.Recaptured, RetainedUnkept: s.Unkept}
	}
}

// adminErrorLog is the admin listener's net/http error log: a failed TLS
// handshake (anyone who reaches the port can cause one per connection) at
// debug level, everything else at error level.
func adminErrorLog(log *zap.Logger) *stdlog.Logger {
	return stdlog.New(adminLogWriter{log}, "", 0)
}

type adminLogWriter struct{ log *zap.Logger }

func (w adminLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	if strings.Contains(msg, "TLS handshake error") {
		w.log.Debug(msg)
	} else {
		w.log.Error(msg)
	}
	return len(p), nil
}
