package main

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/certs/certstest"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// copyFile writes src's bytes to dst, as a certificate renewal would.
func copyFile(t *testing.T, dst, src string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// servedSerial is the serial number of the certificate a new TLS
// connection to addr is served.
func servedSerial(t *testing.T, addr string, cfg *tls.Config) *big.Int {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber
}

// TestServeWSSAndCertificateReload: the quickstart's protocol over wss://
// with a test CA beside plain ws://; a certificate swapped on disk is
// served to new connections after SIGHUP, and after a plain file change,
// while an open connection goes on; a broken certificate file keeps the
// certificate in force, and the admin listener (over TLS) says why in
// /ready's warnings, staying ready, and counts the failed reload.
func TestServeWSSAndCertificateReload(t *testing.T) {
	ca := certstest.New(t, "serve")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first, firstKey := ca.Server("first", time.Hour)
	copyFile(t, certFile, first)
	copyFile(t, keyFile, firstKey)
	wss, admin := "127.0.0.1:"+freePort(t), "127.0.0.1:"+freePort(t)
	_, wssPort, _ := strings.Cut(wss, ":")
	b := startBroker(t, "", "WSS_PORT="+wssPort, "TLS_CERT_FILE="+certFile, "TLS_KEY_FILE="+keyFile,
		"ADMIN_ADDR="+admin, "ADMIN_TLS=true")
	cfg := ca.ClientConfig()

	bob := testpeer.Dial(t, b.addr)
	bob.Auth("dev-token-bob")
	bob.Send("type", "subscribe", "topic", "demo/general/messages")
	bob.ExpectFields("type", "subscribed")
	alice := testpeer.DialTLS(t, wss, cfg)
	alice.Auth("dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/messages", "data", "over wss", "msgRef", "1")
	alice.ExpectFields("type", "published", "msgRef", "1")
	bob.ExpectFields("type", "message", "data", "over wss")
	before := servedSerial(t, wss, cfg)

	second, secondKey := ca.Server("second", time.Hour)
	copyFile(t, certFile, second)
	copyFile(t, keyFile, secondKey)
	b.sighup(t)
	b.waitLogs(t, "Reloaded TLS certificate", 1)
	if got := servedSerial(t, wss, cfg); got.Cmp(before) == 0 {
		t.Fatalf("after SIGHUP a new connection is still served serial %v", got)
	}
	alice.Send("type", "publish", "topic", "demo/general/messages", "data", "still open", "msgRef", "2")
	alice.ExpectFields("type", "published", "msgRef", "2")
	bob.ExpectFields("type", "message", "data", "still open")
	kept := servedSerial(t, wss, cfg)

	if err := os.WriteFile(certFile, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b.sighup(t)
	b.waitLogs(t, "TLS certificate reload failed", 1)
	if got := servedSerial(t, wss, cfg); got.Cmp(kept) != 0 {
		t.Fatalf("after a failed reload a new connection is served serial %v, want the one in force, %v", got, kept)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
	resp, err := hc.Get("https://" + admin + "/ready")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var ready struct {
		Status   string
		Warnings map[string]string
	}
	if err := json.Unmarshal(body, &ready); err != nil || resp.StatusCode != 200 || ready.Status != "ready" ||
		!strings.Contains(ready.Warnings["tls_certificate"], certFile) {
		t.Fatalf("admin /ready = %d %s, want 200, ready, and a tls_certificate warning naming %s", resp.StatusCode, body, certFile)
	}
	resp, err = hc.Get("https://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`kraken_tls_certificate_reloads_total{result="error"} 1`, `kraken_tls_certificate_reloads_total{result="ok"} 1`,
		`kraken_tls_handshakes_total{listener="wss",result="ok"}`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %s", want)
		}
	}

	// A renewal written in place, without a signal: served within the
	// watch interval.
	third, thirdKey := ca.Server("third", time.Hour)
	copyFile(t, keyFile, thirdKey)
	copyFile(t, certFile, third)
	deadline := time.Now().Add(certWatchEvery + 10*time.Second)
	for servedSerial(t, wss, cfg).Cmp(kept) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("a certificate changed on disk was not served within %v\n%s", certWatchEvery+10*time.Second, b.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if line := b.waitLogs(t, "Reloaded TLS certificate", 2)[1]; line["trigger"] != "file_changed" {
		t.Fatalf("reload logged with trigger %v, want file_changed", line["trigger"])
	}
	b.expectRunning(t)
}

// TestPubOverWSS: kraken pub with a ws:// URL on the wss:// port is told
// to use wss://; with wss:// it needs the broker's CA, which --cafile (or
// KRAKEN_CAFILE) gives it, and then publishes to a subscriber.
func TestPubOverWSS(t *testing.T) {
	ca := certstest.New(t, "pub")
	certFile, keyFile := ca.Server("kraken", time.Hour)
	wssPort := freePort(t)
	b := startBroker(t, "", "WSS_PORT="+wssPort, "TLS_CERT_FILE="+certFile, "TLS_KEY_FILE="+keyFile)
	url := "wss://127.0.0.1:" + wssPort + "/ws"
	pub := []string{"pub", "--token", "dev-token-alice", "demo/general/messages", `"over wss"`}
	code, _, stderr := runIn(nil, "pub", "--url", "ws://127.0.0.1:"+wssPort+"/ws", "--token", "dev-token-alice", "demo/general/messages", "1")
	if code == 0 || !strings.Contains(stderr, "speaks TLS; use wss://") {
		t.Fatalf("ws:// to the TLS port: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runIn(nil, append(pub, "--url", url)...); code == 0 || !strings.Contains(stderr, "certificate signed by unknown authority") {
		t.Fatalf("without the CA: exit %d, stderr %q", code, stderr)
	}
	bob := testpeer.Dial(t, b.addr)
	bob.Auth("dev-token-bob")
	bob.Send("type", "subscribe", "topic", "demo/general/messages")
	bob.ExpectFields("type", "subscribed")
	if code, _, stderr := runIn(nil, append(pub, "--url", url, "--cafile", ca.File)...); code != 0 {
		t.Fatalf("--cafile: exit %d, stderr %q", code, stderr)
	}
	bob.ExpectFields("type", "message", "data", "over wss")
	if code, _, stderr := runIn([]string{"KRAKEN_CAFILE=" + ca.File}, append(pub, "--url", url)...); code != 0 {
		t.Fatalf("KRAKEN_CAFILE: exit %d, stderr %q", code, stderr)
	}
	bob.ExpectFields("type", "message", "data", "over wss")
}
