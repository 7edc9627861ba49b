package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/broker/local"
	"github.com/NoLagApp/kraken/pkg/config"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/store/memstore"
	"github.com/NoLagApp/kraken/pkg/store/noop"
)

// tokenCacheEntries bounds the token cache (protocol.md §4.8).
const tokenCacheEntries = 100_000

// serve runs the broker until ctx is cancelled, then shuts down within
// cfg.ShutdownTimeout.
func serve(ctx context.Context, cfg config.Config, log *zap.Logger, stderr io.Writer) int {
	authn, closeAuth, err := newAuthenticator(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "kraken: %v\n", err)
		return exitConfig
	}
	defer closeAuth()
	msgStore := newStore(cfg)
	if c, ok := msgStore.(store.Closer); ok {
		defer func() { _ = c.Close() }()
	}
	workers := cfg.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	srv, err := server.New(server.Config{
		Addr:            net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.WSPort)),
		Auth:            auth.NewCache(authn, cfg.TokenCacheTTL, tokenCacheEntries, nil),
		MaxFrameSize:    cfg.MaxFrameSize,
		MaxMessageSize:  cfg.MaxMessageSize,
		RecordMessages:  cfg.RecordMessages,
		Store:           msgStore,
		Broker:          local.Broker{}, // BROKER_BACKEND=local, the only backend of this build
		RateLimit:       cfg.RateLimit,
		ErrorFrameLimit: cfg.ErrorFrameLimit,
		MaxAuthFailures: cfg.MaxAuthFailures,
		Logger:          log,
		Hub: hub.Config{
			Workers:            workers,
			OutboundMaxBytes:   cfg.OutboundMaxBytes,
			MaxSubscriptions:   cfg.MaxSubscriptions,
			HandshakeTimeout:   cfg.HandshakeTimeout,
			AuthTimeout:        cfg.AuthTimeout,
			IdleTimeout:        cfg.IdleTimeout,
			RevalidateInterval: cfg.RevalidateInterval,
			RetainTTL:          cfg.RetainTTL,
		},
	})
	if err != nil {
		fmt.Fprintf(stderr, "kraken: %v\n", err)
		return exitFail
	}
	if err := srv.Start(); err != nil {
		fmt.Fprintf(stderr, "kraken: listen: %v\n", err)
		return exitFail
	}
	log.Info("kraken started", zap.String("version", version), zap.Int("workers", workers),
		zap.String("auth_backend", cfg.AuthBackend), zap.Bool("record_messages", cfg.RecordMessages))
	<-ctx.Done()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown did not finish in time", zap.Error(err))
		return exitFail
	}
	log.Info("stopped", zap.Uint64("slow_consumers", srv.Hub().Stats().SlowConsumers))
	return exitOK
}

// newAuthenticator picks the auth backend (protocol.md §4.1, D-1): the token
// file, or every token accepted with AUTH_ALLOW_ALL=true.
func newAuthenticator(cfg config.Config, log *zap.Logger) (auth.Authenticator, func(), error) {
	if cfg.AuthAllowAll {
		log.Warn("AUTH_ALLOW_ALL=true: every token is accepted with full access to every topic; never use this in production")
		return static.AllowAll{}, func() {}, nil
	}
	st, err := static.New(static.Config{Path: cfg.AuthFile, Logger: log.Named("auth.static")})
	if err != nil {
		return nil, nil, err
	}
	log.Info("token file loaded", zap.String("path", cfg.AuthFile), zap.Int("tokens", st.Stats().Tokens))
	return st, func() { _ = st.Close() }, nil
}

// newStore picks the message store (STORE_BACKEND): in memory, bounded by
// STORE_MAX_MESSAGES and STORE_TTL_SECONDS, or none.
func newStore(cfg config.Config) store.Store {
	if cfg.StoreBackend == "noop" || !cfg.RecordMessages {
		return noop.Store{}
	}
	return memstore.New(memstore.Config{MaxMessages: cfg.StoreMaxMessages, TTL: cfg.StoreTTL})
}
