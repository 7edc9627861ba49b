package client

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HandshakeError is a WebSocket upgrade that the server answered with an
// HTTP status other than 101, e.g. kraken's data port answering a path
// other than /ws with 404 "not found: the WebSocket endpoint is /ws".
type HandshakeError struct {
	// Status is the HTTP status code, e.g. 404.
	Status int
	// Body is the start of the answer's body (at most maxErrorBody
	// bytes), spaces trimmed; "" when the server sent none.
	Body string
}

// Error renders the status and the server's words, e.g.
// `HTTP 404: not found: the WebSocket endpoint is /ws`.
func (e *HandshakeError) Error() string {
	if e.Body == "" {
		return "HTTP " + strconv.Itoa(e.Status)
	}
	return "HTTP " + strconv.Itoa(e.Status) + ": " + e.Body
}

// TLSMismatchError is a connection whose URL and server disagree about
// TLS: a wss:// URL whose server answered in plain HTTP, or a ws:// URL
// whose server answered in TLS.
type TLSMismatchError struct {
	// Addr is the server's host:port.
	Addr string
	// ServerTLS is true when the server speaks TLS (the URL should be
	// wss://), false when it does not (the URL should be ws://).
	ServerTLS bool
	// Answer is what the server sent, when it explains itself (e.g. Go's
	// "Client sent an HTTP request to an HTTPS server.").
	Answer string
}

// Error says which scheme to use, e.g. "the server at localhost:8080 does
// not speak TLS; use ws://".
func (e *TLSMismatchError) Error() string {
	msg := "the server at " + e.Addr + " does not speak TLS; use ws://"
	if e.ServerTLS {
		msg = "the server at " + e.Addr + " speaks TLS; use wss://"
	}
	if e.Answer != "" {
		msg += " (it answered: " + e.Answer + ")"
	}
	return msg
}

// maxErrorBody bounds the body kept in a HandshakeError, and maxPeek the
// first bytes of a connection kept to explain a failed handshake.
const (
	maxErrorBody = 512
	maxPeek      = 1024
)

// statusBodyWait bounds the reading of an HTTP error's body.
const statusBodyWait = time.Second

// peekConn keeps the first bytes read from a connection, until stopped, to
// tell what answered a failed handshake: a TLS alert, or plain HTTP.
type peekConn struct {
	net.Conn
	head    []byte
	stopped bool
}

func (c *peekConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if !c.stopped && len(c.head) < maxPeek {
		c.head = append(c.head, p[:min(n, maxPeek-len(c.head))]...)
	}
	return n, err
}

// dialDiag collects what a dial saw, to explain its failure.
type dialDiag struct {
	raw    *peekConn       // the TCP connection, under TLS for wss://
	status *HandshakeError // an HTTP/1.1 status other than 101, read whole
}

// netDial dials TCP and keeps the connection for explain.
func (d *dialDiag) netDial(ctx context.Context, network, addr string) (net.Conn, error) {
	var nd net.Dialer
	nc, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	d.raw = &peekConn{Conn: nc}
	return d.raw, nil
}

// onStatusError reads the status, headers and the start of the body of a
// refused upgrade (gobwas' Dialer.OnStatusError).
func (d *dialDiag) onStatusError(_ int, _ []byte, resp io.Reader) {
	if d.raw != nil {
		_ = d.raw.SetReadDeadline(time.Now().Add(statusBodyWait))
	}
	d.status = parseHTTPError(resp)
}

// parseHTTPError reads an HTTP response from r; nil when r holds none.
// The body is read as far as it came, at most maxErrorBody bytes.
func parseHTTPError(r io.Reader) *HandshakeError {
	resp, err := http.ReadResponse(bufio.NewReader(r), nil)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return &HandshakeError{Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
}

// explain turns a failed dial of rawURL into the error that says what
// went wrong: the server's HTTP answer (*HandshakeError), or a TLS
// mismatch (*TLSMismatchError); otherwise err, with a hint when a wss://
// server accepted the connection and never answered the TLS handshake.
func (d *dialDiag) explain(rawURL string, err error) error {
	u, perr := url.Parse(rawURL)
	if perr != nil || d.raw == nil {
		return err
	}
	secure := u.Scheme == "wss"
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if secure {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	head := d.raw.head
	switch {
	case secure && bytes.HasPrefix(head, []byte("HTTP/")):
		// The server read the TLS ClientHello as a request and answered it
		// in plain HTTP.
		return &TLSMismatchError{Addr: addr, ServerTLS: false}
	case !secure && len(head) >= 2 && (head[0] == 0x15 || head[0] == 0x16) && head[1] == 0x03:
		// A TLS record (an alert, or a handshake) in answer to a request.
		return &TLSMismatchError{Addr: addr, ServerTLS: true}
	}
	status := d.status
	if status == nil && !secure && bytes.HasPrefix(head, []byte("HTTP/")) {
		// An answer gobwas does not hand to OnStatusError (HTTP/1.0).
		status = parseHTTPError(bytes.NewReader(head))
	}
	if status != nil {
		if !secure && status.Status == http.StatusBadRequest && strings.Contains(status.Body, "HTTPS") {
			// What Go's net/http and nginx answer a plain request on a
			// TLS port: "Client sent an HTTP request to an HTTPS server."
			return &TLSMismatchError{Addr: addr, ServerTLS: true, Answer: status.Error()}
		}
		return status
	}
	if secure && len(head) == 0 && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("no answer to the TLS handshake from %s (a plain ws:// listener?): %w", addr, err)
	}
	return err
}
