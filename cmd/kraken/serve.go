package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/httpauth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
	kbroker "github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/config"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/control/httpcontrol"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/memory"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/store/memstore"
	"github.com/NoLagApp/kraken/pkg/store/noop"
	"github.com/NoLagApp/kraken/pkg/webhook"
)

// tokenCacheEntries bounds the token cache (wire-reference.md §4.8).
const tokenCacheEntries = 100_000

// signals are the signals serve acts on besides its context's end
// (SIGINT, SIGTERM).
type signals struct {
	// hup (SIGHUP) reloads the token file and the TLS certificate.
	hup <-chan os.Signal
	// drain (SIGUSR2) drains the node over cfg.DrainTimeout, then shuts
	// it down (node.Node.Drain).
	drain <-chan os.Signal
}

// serve runs the broker until ctx is cancelled, or until a value received
// on sig.drain (SIGUSR2) has drained it (node.Node.Drain over
// cfg.DrainTimeout, on serve's goroutine; ctx's end cuts the drain
// short), then shuts down within cfg.ShutdownTimeout and returns exitOK.
// Every value received on sig.hup (SIGHUP) reloads the token file once
// the server has started (authBackend.reload); values received before
// that are handled then, and those after ctx is cancelled are ignored.
//
// Every backend call of the node derives from one base context, cancelled
// when serve returns. Shutdown cancels the calls made for connections and
// the revalidations at once (node.Node.Shutdown); the webhook
// dispatcher and the control plane drain what is queued within their own
// bound first (external.close), and the base context ends whatever is
// still in flight after that.
func serve(ctx context.Context, cfg config.Config, log *zap.Logger, stderr io.Writer, sig signals) int {
	base, stopBase := context.WithCancel(context.Background())
	defer stopBase() // deferred first: runs last, after every close below
	backend, err := newAuthenticator(cfg, log)
	if err != nil {
		return startFailed(log, err, exitConfig)
	}
	defer backend.close()
	msgStore := newStore(cfg)
	if c, ok := msgStore.(store.Closer); ok {
		defer func() { _ = c.Close() }()
	}
	ext, err := newExternal(base, cfg, log)
	if err != nil {
		return startFailed(log, err, exitConfig)
	}
	defer ext.close()
	nodeID := cfg.NodeID
	if nodeID == "" {
		nodeID = nodeName() + "-" + uuid.NewString()[:8]
	}
	fanout, err := newBroker(cfg, nodeID, log)
	if err != nil {
		return startFailed(log, err, exitConfig)
	}
	tc, err := newTLSCerts(cfg, log)
	if err != nil {
		return startFailed(log, err, exitConfig)
	}
	hist, err := openHistory(cfg, nodeID, log)
	switch {
	case errors.Is(err, errStoreDir):
		return startFailed(log, err, exitConfig)
	case err != nil:
		return startFailed(log, err, exitFail)
	}
	defer hist.close() // after the node's shutdown: its last publishes are kept
	if cfg.DurableGroups && hist == nil {
		log.Warn("DURABLE_GROUPS=true has no effect without STORE_BACKEND=jetstream: no group is durable",
			zap.String("store_backend", cfg.StoreBackend))
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	cache := auth.NewCache(backend.authn, cfg.TokenCacheTTL, tokenCacheEntries, nil)
	defer func() { _ = cache.Close() }() // after the node's shutdown, before the backend's close
	n, err := node.New(node.Config{
		Sessions: hist.sessionStore(),
		NodeID:   nodeID,
		Limits: edge.Limits{MaxConnections: cfg.MaxConnections, MaxPerAddress: cfg.MaxConnectionsPerAddress,
			MaxPending: cfg.MaxPendingConnections, MaxPendingPerAddress: cfg.MaxPendingPerAddress,
			AcceptRate: cfg.MaxAcceptRatePerAddress, AcceptBurst: cfg.MaxAcceptBurstPerAddress},
		Session: session.Config{
			Auth:            cache,
			MaxMessageSize:  cfg.MaxMessageSize,
			RecordMessages:  cfg.RecordMessages,
			Store:           msgStore,
			History:         hist.sessionHistory(),
			Durable:         hist.durableGroups(),
			DurableAll:      cfg.DurableGroups,
			Broker:          fanout,
			NodeID:          nodeID,
			RateLimit:       cfg.RateLimit,
			ErrorFrameLimit: cfg.ErrorFrameLimit,
			ErrorFloodLimit: cfg.ErrorFloodLimit,
			MaxAuthFailures: cfg.MaxAuthFailures,
			Control:         ext.control,
			Webhooks:        ext.webhooks,
			Logger:          log,
			Context:         base,
			Resume: session.ResumeConfig{Enabled: cfg.ResumeSessions, Expiry: cfg.ResumeExpiry,
				MaxBytes: cfg.ResumeMaxBytes, MaxSessions: cfg.ResumeMaxSessions,
				MaxMessages: cfg.StoreMaxMessages, MaxAge: cfg.StoreTTL},
		},
		Hub: hub.Config{
			Workers:            workers,
			OutboundMaxBytes:   cfg.OutboundMaxBytes,
			WriteTimeout:       cfg.WriteTimeout,
			MaxSubscriptions:   cfg.MaxSubscriptions,
			HandshakeTimeout:   cfg.HandshakeTimeout,
			AuthTimeout:        cfg.AuthTimeout,
			IdleTimeout:        cfg.IdleTimeout,
			FrameTimeout:       cfg.FrameTimeout,
			RevalidateInterval: cfg.RevalidateInterval,
			RetainTTL:          cfg.RetainTTL,
		},
	})
	if err != nil {
		return startFailed(log, err, exitFail)
	}
	// The MQTT listener first: it also serves MQTT over WebSocket, on the
	// WebSocket port's /mqtt (docs/mqtt.md).
	var mq *listener.Listener
	var carried map[string]server.Carried
	if cfg.MQTTEnabled {
		lc := listener.Config{Addr: net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.MQTTPort)),
			MaxInflight: cfg.MQTTMaxInflight, MaxQueuedBytes: cfg.MQTTMaxQueuedBytes,
			SessionExpiry: cfg.ResumeExpiry, SessionMaxBytes: cfg.ResumeMaxBytes, SessionMaxMessages: cfg.StoreMaxMessages,
			MaxSessions: cfg.ResumeMaxSessions, ProxyProtocol: cfg.ProxyProtocol.MQTT, Logger: log}
		if cfg.MQTTSPort != config.PortOff {
			lc.TLSAddr, lc.TLS = net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.MQTTSPort)), tc.store.Config(true)
			lc.ProxyProtocolTLS = cfg.ProxyProtocol.MQTTS
		}
		mq, err = listener.New(n, lc)
		if err != nil {
			return startFailed(log, err, exitFail)
		}
		carried = map[string]server.Carried{server.MQTTPath: mq.WebSocket()}
	}
	origins, _ := edge.ParseOrigins(cfg.AllowedOrigins)        // checked by config.Load
	trusted, _ := edge.ParseTrustedProxies(cfg.TrustedProxies) // likewise
	sc := server.Config{
		Addr:           net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.WSPort)),
		MaxFrameSize:   cfg.MaxFrameSize,
		InternalSecret: cfg.InternalSecret,
		Carried:        carried,
		AllowedOrigins: origins,
		ProxyProtocol:  cfg.ProxyProtocol.WS,
		TrustedProxies: trusted,
		Logger:         log,
	}
	if cfg.WSSPort != config.PortOff {
		sc.TLSAddr, sc.TLS = net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.WSSPort)), tc.store.Config(false, "http/1.1")
		sc.ProxyProtocolTLS = cfg.ProxyProtocol.WSS
	}
	srv, err := server.New(n, sc)
	if err != nil {
		return startFailed(log, err, exitFail)
	}
	backend.addReadyChecks(n)
	hist.addReadyCheck(n)
	tc.addReadyWarning(n)
	if err := start(n, srv, mq); err != nil {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
		_ = n.Shutdown(sctx)
		cancel()
		return startFailed(log, err, exitFail)
	}
	// Closed after n.Shutdown (deferred): /ready answers not ready while
	// the connections drain.
	comps := components(n, srv, mq, backend, cache, ext, cfg.BrokerBackend)
	if tc != nil {
		comps = append(comps, tc.store)
	}
	if hist != nil {
		comps = append(comps, hist)
	}
	var returner *memory.Returner // IDLE_MEMORY_RETURN: started with the reloader below
	if cfg.IdleMemoryReturn {
		returner = memory.New(memory.Config{Accepted: n.Hub().Accepted, Logger: log})
		comps = append(comps, returner)
	}
	// POST /api/drain asks serve's goroutine to drain, as SIGUSR2 does;
	// exit false keeps the process up, drained, until it is stopped.
	// stopping is set once, by whichever comes first (SIGUSR2, a drain
	// asked, the end of ctx), so a drain is accepted only while none of
	// them has happened: a 202 always means a drain that runs.
	drainAsked := make(chan bool, 1)
	var stopping atomic.Bool
	askDrain := func(exit bool) error {
		if n.Draining() || !stopping.CompareAndSwap(false, true) {
			return node.ErrDraining
		}
		drainAsked <- exit // never blocks: one send, once
		return nil
	}
	admin := startAdmin(cfg, metrics.Sources{Components: comps, BrokerStats: brokerStats(fanout), Version: version}, n, tc, askDrain, log)
	defer admin.close()
	// Started only now: a reload runs the hub's revalidation (OnChange).
	// Both stop when the node starts shutting down (running).
	running, stopRunning := context.WithCancel(ctx)
	reloader := reloadOnSignal(running, sig.hup, func() { backend.reload(); tc.reload("sighup") })
	defer func() { <-reloader }() // before backend.close
	watcher := tc.watch(running)
	defer func() { <-watcher }()
	if returner != nil {
		returned := make(chan struct{})
		go func() { defer close(returned); returner.Run(running) }()
		defer func() { <-returned }()
	}
	defer stopRunning() // before the waits above, on every return
	log.Info("kraken started", zap.String("version", version), zap.Int("pid", os.Getpid()), zap.Int("workers", workers),
		zap.String("auth_backend", cfg.AuthBackend), zap.Bool("record_messages", cfg.RecordMessages))
	select {
	case <-ctx.Done():
		stopping.Store(true)
	case <-sig.drain:
		stopping.Store(true)
		log.Info("SIGUSR2: draining", zap.Duration("drain", cfg.DrainTimeout))
		if err := n.Drain(ctx, cfg.DrainTimeout); err != nil {
			log.Info("drain cut short", zap.Error(err))
		}
	case exit := <-drainAsked:
		log.Info("admin API: draining", zap.Duration("drain", cfg.DrainTimeout), zap.Bool("exit", exit))
		if err := n.Drain(ctx, cfg.DrainTimeout); err != nil {
			log.Info("drain cut short", zap.Error(err))
		}
		if !exit {
			log.Info("drained; staying up, not ready, until stopped (SIGTERM)")
			<-ctx.Done()
		}
	}
	stopRunning()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		log.Warn("shutdown did not finish in time", zap.Error(err))
		return exitFail
	}
	log.Info("stopped", zap.Uint64("slow_consumers", n.Hub().Stats().SlowConsumers))
	return exitOK
}

// start starts the node (its hub, then its fan-out broker), then the
// WebSocket server and, when mq is not nil, the MQTT listener
// (docs/mqtt.md). The error says which failed: "server: start the fan-out
// broker: …", "listen: …" or "mqtt listen: …".
func start(n *node.Node, srv *server.Server, mq *listener.Listener) error {
	if err := n.Start(); err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	if mq != nil {
		if err := mq.Start(); err != nil {
			return fmt.Errorf("mqtt listen: %w", err)
		}
	}
	return nil
}

// components are the parts of the node that report metrics, those
// configured: the node, the WebSocket server, the MQTT listener, the auth
// backend, the token cache, the control plane and the webhook dispatcher.
func components(n *node.Node, srv *server.Server, mq *listener.Listener, b authBackend, cache *auth.Cache, ext *external,
	brokerBackend string) []metrics.Component {
	out := []metrics.Component{n.Metrics(b.name, brokerBackend), srv}
	if mq != nil {
		out = append(out, mq)
	}
	if b.tokens != nil {
		out = append(out, b.tokens)
	}
	if b.service != nil {
		out = append(out, b.service)
	}
	out = append(out, cache)
	if ext.control != nil {
		out = append(out, ext.control)
	}
	if ext.webhooks != nil {
		out = append(out, ext.webhooks)
	}
	return out
}

// external is what serve hands to the user's systems: the control plane's
// batcher (nil with CONTROL_BACKEND=noop) and the webhook dispatcher (nil
// with the token file, which cannot configure webhooks).
type external struct {
	control  *control.Batcher
	webhooks *webhook.Dispatcher
	closers  []func(context.Context)
}

// newExternal builds the control plane (wire-reference.md §5.2) and the webhook
// dispatcher (§5.3) the configuration asks for, started; their calls derive
// from base, the node's context.
func newExternal(base context.Context, cfg config.Config, log *zap.Logger) (*external, error) {
	ext := &external{}
	if cfg.ControlBackend == "http" {
		hc, err := httpcontrol.New(httpcontrol.Config{BaseURL: cfg.ControlHTTPURL, Secret: cfg.BackendSecret,
			InsecureSkipVerify: cfg.AuthHTTPInsecureSkipVerify, Logger: log.Named("control.http")})
		if err != nil {
			return nil, err
		}
		ext.control = control.New(control.Config{Controller: hc, Node: nodeName(), Logger: log.Named("control"),
			Context: base})
		ext.control.Start()
		ext.closers = append(ext.closers, func(ctx context.Context) {
			_ = ext.control.Close(ctx)
			_ = hc.Close()
		})
		log.Info("control service", zap.String("url", cfg.ControlHTTPURL))
	}
	if cfg.AuthBackend == "http" {
		wc := webhook.Config{QueueSize: cfg.WebhookQueueSize, Workers: cfg.WebhookWorkers, Node: nodeName(),
			Logger: log.Named("webhook"), Context: base}
		if ext.control != nil {
			wc.OnFailure = ext.control.RecordWebhookFailure
		}
		ext.webhooks = webhook.New(wc)
		// Closed before the control plane, so its last failures are reported.
		ext.closers = append([]func(context.Context){func(ctx context.Context) { _ = ext.webhooks.Close(ctx) }}, ext.closers...)
	}
	return ext, nil
}

// close stops the dispatcher, then the control plane, within 5 s.
func (e *external) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, c := range e.closers {
		c(ctx)
	}
}

// nodeName names this node in control-plane reports: the host name.
func nodeName() string {
	h, err := os.Hostname()
	if err != nil {
		return "kraken"
	}
	return h
}

// newBroker picks the fan-out backend (BROKER_BACKEND): one node, or the
// nodes joined over NATS (natsbroker). The node starts and closes it.
func newBroker(cfg config.Config, nodeID string, log *zap.Logger) (kbroker.Broker, error) {
	if cfg.BrokerBackend != "nats" {
		return local.Broker{}, nil
	}
	opts := natsOptions(cfg)
	urls := natsURLs(cfg)
	b, err := natsbroker.New(natsbroker.Config{URLs: urls, Node: nodeID, Options: opts, RetainTTL: cfg.RetainTTL,
		RetainReplicas: cfg.NATSReplicas, StateReplicas: cfg.NATSReplicas, Logger: log.Named("broker.nats")})
	if err != nil {
		return nil, err
	}
	log.Info("broker backend", zap.String("backend", "nats"), zap.Strings("nats_url", urls), zap.String("node_id", nodeID))
	return b, nil
}

// natsOptions are the connection options of NATS_CREDS and NATS_TLS_CA.
func natsOptions(cfg config.Config) []nats.Option {
	var opts []nats.Option
	if cfg.NATSCreds != "" {
		opts = append(opts, nats.UserCredentials(cfg.NATSCreds))
	}
	if cfg.NATSTLSCA != "" {
		opts = append(opts, nats.RootCAs(cfg.NATSTLSCA))
	}
	return opts
}

// natsURLs are the servers of NATS_URL, blanks and empty items dropped.
func natsURLs(cfg config.Config) []string {
	var urls []string
	for _, u := range strings.Split(cfg.NATSURL, ",") {
		if u = strings.TrimSpace(u); u != "" {
			urls = append(urls, u)
		}
	}
	return urls
}

// natsServers is NATS_URL as nats.Connect takes it: the servers joined
// with commas.
func natsServers(cfg config.Config) string { return strings.Join(natsURLs(cfg), ",") }

// authBackend is the auth backend serve runs with.
type authBackend struct {
	// authn answers Validate and Revalidate; for the token file it is a
	// *static.Static, which also implements auth.Notifier.
	authn auth.Authenticator
	// reload is what SIGHUP does: reload the token file and log the result.
	// It never fails the process.
	reload func()
	// close stops the backend's goroutines.
	close func()
	// name is the `backend` label of the auth metrics: static, http or
	// allow_all.
	name string
	// tokens is the token-file backend and service the HTTP one, for
	// metrics and readiness; nil for the others.
	tokens  *static.Static
	service *httpauth.Backend
}

// addReadyChecks makes n not ready while the token file's last reload
// failed, or while the auth service's circuit breaker is open.
func (b authBackend) addReadyChecks(n *node.Node) {
	if b.tokens != nil {
		n.AddReadyCheck("token_file", b.tokens.Ready)
	}
	if b.service != nil {
		n.AddReadyCheck("auth_service", b.service.Ready)
	}
}

// newAuthenticator picks the auth backend (wire-reference.md §4.1, D-1): the token
// file, or every token accepted with AUTH_ALLOW_ALL=true. The error, from
// static.New, wraps static.ErrRead or static.ErrParse.
func newAuthenticator(cfg config.Config, log *zap.Logger) (authBackend, error) {
	if cfg.AuthAllowAll {
		log.Warn("AUTH_ALLOW_ALL=true: every token is accepted with full access to every topic; never use this in production")
		return authBackend{
			authn: static.AllowAll{},
			reload: func() {
				log.Info("SIGHUP: AUTH_ALLOW_ALL=true, there is no token file to reload")
			},
			close: func() {},
			name:  "allow_all",
		}, nil
	}
	if cfg.AuthBackend == "http" {
		return newHTTPAuthenticator(cfg, log)
	}
	st, err := static.New(static.Config{Path: cfg.AuthFile, Logger: log.Named("auth.static")})
	if err != nil {
		return authBackend{}, err
	}
	// static.New has logged "Loaded auth file <path>: <n> tokens".
	return authBackend{
		authn:  st,
		reload: func() { reloadTokenFile(st) },
		close:  func() { _ = st.Close() },
		name:   "static",
		tokens: st,
	}, nil
}

// newHTTPAuthenticator is AUTH_BACKEND=http: the user's auth service at
// AUTH_HTTP_URL (wire-reference.md §5.1). A set AUTH_FILE is ignored, and says so.
func newHTTPAuthenticator(cfg config.Config, log *zap.Logger) (authBackend, error) {
	if cfg.AuthFile != config.Defaults().AuthFile {
		log.Info("AUTH_BACKEND=http: AUTH_FILE is ignored", zap.String("path", cfg.AuthFile))
	}
	if cfg.AuthHTTPInsecureSkipVerify {
		log.Warn("AUTH_HTTP_INSECURE_SKIP_VERIFY=true: the TLS certificates of the auth and control services are not verified; development only")
	}
	hb, err := httpauth.New(httpauth.Config{
		BaseURL:            cfg.AuthHTTPURL,
		Secret:             cfg.BackendSecret,
		InsecureSkipVerify: cfg.AuthHTTPInsecureSkipVerify,
		MaxInFlight:        cfg.AuthHTTPMaxInFlight,
		Logger:             log.Named("auth.http"),
	})
	if err != nil {
		return authBackend{}, err
	}
	log.Info("auth service", zap.String("url", cfg.AuthHTTPURL))
	return authBackend{
		authn:   hb,
		reload:  func() { log.Info("SIGHUP: AUTH_BACKEND=http, there is no token file to reload") },
		close:   func() { _ = hb.Close() },
		name:    "http",
		service: hb,
	}, nil
}

// reloadTokenFile is SIGHUP with the token file: the reload the file
// watcher runs, so a valid file replaces the token set, flushes the token
// cache and revalidates every live connection (OnChange), and a broken one,
// or one with an error check-config reports (the same validator), keeps
// the last valid tokens in force (D-1) and makes /ready not ready. Static
// logs the one line of the reload, with trigger "sighup": "Reloaded auth
// file <path>: <n> tokens" at info, or "Failed to parse auth file <path>:
// <reason>" ("Cannot read ...", "Refused auth file <path>: ... <path>:L:C:
// ...") at error with the tokens kept.
func reloadTokenFile(st *static.Static) {
	_ = st.ReloadFor("sighup") // logged and counted by Static
}

// reloadOnSignal calls reload on its own goroutine for every value received
// on hup until ctx is done. The returned channel is closed once that
// goroutine has returned, after any reload in progress.
func reloadOnSignal(ctx context.Context, hup <-chan os.Signal, reload func()) <-chan struct{} {
	done := make(chan struct{})
	// Owned by serve, which waits on done before closing the backend.
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload()
			}
		}
	}()
	return done
}

// newStore picks the message store (STORE_BACKEND): in memory, bounded by
// STORE_MAX_MESSAGES and STORE_TTL_SECONDS (memory, and jetstream, whose
// durable history openHistory opens besides), or none.
func newStore(cfg config.Config) store.Store {
	if cfg.StoreBackend == "noop" || !cfg.RecordMessages {
		return noop.Store{}
	}
	return memstore.New(memstore.Config{MaxMessages: cfg.StoreMaxMessages, TTL: cfg.StoreTTL})
}
