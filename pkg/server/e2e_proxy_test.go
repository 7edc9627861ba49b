package server

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/certs"
	"github.com/NoLagApp/kraken/pkg/certs/certstest"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// proxyV1 is a PROXY protocol version 1 line for a TCP connection from
// src to 10.0.0.1:8080.
func proxyV1(src string) []byte {
	ap := netip.MustParseAddrPort(src)
	proto := "TCP4"
	dst := "10.0.0.1"
	if ap.Addr().Is6() {
		proto, dst = "TCP6", "2001:db8::1"
	}
	return []byte("PROXY " + proto + " " + ap.Addr().String() + " " + dst + " " +
		strconv.Itoa(int(ap.Port())) + " 8080\r\n")
}

// proxyV2 is a PROXY protocol version 2 header (the binary form) for a TCP
// connection from src, with a NOOP TLV the reader must skip.
func proxyV2(src string) []byte {
	ap := netip.MustParseAddrPort(src)
	b := []byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x00")
	if ap.Addr().Is6() {
		b[13] = 0x21
		b = append(b, ap.Addr().AsSlice()...)
		b = append(b, netip.MustParseAddr("2001:db8::1").AsSlice()...)
	} else {
		b = append(b, ap.Addr().AsSlice()...)
		b = append(b, 10, 0, 0, 1)
	}
	b = binary.BigEndian.AppendUint16(b, ap.Port())
	b = binary.BigEndian.AppendUint16(b, 8080)
	b = append(b, 0x04, 0x00, 0x03, 'x', 'y', 'z') // PP2_TYPE_NOOP
	binary.BigEndian.PutUint16(b[14:], uint16(len(b)-16))
	return b
}

// proxiedUpgrade sends header then an upgrade request with extra header
// lines on c, and returns the status and body of the answer and a reader
// of what follows.
func proxiedUpgrade(t *testing.T, c net.Conn, header []byte, extra string) (int, string, *bufio.Reader) {
	t.Helper()
	req := strings.Replace(upgradeRequest(), "Host: kraken.test\r\n", "Host: kraken.test\r\n"+extra, 1)
	if _, err := c.Write(append(append([]byte(nil), header...), req...)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, body := readResponse(t, c, br)
	return resp.StatusCode, body, br
}

// A PROXY protocol header, version 1 or 2, IPv4 or IPv6, gives the address
// the logs name ("connection closed") and the session sees: the connection
// authenticates, and its address is the header's, not the proxy's.
func TestProxyProtocolSetsTheClientAddress(t *testing.T) {
	s, logs := observed(t, func(c *testConfig) { c.ProxyProtocol = true })
	for i, tc := range []struct {
		name   string
		header []byte
		want   string
	}{
		{"v1 TCP4", proxyV1("203.0.113.5:5001"), "203.0.113.5:5001"},
		{"v1 TCP6", proxyV1("[2001:db8::5]:5002"), "[2001:db8::5]:5002"},
		{"v2 IPv4", proxyV2("203.0.113.6:5003"), "203.0.113.6:5003"},
		{"v2 IPv6", proxyV2("[2001:db8::6]:5004"), "[2001:db8::6]:5004"},
		{"v1 UNKNOWN: the socket's address", []byte("PROXY UNKNOWN\r\n"), "127.0.0.5:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialFrom(t, s, "127.0.0.5")
			status, body, br := proxiedUpgrade(t, c, tc.header, "")
			if status != 101 {
				t.Fatalf("status %d %q", status, body)
			}
			testpeer.New(t, c, br).Auth("dev-token-bob")
			_ = c.Close()
			lines := waitLog(t, logs, "connection closed", i+1)
			got := lines[len(lines)-1].ContextMap()["remote_addr"]
			if addr, _ := got.(string); !strings.HasPrefix(addr, tc.want) {
				t.Fatalf("connection closed from %v, want %s", got, tc.want)
			}
		})
	}
}

// Per-address limits apply to the address a header gives: behind one
// proxy address, each client address gets its own bound; a second pending
// connection of one is refused with 429 and the reason while another
// address is still served.
func TestProxyProtocolLimitsTheRealAddress(t *testing.T) {
	s := start(t, func(c *testConfig) {
		c.ProxyProtocol = true
		c.Limits = edge.Limits{MaxPendingPerAddress: 1}
	})
	up := func(header []byte) (int, string) {
		status, body, _ := proxiedUpgrade(t, dialFrom(t, s, "127.0.0.6"), header, "")
		return status, body
	}
	if status, body := up(proxyV1("198.51.100.1:1000")); status != 101 {
		t.Fatalf("first client: %d %q", status, body)
	}
	if status, body := up(proxyV2("198.51.100.2:1000")); status != 101 {
		t.Fatalf("second client behind the same proxy: %d %q, want 101 (its own bound)", status, body)
	}
	status, body := up(proxyV2("198.51.100.1:1001"))
	if status != 429 || !strings.Contains(body, "(MAX_PENDING_PER_ADDRESS)") {
		t.Fatalf("the first client's second pending connection: %d %q, want 429 with the reason", status, body)
	}
	if status, body := up(proxyV1("198.51.100.3:1000")); status != 101 {
		t.Fatalf("a third client: %d %q", status, body)
	}
	if got := s.node.Refused(); got[edge.TooManyPendingFromAddress] != 1 {
		t.Fatalf("refused %v", got)
	}
}

// A connection whose first bytes are not a header is closed without an
// answer, and counted; one whose header never completes is closed at the
// handshake deadline.
func TestProxyProtocolMalformedOrIncompleteHeaderCloses(t *testing.T) {
	const deadline = 300 * time.Millisecond
	s := start(t, func(c *testConfig) {
		c.ProxyProtocol = true
		c.Hub.HandshakeTimeout = deadline
	})
	c := dialTCP(t, s)
	if _, err := io.WriteString(c, upgradeRequest()); err != nil {
		t.Fatal(err)
	}
	if out := expectClosedBy(t, c, c, 5*time.Second); len(out) != 0 {
		t.Fatalf("answered %q to a connection without a header", out)
	}
	if n := s.loop.ProxyHeaderErrors(); n != 1 {
		t.Fatalf("%d malformed headers counted", n)
	}

	c = dialTCP(t, s)
	began := time.Now()
	if _, err := c.Write(proxyV1("203.0.113.5:5001")[:20]); err != nil {
		t.Fatal(err)
	}
	expectClosedBy(t, c, c, 5*time.Second)
	if elapsed := time.Since(began); elapsed < deadline-50*time.Millisecond {
		t.Fatalf("closed after %v, before the %v handshake deadline", elapsed, deadline)
	}
	if n := s.loop.ProxyHeaderErrors(); n != 1 {
		t.Fatalf("an incomplete header counted as malformed: %d", n)
	}
}

// X-Forwarded-For and Forwarded: honoured from a trusted proxy (the
// address it names is the one the limits count and the logs name),
// ignored from any other peer, however forged.
func TestForwardedForFromTrustedProxiesOnly(t *testing.T) {
	s, logs := observed(t, func(c *testConfig) {
		c.TrustedProxies, _ = edge.ParseTrustedProxies("127.0.0.7")
		c.Limits = edge.Limits{MaxPendingPerAddress: 1}
	})
	var conns []net.Conn
	up := func(local, header string) (int, string) {
		c := dialFrom(t, s, local)
		conns = append(conns, c)
		status, body, _ := proxiedUpgrade(t, c, nil, header)
		return status, body
	}
	// Through the trusted proxy: 203.0.113.9's first connection, then
	// another address's, then 203.0.113.9's second (refused: its own
	// pending bound, not the proxy's).
	if status, body := up("127.0.0.7", "X-Forwarded-For: 192.0.2.1, 203.0.113.9\r\n"); status != 101 {
		t.Fatalf("trusted: %d %q", status, body)
	}
	if status, body := up("127.0.0.7", "Forwarded: for=\"[2001:db8::9]:4711\";proto=http\r\n"); status != 101 {
		t.Fatalf("trusted, another address: %d %q", status, body)
	}
	status, body := up("127.0.0.7", "X-Forwarded-For: 203.0.113.9\r\n")
	if status != 429 || !strings.Contains(body, "(MAX_PENDING_PER_ADDRESS)") {
		t.Fatalf("trusted, the same address again: %d %q, want 429 with the reason", status, body)
	}
	// From an untrusted peer the same header is ignored: counted as
	// 127.0.0.8, which has no connection yet.
	if status, body := up("127.0.0.8", "X-Forwarded-For: 203.0.113.9\r\n"); status != 101 {
		t.Fatalf("untrusted peer with a forged header: %d %q, want 101 (ignored)", status, body)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	lines := waitLog(t, logs, "connection closed", 4)
	seen := map[string]bool{}
	for _, l := range lines {
		addr, _ := l.ContextMap()["remote_addr"].(string)
		host, _, _ := net.SplitHostPort(addr)
		seen[host] = true
	}
	for _, want := range []string{"203.0.113.9", "2001:db8::9", "127.0.0.8"} {
		if !seen[want] {
			t.Errorf("no connection logged from %s: %v", want, seen)
		}
	}
	if seen["127.0.0.7"] {
		t.Errorf("a connection through the trusted proxy logged with the proxy's address: %v", seen)
	}
}

// The accept rate per address: past the burst, a new connection is
// refused with 429 and the reason naming the setting, counted as rate,
// while another address is still served.
func TestAcceptRatePerAddress(t *testing.T) {
	s := start(t, func(c *testConfig) { c.Limits = edge.Limits{AcceptRate: 1, AcceptBurst: 2} })
	for i := range 2 {
		if status, body := upgradeStatus(t, dialFrom(t, s, "127.0.0.9")); status != 101 {
			t.Fatalf("connection %d of the burst: %d %q", i, status, body)
		}
	}
	status, body := upgradeStatus(t, dialFrom(t, s, "127.0.0.9"))
	if status != 429 || !strings.Contains(body, "too many new connections from your address (MAX_ACCEPT_RATE_PER_ADDRESS)") {
		t.Fatalf("past the burst: %d %q, want 429 with the reason", status, body)
	}
	if status, body := upgradeStatus(t, dialFrom(t, s, "127.0.0.10")); status != 101 {
		t.Fatalf("another address: %d %q", status, body)
	}
	if got := s.node.Refused(); got[edge.TooFastFromAddress] != 1 {
		t.Fatalf("refused %v", got)
	}
}

// On the TLS listener with PROXY protocol (PROXY_PROTOCOL has wss) the
// header comes before the TLS handshake, as HAProxy sends it in TCP mode:
// the connection is upgraded over TLS and its address is the header's;
// the plain listener, without PROXY protocol, is unaffected.
func TestProxyProtocolBeforeTLS(t *testing.T) {
	ca := certstest.New(t, "proxy-tls")
	certFile, keyFile := ca.Server("kraken", time.Hour)
	store, err := certs.Load(certs.Files{Cert: certFile, Key: keyFile})
	if err != nil {
		t.Fatal(err)
	}
	s, logs := observed(t, func(c *testConfig) {
		c.TLSAddr, c.TLS, c.ProxyProtocolTLS = "127.0.0.1:0", store.Config(false), true
	})
	raw, err := net.Dial("tcp", s.TLSAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	if _, err := raw.Write(proxyV2("198.51.100.7:6001")); err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, ca.ClientConfig())
	status, body, br := proxiedUpgrade(t, c, nil, "")
	if status != 101 {
		t.Fatalf("status %d %q", status, body)
	}
	testpeer.New(t, c, br).Auth("dev-token-bob")
	_ = c.Close()
	got := waitLog(t, logs, "connection closed", 1)[0].ContextMap()["remote_addr"]
	if addr, _ := got.(string); addr != "198.51.100.7:6001" {
		t.Fatalf("connection closed from %v, want 198.51.100.7:6001", got)
	}
	plain := testpeer.Dial(t, s.Addr().String()) // no header on the plain listener
	plain.Auth("dev-token-alice")
}

// Behind a trusted proxy the accept rate is the forwarded clients', not
// the proxy's: eight clients forwarded from one proxy address are each
// served, while one client's own burst still ends in 429; the proxy's
// address, forwarding no client, is bounded as itself.
func TestAcceptRateBehindATrustedProxyIsTheClients(t *testing.T) {
	trusted, err := edge.ParseTrustedProxies("127.0.0.11")
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, func(c *testConfig) {
		c.Limits = edge.Limits{AcceptRate: 1, AcceptBurst: 2}
		c.TrustedProxies = trusted
	})
	for i := range 8 {
		status, body, _ := proxiedUpgrade(t, dialFrom(t, s, "127.0.0.11"), nil, fmt.Sprintf("X-Forwarded-For: 192.0.2.%d\r\n", i+1))
		if status != 101 {
			t.Fatalf("forwarded client %d: %d %q", i+1, status, body)
		}
	}
	for i := range 3 {
		status, body, _ := proxiedUpgrade(t, dialFrom(t, s, "127.0.0.11"), nil, "X-Forwarded-For: 192.0.2.100\r\n")
		if want := map[bool]int{true: 429, false: 101}[i == 2]; status != want {
			t.Fatalf("the same forwarded client, connection %d: %d %q, want %d", i+1, status, body, want)
		}
	}
	for i := range 3 {
		status, body, _ := proxiedUpgrade(t, dialFrom(t, s, "127.0.0.11"), nil, "")
		if want := map[bool]int{true: 429, false: 101}[i == 2]; status != want {
			t.Fatalf("the proxy forwarding no client, connection %d: %d %q, want %d", i+1, status, body, want)
		}
	}
}

// A trusted proxy's own request (it forwards no client address) whose
// body comes in a later write is looked at again when it completes; its
// address's bounds are applied once: with a burst of one new connection
// per address, it is served, not refused half-way for its own second
// look.
func TestForwardedRequestBodyInALaterWriteIsAdmittedOnce(t *testing.T) {
	trusted, err := edge.ParseTrustedProxies("127.0.0.12")
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, func(c *testConfig) {
		withSecret(c)
		c.Limits = edge.Limits{AcceptRate: 1, AcceptBurst: 1}
		c.TrustedProxies = trusted
	})
	body := `{"topic":"demo-app/demo/general/messages","payload":"late body"}`
	c := dialFrom(t, s, "127.0.0.12")
	head := "POST /internal/publish HTTP/1.1\r\nHost: kraken.test\r\n" +
		"Authorization: Bearer " + testInternalSecret + "\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n"
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the head is read and looked at alone
	if _, err := c.Write([]byte(body)); err != nil {
		t.Fatal(err)
	}
	resp, answer := readResponse(t, c, bufio.NewReader(c))
	if resp.StatusCode != 200 {
		t.Fatalf("POST = %d %s", resp.StatusCode, answer)
	}
}
