package server

import (
	"bufio"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Hostile upgrade requests: every bad request gets an HTTP
// error with a reason and the connection is closed; a good request in an
// unusual but legal shape is upgraded.

// refused sends req on a fresh connection, reads the HTTP answer and checks
// that the server announces and performs the close.
func refused(t *testing.T, s *Server, req string) (*http.Response, string) {
	t.Helper()
	conn := dialTCP(t, s)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, body := readResponse(t, conn, br)
	if !resp.Close {
		t.Fatalf("%d answer without Connection: close", resp.StatusCode)
	}
	expectClosedBy(t, conn, br, 5*time.Second)
	return resp, body
}

// upgraded sends req on a fresh connection and expects 101, then a working
// WebSocket session.
func upgraded(t *testing.T, s *Server, req string) {
	t.Helper()
	conn := dialTCP(t, s)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if resp, body := readResponse(t, conn, br); resp.StatusCode != 101 {
		t.Fatalf("status = %d %q, want 101", resp.StatusCode, body)
	}
	testpeer.New(t, conn, br).Auth("dev-token-alice")
}

// withHeader replaces the header line of the upgrade request whose name is
// name (any case) by line; an empty line removes it.
func withHeader(name, line string) string {
	lines := strings.Split(upgradeRequest(), "\r\n")
	out := lines[:0]
	for _, l := range lines {
		if k, _, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, name) {
			if line == "" {
				continue
			}
			l = line
		}
		out = append(out, l)
	}
	return strings.Join(out, "\r\n")
}

func TestHostileHTTP10UpgradeIsRefusedWith505(t *testing.T) {
	s := start(t, nil)
	resp, body := refused(t, s, strings.Replace(upgradeRequest(), "HTTP/1.1", "HTTP/1.0", 1))
	if resp.StatusCode != 505 || !strings.Contains(body, "HTTP protocol version") {
		t.Fatalf("HTTP/1.0 upgrade = %d %q, want 505 naming the protocol version", resp.StatusCode, body)
	}
}

func TestHostileMethodOtherThanGETOnWSIs405WithAllowGET(t *testing.T) {
	s := start(t, nil)
	for _, method := range []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD", "TRACE", "BREW"} {
		t.Run(method, func(t *testing.T) {
			resp, _ := refused(t, s, strings.Replace(upgradeRequest(), "GET ", method+" ", 1))
			if resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET" {
				t.Fatalf("%s /ws = %d Allow=%q, want 405 Allow=GET", method, resp.StatusCode, resp.Header.Get("Allow"))
			}
		})
	}
}

func TestHostileUpgradeWithoutSecWebSocketKeyIs400(t *testing.T) {
	s := start(t, nil)
	resp, body := refused(t, s, withHeader("Sec-WebSocket-Key", ""))
	if resp.StatusCode != 400 || !strings.Contains(body, "Sec-WebSocket-Key") {
		t.Fatalf("no key = %d %q, want 400 naming Sec-WebSocket-Key", resp.StatusCode, body)
	}
}

func TestHostileUpgradeWithMalformedSecWebSocketKeyIs400(t *testing.T) {
	s := start(t, nil)
	b64 := base64.StdEncoding.EncodeToString
	for _, tt := range []struct{ name, key string }{
		{name: "empty", key: ""},
		{name: "too short", key: b64(make([]byte, 8))},
		{name: "too long", key: b64(make([]byte, 32))},
		{name: "24 characters, not base64", key: strings.Repeat("!", 24)},
		{name: "24 characters, 17 bytes", key: b64(make([]byte, 17))},
		{name: "base64url alphabet", key: "______________________=="},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := refused(t, s, withHeader("Sec-WebSocket-Key", "Sec-WebSocket-Key: "+tt.key))
			if resp.StatusCode != 400 || !strings.Contains(body, "Sec-WebSocket-Key") {
				t.Fatalf("key %q = %d %q, want 400 naming Sec-WebSocket-Key", tt.key, resp.StatusCode, body)
			}
		})
	}
}

func TestHostileUpgradeWithoutSecWebSocketVersionIs400WithVersion13(t *testing.T) {
	s := start(t, nil)
	resp, _ := refused(t, s, withHeader("Sec-WebSocket-Version", ""))
	if resp.StatusCode != 400 || resp.Header.Get("Sec-WebSocket-Version") != "13" {
		t.Fatalf("no version = %d Sec-WebSocket-Version=%q, want 400 with 13",
			resp.StatusCode, resp.Header.Get("Sec-WebSocket-Version"))
	}
}

func TestHostileUpgradeWithUnsupportedSecWebSocketVersionIs426WithVersion13(t *testing.T) {
	s := start(t, nil)
	for _, v := range []string{"8", "12", "14", "13, 8", "thirteen", ""} {
		t.Run(v, func(t *testing.T) {
			resp, _ := refused(t, s, withHeader("Sec-WebSocket-Version", "Sec-WebSocket-Version: "+v))
			if resp.StatusCode != 426 || resp.Header.Get("Sec-WebSocket-Version") != "13" {
				t.Fatalf("version %q = %d Sec-WebSocket-Version=%q, want 426 with 13",
					v, resp.StatusCode, resp.Header.Get("Sec-WebSocket-Version"))
			}
		})
	}
}

func TestHostileUpgradeHeaderNamesInAnyCaseAreAccepted(t *testing.T) {
	s := start(t, nil)
	names := []string{"Host", "Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version"}
	for _, tt := range []struct {
		name string
		conv func(string) string
	}{
		{name: "lower", conv: strings.ToLower},
		{name: "upper", conv: strings.ToUpper},
		{name: "mixed", conv: func(s string) string {
			b := []byte(strings.ToLower(s))
			for i := 0; i < len(b); i += 2 {
				b[i] = strings.ToUpper(string(b[i]))[0]
			}
			return string(b)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := upgradeRequest()
			for _, n := range names {
				req = strings.Replace(req, "\r\n"+n+":", "\r\n"+tt.conv(n)+":", 1)
			}
			// The token values are case-insensitive too (RFC 6455 §4.2.1).
			req = strings.NewReplacer("websocket\r\n", tt.conv("websocket")+"\r\n",
				"Upgrade\r\n", tt.conv("Upgrade")+"\r\n").Replace(req)
			upgraded(t, s, req)
		})
	}
}

func TestHostileUpgradeConnectionHeaderWithSeveralTokens(t *testing.T) {
	s := start(t, nil)
	for _, v := range []string{"keep-alive, Upgrade", "Upgrade, keep-alive", "keep-alive,upgrade",
		"close ,  UPGRADE , TE", "TE,Upgrade,keep-alive"} {
		t.Run("accepted "+v, func(t *testing.T) {
			upgraded(t, s, withHeader("Connection", "Connection: "+v))
		})
	}
	for _, v := range []string{"keep-alive", "close", "Upgraded", "Upgrade-ish", ""} {
		t.Run("refused "+v, func(t *testing.T) {
			resp, body := refused(t, s, withHeader("Connection", "Connection: "+v))
			if resp.StatusCode != 400 || !strings.Contains(body, "Connection") {
				t.Fatalf("Connection: %q = %d %q, want 400 naming Connection", v, resp.StatusCode, body)
			}
		})
	}
}

func TestHostileOversizedRequestLineIs431(t *testing.T) {
	s := start(t, nil)
	req := strings.Replace(upgradeRequest(), "GET /ws ", "GET /ws?"+strings.Repeat("q", 9<<10)+" ", 1)
	if resp, _ := refused(t, s, req); resp.StatusCode != 431 {
		t.Fatalf("status = %d, want 431", resp.StatusCode)
	}
}

func TestHostileRequestHeaderOverTheConfiguredBoundIs431(t *testing.T) {
	s := start(t, func(c *testConfig) { c.MaxHeaderBytes = 512 })
	req := withHeader("Host", "Host: "+strings.Repeat("h", 512))
	if resp, _ := refused(t, s, req); resp.StatusCode != 431 {
		t.Fatalf("status = %d, want 431", resp.StatusCode)
	}
	upgraded(t, s, upgradeRequest()) // a normal request still fits
}
