// Command kraken runs the kraken realtime broker: WebSocket clients
// authenticate with an access token and publish and subscribe to topics in
// MessagePack frames.
//
// Every setting is an environment variable and a flag; `kraken -h` lists
// them with their defaults. SIGINT and SIGTERM shut the broker down
// gracefully; SIGHUP reloads the token file at once and never stops it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/config"
)

// Exit codes.
const (
	exitOK     = 0
	exitFail   = 1
	exitConfig = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr))
}

func run(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "version", "--version", "-version":
			fmt.Fprintln(stdout, "kraken", version)
			return exitOK
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stderr, commandsUsage)
			args = []string{"-h"}
		case "print-env":
			printEnv(stdout)
			return exitOK
		case "serve":
			args = args[1:]
		case "pub":
			return runPub(args[1:], lookup, stdout, stderr)
		case "sub":
			return runSub(args[1:], lookup, stdout, stderr)
		case "presence":
			return runPresence(args[1:], lookup, stdout, stderr)
		case "health":
			return runHealth(args[1:], lookup, stdout, stderr)
		}
	}
	cfg, err := config.Load(args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "kraken: invalid configuration:\n%v\n", err)
		return exitConfig
	}
	log, err := newLogger(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "kraken: %v\n", err)
		return exitConfig
	}
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the token file (systemctl reload). It stays caught
	// until the process exits, so one arriving during shutdown is dropped
	// instead of ending the process with status 129.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return serve(ctx, cfg, log, stderr, hup)
}

// commandsUsage is printed before the settings table by `kraken -h`.
const commandsUsage = `Usage: kraken [serve] [flags]   run the broker (the default)
       kraken pub TOPIC DATA      publish one message (kraken pub -h)
       kraken sub TOPIC...        print the messages of topics (kraken sub -h)
       kraken presence ROOM       show who is in a room (kraken presence -h)
       kraken health              check a running broker's /health (kraken health -h)
       kraken print-env           print every setting with its default, as NAME=value
       kraken version             print the version

`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func printEnv(w io.Writer) {
	for _, v := range config.Vars() {
		fmt.Fprintf(w, "%s=%s\n", v.Env, v.Default)
	}
}

func newLogger(cfg config.Config) (*zap.Logger, error) {
	level, err := zap.ParseAtomicLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("LOG_LEVEL: %w", err)
	}
	zc := zap.NewProductionConfig()
	if cfg.LogFormat == "console" {
		zc = zap.NewDevelopmentConfig()
	}
	zc.Level = level
	zc.DisableStacktrace = true
	return zc.Build()
}
