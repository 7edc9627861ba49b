package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/NoLagApp/kraken/pkg/client"
)

// Exit code of a command-line client whose arguments are wrong; a refused
// token or topic and a broker that cannot be reached exit with exitFail.
const exitUsage = 2

// cliFlags are the flags every client subcommand takes.
type cliFlags struct {
	url     string
	token   string
	caFile  string
	timeout time.Duration
	qos     int
}

// newCLIFlags builds the flag set of subcommand name, with --url and
// --token defaulting to KRAKEN_URL and KRAKEN_TOKEN.
func newCLIFlags(name, usage string, lookup func(string) (string, bool), stderr io.Writer) (*flag.FlagSet, *cliFlags) {
	fs := flag.NewFlagSet("kraken "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := &cliFlags{}
	url, ok := lookup("KRAKEN_URL")
	if !ok || url == "" {
		url = client.DefaultURL
	}
	token, _ := lookup("KRAKEN_TOKEN")
	fs.StringVar(&cf.url, "url", url, "broker WebSocket URL (env KRAKEN_URL)")
	fs.StringVar(&cf.token, "token", token, "access token (env KRAKEN_TOKEN)")
	caFile, _ := lookup("KRAKEN_CAFILE")
	fs.StringVar(&cf.caFile, "cafile", caFile, "PEM CA certificates that a wss:// broker's certificate must chain to, instead of the system's (env KRAKEN_CAFILE)")
	fs.DurationVar(&cf.timeout, "timeout", 10*time.Second, "how long to wait for the broker to connect or answer")
	fs.IntVar(&cf.qos, "qos", 1, "QoS level 0, 1 or 2")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kraken %s\n\nflags:\n", usage)
		fs.PrintDefaults()
	}
	return fs, cf
}

// parseArgs parses flags that may come before, between or after the
// positional arguments (`kraken pub TOPIC DATA --retain`); everything after
// "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// check validates the common flags.
func (cf *cliFlags) check() error {
	if cf.token == "" {
		return errors.New("no token: pass --token or set KRAKEN_TOKEN")
	}
	if !strings.HasPrefix(cf.url, "ws://") && !strings.HasPrefix(cf.url, "wss://") {
		return fmt.Errorf("--url %q must start with ws:// or wss://", cf.url)
	}
	if cf.qos < 0 || cf.qos > 2 {
		return fmt.Errorf("--qos %d must be 0, 1 or 2", cf.qos)
	}
	if cf.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	return nil
}

// connect opens a client with the common flags.
func (cf *cliFlags) connect(ctx context.Context, opts client.Options) (*client.Client, error) {
	opts.URL = cf.url
	opts.RequestTimeout = cf.timeout
	if cf.caFile != "" {
		pem, err := os.ReadFile(cf.caFile)
		if err != nil {
			return nil, fmt.Errorf("--cafile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cafile %s holds no PEM certificate", cf.caFile)
		}
		opts.TLSConfig = &tls.Config{RootCAs: pool}
	}
	c := client.New(cf.token, opts)
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		_ = c.Close()
		return nil, connectError(cf.url, err)
	}
	return c, nil
}

// connectError explains a failed connect: a refused token, the server's
// answer to the upgrade request (a wrong path gets kraken's 404 and its
// reason), a TLS mismatch between the URL and the server, or the broker
// closing the connection.
func connectError(url string, err error) error {
	var e *client.Error
	if errors.As(err, &e) {
		if e.Err == "access_denied" {
			return fmt.Errorf("the broker at %s refused the token (access_denied): check --token or KRAKEN_TOKEN", url)
		}
		return fmt.Errorf("the broker at %s refused the connection: %v", url, e)
	}
	var he *client.HandshakeError
	if errors.As(err, &he) {
		msg := fmt.Sprintf("HTTP %d from %s", he.Status, url)
		if he.Body != "" {
			msg += ": " + printable(he.Body)
		}
		return errors.New(msg)
	}
	var te *client.TLSMismatchError
	if errors.As(err, &te) {
		return fmt.Errorf("cannot connect to %s: %s", url, printable(te.Error()))
	}
	return fmt.Errorf("cannot connect to %s: %s", url, explain(err))
}

// explain renders an error of the client for people: the close frame of
// a broker that closed the connection ("broker closed the connection:
// 1009 frame too large"), else the error as it is.
func explain(err error) string {
	var ce *client.CloseError
	if !errors.As(err, &ce) {
		return printable(err.Error())
	}
	msg := "broker closed the connection: " + strconv.Itoa(ce.Code)
	if ce.Reason != "" {
		msg += " " + printable(ce.Reason)
	}
	if ce.Code == 1009 {
		msg += " (larger than the broker's MAX_FRAME_SIZE)"
	}
	return msg
}

// requestError explains a refused subscribe or publish, with the broker's
// code and hint, or why the connection ended before the answer.
func requestError(what, topic string, err error) error {
	var e *client.Error
	if !errors.As(err, &e) {
		return fmt.Errorf("%s %q failed: %s", what, topic, explain(err))
	}
	msg := fmt.Sprintf("%s %q refused: %s", what, topic, e.Err)
	if e.Code != 0 {
		msg += fmt.Sprintf(" (%d)", e.Code)
	}
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	switch {
	case (e.Err == "unknown_topic" || e.Err == "not_authorized") && e.Hint == "":
		msg += " (the topic is outside this token's grants)"
	case e.Err == "rate_limit_exceeded" && e.Limit != 0:
		msg += fmt.Sprintf(" (this connection may publish %d messages a second: the token's rateLimit, else the broker's RATE_LIMIT; publish more slowly with --rate)", e.Limit)
	case e.Err == "rate_limit_exceeded":
		msg += " (publish more slowly with --rate)"
	case e.Err == "message_too_large":
		msg += " (larger than the broker's MAX_MESSAGE_SIZE or the token's maxMessageSizeBytes)"
	}
	return errors.New(msg)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// cliFail prints "kraken CMD: err" and returns exitFail.
func cliFail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "kraken %s: %v\n", cmd, err)
	return exitFail
}

// parseCommand parses a client subcommand's arguments and checks the
// positional ones with checkArgs and the connection flags. done is true when
// the command must stop here with exit code code (help shown, or a usage
// error already reported).
func parseCommand(stderr io.Writer, fs *flag.FlagSet, cf *cliFlags, name string, args []string,
	checkArgs func(pos []string) error) (pos []string, code int, done bool) {
	pos, err := parseArgs(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, exitOK, true
	case err != nil:
		return nil, exitUsage, true
	}
	if err := checkArgs(pos); err != nil {
		return nil, cliUsage(stderr, fs, name, err), true
	}
	if err := cf.check(); err != nil {
		return nil, cliUsage(stderr, fs, name, err), true
	}
	return pos, exitOK, false
}

// cliUsage prints a usage error and returns exitUsage.
func cliUsage(stderr io.Writer, fs *flag.FlagSet, cmd string, err error) int {
	fmt.Fprintf(stderr, "kraken %s: %v\nrun '%s -h' for usage\n", cmd, err, fs.Name())
	return exitUsage
}

// printable makes a string from the network safe for a terminal: control
// characters (an escape sequence could recolour the screen or retitle the
// window) and invalid UTF-8 are shown as Go escapes, everything else as is.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
