package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/NoLagApp/kraken/pkg/config"
)

// Defaults of `kraken health`.
const (
	healthHost    = "127.0.0.1"
	healthPort    = "8080" // WS_PORT's default
	healthTimeout = 2 * time.Second
	// healthBodyLimit is the most of the answer that is read, in bytes;
	// kraken's is 15 ({"status":"ok"}).
	healthBodyLimit = 1024
)

// runHealth is `kraken health [--url URL] [--ws-port PORT] [--timeout D]`:
// a container health check for images without a shell or curl. It sends
// GET URL (by default http://127.0.0.1:WS_PORT/health, WS_PORT from
// --ws-port or the environment, else 8080) and prints "ok" on stdout with
// exit status 0 when the answer is 200 with the JSON body {"status":"ok"}.
// Anything else, including bad arguments, prints one line "kraken health:
// <reason>" on stderr and exits 1: Docker reads 1 as unhealthy and reserves
// 2. -h prints the usage and exits 0. When PROXY_PROTOCOL (the environment)
// names ws, the WebSocket port expects a PROXY protocol header first: the
// probe sends "PROXY UNKNOWN" (the header of a connection that is not a
// client's, which keeps the socket's address).
func runHealth(args []string, lookup func(string) (string, bool), stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("kraken health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	port, ok := lookup("WS_PORT")
	if !ok || port == "" {
		port = healthPort
	}
	rawURL := fs.String("url", "", "health URL (default http://127.0.0.1:WS_PORT/health)")
	fs.StringVar(&port, "ws-port", port, "port of the default URL (env WS_PORT)")
	timeout := fs.Duration("timeout", healthTimeout, "how long to wait for the whole answer")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: kraken health [flags]\n\n"+
			"Checks a running broker: GET /health must answer 200 {\"status\":\"ok\"}.\n"+
			"Prints ok and exits 0 if it does, else prints the reason and exits 1.\n"+
			"Example (Docker): HEALTHCHECK CMD [\"/app/kraken\", \"health\"]\n\nflags:\n")
		fs.PrintDefaults()
	}
	switch err := fs.Parse(args); {
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case err != nil:
		return exitFail // flag has printed the problem and the usage
	}
	target, err := healthURL(*rawURL, port, fs.Args(), *timeout)
	if err != nil {
		return cliFail(stderr, "health", err)
	}
	pp, _ := lookup("PROXY_PROTOCOL")
	listeners, err := config.ParseListeners(pp)
	if err != nil {
		return cliFail(stderr, "health", fmt.Errorf("PROXY_PROTOCOL: %w", err))
	}
	if err := checkHealth(target, *timeout, listeners.WS); err != nil {
		return cliFail(stderr, "health", err)
	}
	fmt.Fprintln(stdout, "ok")
	return exitOK
}

// healthURL checks the arguments of `kraken health` and returns the URL to
// probe: rawURL when set, which must be http or https, else the default on
// 127.0.0.1 and port, which must be 1 to 65535.
func healthURL(rawURL, port string, extra []string, timeout time.Duration) (string, error) {
	if len(extra) > 0 {
		return "", fmt.Errorf("takes no arguments, got %q", extra)
	}
	if timeout <= 0 {
		return "", errors.New("--timeout must be positive")
	}
	if rawURL != "" {
		u, err := url.Parse(rawURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("--url %q must be an http:// or https:// URL", rawURL)
		}
		return rawURL, nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q (WS_PORT or --ws-port) must be 1 to 65535; pass --url for a broker on any free port", port)
	}
	return "http://" + net.JoinHostPort(healthHost, port) + "/health", nil
}

// checkHealth sends GET target and returns nil when the answer, read within
// timeout, is 200 with a JSON object whose "status" is "ok", else an error
// naming the URL and what was wrong. Proxies from the environment and
// redirects are not followed: the probe is of this URL itself. With
// proxyHeader the connection begins with a PROXY protocol v1 "PROXY
// UNKNOWN" line (the specification by HAProxy, §2.1).
func checkHealth(target string, timeout time.Duration, proxyHeader bool) error {
	tr := &http.Transport{DisableKeepAlives: true} // Proxy nil: no proxy
	if proxyHeader {
		d := &net.Dialer{Timeout: timeout}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			if _, err := io.WriteString(c, "PROXY UNKNOWN\r\n"); err != nil {
				_ = c.Close()
				return nil, err
			}
			return c, nil
		}
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{
		Transport: tr,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	resp, err := c.Get(target)
	if err != nil {
		return err // *url.Error: `Get "URL": reason`, one line
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, healthBodyLimit+1))
	if err != nil {
		return fmt.Errorf("GET %s: reading the answer: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound && !strings.HasSuffix(strings.TrimRight(strings.SplitN(target, "?", 2)[0], "/"), "/health") {
			return fmt.Errorf("GET %s: status %s, want 200 OK (the health endpoint is /health: --url http://HOST:PORT/health)", target, resp.Status)
		}
		return fmt.Errorf("GET %s: status %s, want 200 OK", target, resp.Status)
	}
	var st struct {
		Status string `json:"status"`
	}
	if len(body) > healthBodyLimit || json.Unmarshal(body, &st) != nil || st.Status != "ok" {
		shown := string(body)
		if len(shown) > 100 {
			shown = shown[:100] + "…"
		}
		return fmt.Errorf("GET %s: body %s, want {\"status\":\"ok\"}", target, strconv.Quote(shown))
	}
	return nil
}
