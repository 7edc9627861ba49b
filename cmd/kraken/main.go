// Command kraken runs the kraken realtime broker: WebSocket clients
// authenticate with an access token and publish and subscribe to topics in
// MessagePack frames.
//
// Every setting is an environment variable and a flag; `kraken -h` lists
// them with their defaults. SIGINT and SIGTERM shut the broker down
// gracefully; SIGUSR2 drains the broker (it stops answering ready and
// accepting, closes its connections over DRAIN_SECONDS) then shuts it
// down; SIGHUP reloads the token file at once and never stops it.
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
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

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
			return runPrintEnv(args[1:], lookup, stdout, stderr)
		case "check-config":
			return runCheckConfig(args[1:], lookup, stdout, stderr)
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
		case "admin":
			return runAdmin(args[1:], lookup, stdout, stderr)
		}
	}
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		fmt.Fprintf(stderr, "kraken: unknown command %q\n\n%s", args[0], commandsUsage)
		return exitConfig
	}
	for _, a := range args {
		if commands[a] {
			fmt.Fprintf(stderr, "kraken: %q is a command: put it first, before its flags (kraken %s [flags])\n", a, a)
			return exitConfig
		}
	}
	if rest, ok := testFlag(args); ok { // kraken -t, as nats-server -t
		return runCheckConfig(rest, lookup, stdout, stderr)
	}
	cfg, err := config.Load(args, lookup, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		// In the log format, with what LOG_FORMAT and LOG_LEVEL could be read.
		log := newLogger(cfg, stderr)
		log.Error("invalid configuration; kraken check-config reports every problem",
			zap.Strings("problems", problems(err)))
		_ = log.Sync()
		return exitConfig
	}
	log := newLogger(cfg, stderr)
	defer func() { _ = log.Sync() }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the token file (systemctl reload). It stays caught
	// until the process exits, so one arriving during shutdown is dropped
	// instead of ending the process with status 129.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	// SIGUSR2 drains the node, then shuts it down (DRAIN_SECONDS); caught
	// likewise until the process exits.
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, syscall.SIGUSR2)
	return serve(ctx, cfg, log, stderr, signals{hup: hup, drain: usr2})
}

// commands are the subcommands run dispatches on (commandsUsage).
var commands = map[string]bool{"serve": true, "pub": true, "sub": true, "presence": true, "health": true, "admin": true,
	"check-config": true, "print-env": true, "version": true, "help": true}

// commandsUsage is printed before the settings table by `kraken -h`.
const commandsUsage = `Usage: kraken [serve] [flags]   run the broker (the default)
       kraken pub TOPIC DATA      publish one message (kraken pub -h)
       kraken sub TOPIC...        print the messages of topics (kraken sub -h)
       kraken presence ROOM       show who is in a room (kraken presence -h)
       kraken health              check a running broker's /health (kraken health -h)
       kraken admin COMMAND       list and disconnect connections, revoke, drain, over the admin API (kraken admin -h)
       kraken check-config        check the settings and the token file; exit 0 or 2 (also kraken -t)
       kraken print-env           print every setting's effective value as NAME=value, secrets masked
       kraken version             print the version

`

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// newLogger builds the process's logger on w (stderr): JSON lines, or the
// console format with LOG_FORMAT=console, at LOG_LEVEL, with ISO-8601
// timestamps. A format or level that cfg does not hold validly (a
// configuration that failed to load) falls back to json and info, so even
// that failure is reported in the format of every other line.
func newLogger(cfg config.Config, w io.Writer) *zap.Logger {
	level, err := zap.ParseAtomicLevel(cfg.LogLevel)
	if err != nil {
		level = zap.NewAtomicLevelAt(zap.InfoLevel)
	}
	zc := zap.NewProductionConfig()
	if cfg.LogFormat == "console" {
		zc = zap.NewDevelopmentConfig()
	}
	ec := zc.EncoderConfig
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	enc := zapcore.NewJSONEncoder(ec)
	if cfg.LogFormat == "console" {
		enc = zapcore.NewConsoleEncoder(ec)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), level)
	if zc.Sampling != nil {
		core = zapcore.NewSamplerWithOptions(core, time.Second, zc.Sampling.Initial, zc.Sampling.Thereafter)
	}
	opts := []zap.Option{zap.ErrorOutput(zapcore.Lock(zapcore.AddSync(w)))}
	if zc.Development {
		opts = append(opts, zap.Development(), zap.AddCaller())
	} else {
		opts = append(opts, zap.AddCaller())
	}
	return zap.New(core, opts...)
}

// startFailed logs a fatal start-up error in the log format and returns
// code, the exit status.
func startFailed(log *zap.Logger, err error, code int) int {
	log.WithOptions(zap.AddCallerSkip(1)).Error("kraken cannot start", zap.Error(err))
	return code
}

// problems splits a joined error (config.Load's) into its messages.
func problems(err error) []string {
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, problems(e)...)
		}
		return out
	}
	return []string{err.Error()}
}
