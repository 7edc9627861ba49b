package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// HTTP side of the listener: /health, errors and the /ws upgrade
// (wire-reference.md §1.1, §5.5).

func TestHTTPHealthAnswersStatusOK(t *testing.T) {
	s := start(t, nil)
	resp, body := httpExchange(t, s, "GET /health HTTP/1.1\r\nHost: kraken.test\r\n\r\n")
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	if body != `{"status":"ok"}` {
		t.Fatalf("body = %q, want {\"status\":\"ok\"}", body)
	}
}

func TestHTTPHealthAnswersAnyMethod(t *testing.T) {
	s := start(t, nil)
	resp, body := httpExchange(t, s,
		"POST /health HTTP/1.1\r\nHost: kraken.test\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || body != `{"status":"ok"}` {
		t.Fatalf("POST /health = %d %q %q, want 200 application/json {\"status\":\"ok\"}",
			resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

func TestHTTPUnknownPathIsNotFound(t *testing.T) {
	s := start(t, nil)
	resp, _ := httpExchange(t, s, "GET /other HTTP/1.1\r\nHost: kraken.test\r\n\r\n")
	if resp.StatusCode != 404 {
		t.Fatalf("status = %d, want 404", resp.StatusCode)
	}
}

// /metrics and /debug/pprof on the data port answer 404 with the way to
// the admin listener that serves them.
func TestHTTPMetricsOnTheDataPortPointsToTheAdminListener(t *testing.T) {
	s := start(t, nil)
	for _, path := range []string{"/metrics", "/debug/pprof/"} {
		resp, body := httpExchange(t, s, "GET "+path+" HTTP/1.1\r\nHost: kraken.test\r\n\r\n")
		if resp.StatusCode != 404 || !strings.Contains(body, "ADMIN_ADDR") {
			t.Fatalf("GET %s = %d %q, want 404 naming ADMIN_ADDR", path, resp.StatusCode, body)
		}
	}
}

// Without MQTT (no Config.Carried), /mqtt answers 404 saying MQTT over
// WebSocket is off, even to an upgrade offering the mqtt subprotocol.
func TestHTTPMQTTPathWhileMQTTIsOffIsNotFound(t *testing.T) {
	s := start(t, nil)
	resp, body := httpExchange(t, s, "GET /mqtt HTTP/1.1\r\nHost: kraken.test\r\nUpgrade: websocket\r\n"+
		"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: mqtt\r\n\r\n")
	if resp.StatusCode != 404 || !strings.Contains(body, "MQTT over WebSocket is off (MQTT_ENABLED=false)") {
		t.Fatalf("GET /mqtt = %d %q, want 404 saying MQTT is off", resp.StatusCode, body)
	}
}

func TestHTTPMalformedRequestLineIsBadRequest(t *testing.T) {
	s := start(t, nil)
	resp, _ := httpExchange(t, s, "THIS IS NOT HTTP AT ALL\r\n\r\n")
	if resp.StatusCode != 400 {
		t.Fatalf("status = %d, want 400", resp.StatusCode)
	}
}

// A wss:// client on this plain port is refused at the first byte of its
// ClientHello with a plain 400 saying so, which its TLS library reports at
// once instead of waiting for the handshake deadline.
func TestHTTPTLSClientHelloIsRefusedAtOnce(t *testing.T) {
	s := start(t, nil)
	resp, body := httpExchange(t, s, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
	if resp.StatusCode != 400 || !strings.Contains(body, "not TLS (wss://)") {
		t.Fatalf("ClientHello = %d %q, want 400 saying the port is not TLS", resp.StatusCode, body)
	}

	tc := tls.Client(dialTCP(t, s), &tls.Config{ServerName: "kraken.test"})
	defer tc.Close()
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	began := time.Now()
	err := tc.Handshake()
	var rh tls.RecordHeaderError
	if !errors.As(err, &rh) || string(rh.RecordHeader[:]) != "HTTP/" {
		t.Fatalf("TLS handshake: %v, want the plain HTTP answer", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Fatalf("refused after %v", d)
	}
}

func TestHTTPWebSocketPathWithoutUpgradeHeadersIsRefused(t *testing.T) {
	s := start(t, nil)
	resp, _ := httpExchange(t, s, "GET /ws HTTP/1.1\r\nHost: kraken.test\r\n\r\n")
	if resp.StatusCode < 400 || resp.StatusCode > 499 {
		t.Fatalf("status = %d, want 4xx", resp.StatusCode)
	}
}

func TestHTTPUpgradeRequestArrivingOneByteAtATimeUpgrades(t *testing.T) {
	s := start(t, nil)
	conn := dialTCP(t, s)
	req := upgradeRequest()
	for i := 0; i < len(req); i++ {
		if _, err := conn.Write([]byte{req[i]}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Microsecond) // pace the bytes so they arrive in separate reads
	}
	br := bufio.NewReader(conn)
	resp, _ := readResponse(t, conn, br)
	if resp.StatusCode != 101 {
		t.Fatalf("status = %d, want 101", resp.StatusCode)
	}
	p := testpeer.New(t, conn, br)
	p.Auth("dev-token-alice")
}

func TestHTTPFrameBytesPipelinedBehindUpgradeRequestAreProcessed(t *testing.T) {
	s := start(t, nil)
	conn := dialTCP(t, s)
	// The request and the auth frame in one write.
	req := append([]byte(upgradeRequest()), binFrame("type", "auth", "token", "dev-token-alice")...)
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, _ := readResponse(t, conn, br)
	if resp.StatusCode != 101 {
		t.Fatalf("status = %d, want 101", resp.StatusCode)
	}
	p := testpeer.New(t, conn, br)
	p.ExpectFields("type", "auth", "success", true, "actorTokenId", "alice")
}

func TestHTTPOversizedRequestHeaderIs431(t *testing.T) {
	s := start(t, nil)
	req := "GET /ws HTTP/1.1\r\nHost: kraken.test\r\nX-Padding: " + strings.Repeat("a", 9<<10) + "\r\n\r\n"
	resp, _ := httpExchange(t, s, req)
	if resp.StatusCode != 431 {
		t.Fatalf("status = %d, want 431", resp.StatusCode)
	}
}

func TestHTTPUnterminatedOversizedRequestHeaderIs431(t *testing.T) {
	s := start(t, nil)
	// More than 8 KiB and still no blank line: the server must not wait for
	// the end.
	req := "GET /ws HTTP/1.1\r\nHost: kraken.test\r\nX-Padding: " + strings.Repeat("a", 9<<10)
	resp, _ := httpExchange(t, s, req)
	if resp.StatusCode != 431 {
		t.Fatalf("status = %d, want 431", resp.StatusCode)
	}
}

func TestHTTPIncompleteRequestIsClosedAfterHandshakeDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	s := start(t, func(c *testConfig) { c.Hub.HandshakeTimeout = deadline })
	conn := dialTCP(t, s)
	began := time.Now()
	if _, err := conn.Write([]byte("GET /ws HTTP/1.1\r\nHost: kraken.test\r\n")); err != nil {
		t.Fatal(err)
	}
	out := expectClosedBy(t, conn, conn, 5*time.Second)
	if elapsed := time.Since(began); elapsed < deadline-50*time.Millisecond {
		t.Fatalf("closed after %v, before the %v handshake deadline", elapsed, deadline)
	}
	if len(out) > 0 && !strings.HasPrefix(string(out), "HTTP/1.1 4") {
		t.Fatalf("answer before close = %q, want nothing or a 4xx", out)
	}
	waitFor(t, 2*time.Second, func() bool { return s.hub.Stats().IdleClosed >= 1 })
}

func TestHTTPUpgradeIgnoresTheQueryString(t *testing.T) {
	s := start(t, nil)
	conn := dialTCP(t, s)
	req := strings.Replace(upgradeRequest(), "GET /ws ", "GET /ws?token=dev-token-alice&x=1 ", 1)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if resp, _ := readResponse(t, conn, br); resp.StatusCode != 101 {
		t.Fatalf("status = %d, want 101", resp.StatusCode)
	}
	// The token in the query does not authenticate (§1.1).
	p := testpeer.New(t, conn, br)
	p.Send("type", "subscribe", "topic", "demo/general/x")
	p.ExpectFields("type", "error", "error", "not_authenticated")
}

func TestHTTPUpgradeNegotiatesNoSubprotocolAndNoExtension(t *testing.T) {
	s := start(t, nil)
	conn := dialTCP(t, s)
	req := strings.Replace(upgradeRequest(), "\r\n\r\n",
		"\r\nSec-WebSocket-Protocol: kraken, chat\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n", 1)
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, _ := readResponse(t, conn, br)
	if resp.StatusCode != 101 {
		t.Fatalf("status = %d, want 101", resp.StatusCode)
	}
	for _, h := range []string{"Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions"} {
		if v := resp.Header.Get(h); v != "" {
			t.Fatalf("%s: %q negotiated, want none (§1.1)", h, v)
		}
	}
	testpeer.New(t, conn, br).Auth("dev-token-alice")
}

func TestHTTPHalfAFrameBehindTheUpgradeRequestIsCompletedLater(t *testing.T) {
	s := start(t, nil)
	conn := dialTCP(t, s)
	auth := binFrame("type", "auth", "token", "dev-token-alice")
	if _, err := conn.Write(append([]byte(upgradeRequest()), auth[:7]...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if resp, _ := readResponse(t, conn, br); resp.StatusCode != 101 {
		t.Fatalf("status = %d, want 101", resp.StatusCode)
	}
	if _, err := conn.Write(auth[7:]); err != nil {
		t.Fatal(err)
	}
	testpeer.New(t, conn, br).ExpectFields("type", "auth", "success", true)
}

func TestHTTPUpgradeAcceptsBrowserStyleHeaders(t *testing.T) {
	s := start(t, nil)
	conn := dialTCP(t, s)
	// Firefox sends a Connection list; header names are case-insensitive.
	req := strings.NewReplacer("Connection: Upgrade", "connection: keep-alive, Upgrade",
		"Upgrade: websocket", "upgrade: WebSocket").Replace(upgradeRequest())
	if _, err := conn.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if resp, _ := readResponse(t, conn, br); resp.StatusCode != 101 {
		t.Fatalf("status = %d, want 101", resp.StatusCode)
	}
	testpeer.New(t, conn, br).Auth("dev-token-alice")
}
