package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/config"
)

// `kraken admin <command>` is a client of the admin API (pkg/admin) on a
// running broker's admin listener (ADMIN_ADDR): it lists and disconnects
// connections, revokes an actor or a token, drains a node, and shows the
// topics and each node's summary. The bearer secret comes from the
// environment only (KRAKEN_ADMIN_SECRET, else ADMIN_SECRET), never from a
// flag, which every user of the host could read in the process list.

// Defaults of `kraken admin`.
const (
	adminDefaultAddr    = "127.0.0.1:9469" // ADMIN_ADDR's default
	adminDefaultTimeout = 10 * time.Second
	// adminPageAll is the page size of `kraken admin list --all` when
	// --limit is not given: the API's largest.
	adminPageAll = 1000
	// adminBodyLimit bounds an answer read, in bytes.
	adminBodyLimit = 64 << 20
)

// adminUsage is the answer of `kraken admin -h`.
const adminUsage = `usage: kraken admin COMMAND [flags]

Calls the admin API of a running broker (its admin listener, ADMIN_ADDR).

commands:
  list        list the client connections (a table; --json for the API's JSON)
  disconnect  close connections: --conn-id ID [--node N], --actor A or --project P
  revoke      revoke an actor or a token and close its connections
  drain       drain a node (it exits once drained; --stay keeps it up)
  topics      list the topics with subscribers
  info        summarize every node

Every command takes --admin-addr host:port or an http(s):// URL (env
KRAKEN_ADMIN_ADDR, default 127.0.0.1:9469), --cafile (env KRAKEN_CAFILE) for
an https:// admin listener with a private CA, --timeout and --json. The
bearer secret is read from KRAKEN_ADMIN_SECRET, else ADMIN_SECRET.
'kraken admin COMMAND -h' lists a command's flags. Exit status: 0 done,
1 the API refused or could not be reached, 2 bad arguments.
`

// adminCommands are the commands of `kraken admin`, with their usage line.
var adminCommands = map[string]struct {
	usage string
	run   func(*adminCmd) int
}{
	"list": {"list [--actor A] [--project P] [--transport websocket|mqtt] [--remote-addr ADDR] [--node N] [--limit N] [--all] [--json]\n\n" +
		"Lists the client connections of every node, with the total.", adminList},
	"disconnect": {"disconnect (--conn-id ID [--node N] | --actor A | --project P) [--transport T] [--remote-addr ADDR] [--code 1008] [--reason TEXT]\n\n" +
		"Closes the connections named, on every node, and prints how many per node.", adminDisconnect},
	"revoke": {"revoke (--actor A | --token T) [--reason TEXT]\n\n" +
		"Revokes an actor, or the actor a token belongs to: its connections are\n" +
		"closed (4001) and the cached validations of its tokens dropped. --token -\n" +
		"reads the token from standard input (a flag shows in the process list).", adminRevoke},
	"drain": {"drain [--node N] [--stay] [--wait DURATION]\n\n" +
		"Drains a node (the one asked by default): it stops answering ready and\n" +
		"accepting, closes its connections over DRAIN_SECONDS, then exits, or with\n" +
		"--stay stays up, not ready, until it is stopped. --wait returns only once\n" +
		"the node holds no client connection (exit 1 if it still does after\n" +
		"DURATION): a Kubernetes preStop hook runs `kraken admin drain --stay\n" +
		"--wait 25s` (deploy/k8s).", adminDrain},
	"topics": {"topics [--prefix P] [--node N] [--limit N] [--json]\n\n" +
		"Lists the topics with subscribers, the busiest first.", adminTopics},
	"info": {"info [--settings] [--json]\n\nSummarizes every node: version, uptime, readiness, connections, counters.", adminInfo},
}

// adminCmd is one run of a `kraken admin` command: its flags and the
// client of the API.
type adminCmd struct {
	name           string
	argv           []string // the arguments after the command's name
	fs             *flag.FlagSet
	stdin          io.Reader
	stdout, stderr io.Writer
	lookup         func(string) (string, bool)
	addr, caFile   string
	timeout        time.Duration
	json           bool
	// Set by parse.
	base   string // http(s)://host:port[/prefix], no trailing slash
	secret string
	client *http.Client
	ctx    context.Context
}

// runAdmin is `kraken admin COMMAND [flags]`.
func runAdmin(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	return runAdminWithInput(args, lookup, os.Stdin, stdout, stderr)
}

func runAdminWithInput(args []string, lookup func(string) (string, bool), stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, "kraken admin: name a command\n\n"+adminUsage)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, adminUsage)
		return exitOK
	}
	sub, ok := adminCommands[args[0]]
	if !ok {
		if strings.HasPrefix(args[0], "-") {
			fmt.Fprintf(stderr, "kraken admin: %q: flags go after the command (kraken admin list %s)\n\n%s", args[0], args[0], adminUsage)
		} else {
			fmt.Fprintf(stderr, "kraken admin: unknown command %q\n\n%s", args[0], adminUsage)
		}
		return exitUsage
	}
	c := &adminCmd{name: "admin " + args[0], argv: args[1:], stdin: stdin, stdout: stdout, stderr: stderr, lookup: lookup}
	c.fs = flag.NewFlagSet("kraken "+c.name, flag.ContinueOnError)
	c.fs.SetOutput(stderr)
	addr, ok := lookup("KRAKEN_ADMIN_ADDR")
	if !ok || addr == "" {
		addr = adminDefaultAddr
	}
	caFile, _ := lookup("KRAKEN_CAFILE")
	c.fs.StringVar(&c.addr, "admin-addr", addr, "the admin listener: host:port, or an http:// or https:// URL (env KRAKEN_ADMIN_ADDR)")
	c.fs.StringVar(&c.caFile, "cafile", caFile, "PEM CA certificates that an https:// admin listener's certificate must chain to, instead of the system's (env KRAKEN_CAFILE)")
	c.fs.DurationVar(&c.timeout, "timeout", adminDefaultTimeout, "how long to wait for the answer")
	c.fs.BoolVar(&c.json, "json", false, "print the API's JSON answer")
	c.fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: kraken admin %s\n\nThe bearer secret is read from KRAKEN_ADMIN_SECRET, else ADMIN_SECRET.\n\nflags:\n", sub.usage)
		c.fs.PrintDefaults()
	}
	// sub.run defines the command's own flags, then parses c.argv.
	return sub.run(c)
}

// parse parses the command's arguments; done is true when the command
// must stop with code (help shown, or a usage error reported).
func (c *adminCmd) parse(args []string) (code int, done bool) {
	switch err := c.fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return exitOK, true
	case err != nil:
		return exitUsage, true // flag has printed the problem and the usage
	}
	if c.fs.NArg() > 0 {
		return c.usageError(fmt.Errorf("takes no arguments, got %q", c.fs.Args())), true
	}
	if c.timeout <= 0 {
		return c.usageError(errors.New("--timeout must be positive")), true
	}
	base, err := adminBaseURL(c.addr)
	if err != nil {
		return c.usageError(err), true
	}
	c.base = base
	if c.client, err = adminHTTPClient(base, c.caFile); err != nil {
		return c.fail(err), true // as kraken pub and sub do
	}
	from := "KRAKEN_ADMIN_SECRET"
	if s, ok := c.lookup(from); ok && s != "" {
		c.secret = s
	} else {
		from = "ADMIN_SECRET"
		c.secret, _ = c.lookup(from)
	}
	if config.UnsendableSecret(c.secret) {
		return c.usageError(fmt.Errorf("%s holds a space, a newline or a control character (a trailing newline from a file?): no Authorization header can carry it", from)), true
	}
	return exitOK, false
}

func (c *adminCmd) usageError(err error) int { return cliUsage(c.stderr, c.fs, c.name, err) }

// adminBaseURL reads --admin-addr: host:port (http://), or an http:// or
// https:// URL whose path, if any, prefixes /api/ (a reverse proxy's).
func adminBaseURL(addr string) (string, error) {
	if strings.Contains(addr, "://") {
		u, err := url.Parse(addr)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return "", fmt.Errorf("--admin-addr %q: want host:port or an http:// or https:// URL", addr)
		}
		// A URL of the API itself (…/api or …/api/) names the listener it is on.
		path := strings.TrimSuffix(strings.TrimRight(u.EscapedPath(), "/"), "/api")
		return strings.TrimRight(u.Scheme+"://"+u.Host+path, "/"), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("--admin-addr %q: want host:port (such as %s, ADMIN_ADDR's default) or an http:// or https:// URL", addr, adminDefaultAddr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// adminHTTPClient returns the client of base: no proxy, redirects are not
// followed (the answer is the admin listener's own), and an https:// base trusts
// caFile's certificates, when given, instead of the system's.
func adminHTTPClient(base, caFile string) (*http.Client, error) {
	// No proxy from the environment: the request carries the secret, in
	// the clear over http://, to the admin listener only.
	tr := &http.Transport{DisableKeepAlives: true}
	if caFile != "" && strings.HasPrefix(base, "https://") {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("--cafile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cafile %s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}, nil
}

// apiError is a failed call: the API's refusal (Status, with its error
// text), or no answer at all (Status 0).
type apiError struct {
	Status int
	Msg    string
}

func (e *apiError) Error() string { return e.Msg }

// call sends method path with body (JSON, when not nil) and returns the
// answer's body, with an *apiError unless its status is one of ok (200
// when none is given).
func (c *adminCmd) call(method, path string, body any, ok ...int) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx := c.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.secret != "" {
		req.Header.Set("Authorization", "Bearer "+c.secret)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, &apiError{Msg: c.unreachable(err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, adminBodyLimit))
	if err != nil {
		return nil, &apiError{Msg: fmt.Sprintf("%s %s: reading the answer: %v", method, c.base+path, err)}
	}
	if len(ok) == 0 {
		ok = []int{http.StatusOK}
	}
	for _, s := range ok {
		if resp.StatusCode == s {
			return raw, nil
		}
	}
	return raw, &apiError{Status: resp.StatusCode, Msg: c.refusal(resp, raw)}
}

// unreachable explains a request that got no answer.
func (c *adminCmd) unreachable(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := fmt.Sprintf("cannot reach the admin listener at %s: %s", c.base, printable(err.Error()))
	var re tls.RecordHeaderError
	var ce *tls.CertificateVerificationError
	switch {
	case errors.As(err, &re) || strings.Contains(err.Error(), "first record does not look like a TLS handshake") ||
		strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		msg += " (it speaks plain HTTP: use http://)"
	case errors.As(err, &ce):
		msg += " (give its CA with --cafile or KRAKEN_CAFILE)"
	case errors.Is(err, context.DeadlineExceeded):
		msg += fmt.Sprintf(" (no answer within %s: --timeout)", c.timeout)
	case errors.Is(err, syscall.ECONNREFUSED):
		msg += " (is the broker running, with ADMIN_ADDR at this address? set --admin-addr or KRAKEN_ADMIN_ADDR)"
	}
	return msg
}

// refusal explains an answer whose status is not the one expected: the
// API's {"error": ...}, else the start of the body.
func (c *adminCmd) refusal(resp *http.Response, raw []byte) string {
	msg := "HTTP " + resp.Status
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != "" {
		msg += ": " + printable(e.Error)
	} else if s := strings.TrimSpace(string(raw)); s != "" {
		if len(s) > 200 {
			s = s[:200] + "…"
		}
		msg += ": " + printable(s)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized && c.secret == "":
		msg += " (set KRAKEN_ADMIN_SECRET to the broker's ADMIN_SECRET)"
	case resp.StatusCode == http.StatusBadRequest && bytes.Contains(raw, []byte("HTTPS server")):
		msg += " (the admin listener speaks TLS: use an https:// --admin-addr)"
	case resp.StatusCode == http.StatusNotFound && e.Error == "":
		msg += " (no admin API there: is this a kraken admin listener of this version?)"
	}
	return msg
}

// fail reports err (an apiError, or one of the answer) and returns
// exitFail.
func (c *adminCmd) fail(err error) int { return cliFail(c.stderr, c.name, err) }

// warnNodes prints a warning line per node that did not answer or
// answered with an error, and reports false, with an error line, when no
// node took part: a --node that names none (the API answers an empty
// list, or a count of 0, for it).
func (c *adminCmd) warnNodes(nodes []admin.NodeStatus) bool {
	if len(nodes) == 0 {
		fmt.Fprintf(c.stderr, "kraken %s: no node took part: is --node the name of one? (kraken admin info lists them)\n", c.name)
		return false
	}
	for _, n := range nodes {
		switch {
		case !n.Answered:
			fmt.Fprintf(c.stderr, "kraken %s: warning: node %s did not answer: %s\n", c.name, printable(n.Node), printable(n.Error))
		case n.Error != "":
			fmt.Fprintf(c.stderr, "kraken %s: warning: node %s: %s\n", c.name, printable(n.Node), printable(n.Error))
		}
	}
	return true
}

// decode reads raw into v; an error says the answer was not understood.
func (c *adminCmd) decode(raw []byte, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("the answer of %s is not the JSON expected: %v", c.base, err)
	}
	return nil
}

// writeJSON prints raw, the API's JSON, as it came.
func (c *adminCmd) writeJSON(raw []byte) {
	_, _ = c.stdout.Write(raw)
	if len(raw) > 0 && raw[len(raw)-1] != '\n' {
		fmt.Fprintln(c.stdout)
	}
}

// orDash shows "" as "-" in a table.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return printable(s)
}

// withSignals runs f with c.ctx cancelled on SIGINT and SIGTERM.
func (c *adminCmd) withSignals(f func() int) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c.ctx = ctx
	return f()
}
