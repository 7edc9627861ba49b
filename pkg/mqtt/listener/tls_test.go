package listener_test

import (
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/certs"
	"github.com/NoLagApp/kraken/pkg/certs/certstest"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// MQTT over TLS against mosquitto-clients: the server certificate checked
// with --cafile, and, under mutual TLS, a client certificate required.

// startTLSNode starts a node whose MQTT listener also serves MQTT over
// TLS with a certificate of ca, asking for a client certificate of ca
// when mutual is set; it returns the node and the TLS address.
func startTLSNode(t *testing.T, ca *certstest.CA, mutual bool) (*node, string) {
	t.Helper()
	certFile, keyFile := ca.Server("kraken", time.Hour)
	files := certs.Files{Cert: certFile, Key: keyFile}
	if mutual {
		files.ClientCA = ca.File
	}
	store, err := certs.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	n := startNodeWith(t, nil, func(c *listener.Config) { c.TLSAddr, c.TLS = "127.0.0.1:0", store.Config(true) })
	return n, n.mqtt.TLSAddr().String()
}

func TestMosquittoOverTLS(t *testing.T) {
	needMosquitto(t)
	ca := certstest.New(t, "mqtts")
	n, addr := startTLSNode(t, ca, false)
	before := n.node.Stats().Hub.Subscriptions
	done := make(chan string, 1)
	go func() {
		out, err := mosq(t, addr, "mosquitto_sub", "--cafile", ca.File, "-u", "device", "-P", "dev-token-bob",
			"-t", "demo/general/#", "-C", "1", "-v")
		if err != nil {
			out += " (exit: " + err.Error() + ")"
		}
		done <- out
	}()
	waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions > before })
	if out, err := mosq(t, addr, "mosquitto_pub", "--cafile", ca.File, "-u", "device", "-P", "dev-token-alice",
		"-t", topic, "-q", "1", "-m", "over tls"); err != nil {
		t.Fatalf("mosquitto_pub: %v: %s", err, out)
	}
	if out := <-done; strings.TrimSpace(out) != topic+" over tls" {
		t.Fatalf("mosquitto_sub printed %q", out)
	}
	// A client that does not trust the certificate's CA refuses it.
	other := certstest.New(t, "other")
	if out, err := mosq(t, addr, "mosquitto_pub", "--cafile", other.File, "-u", "device", "-P", "dev-token-alice",
		"-t", topic, "-m", "x"); err == nil {
		t.Fatalf("mosquitto_pub trusting another CA connected: %s", out)
	}
}

func TestMosquittoMutualTLS(t *testing.T) {
	needMosquitto(t)
	ca := certstest.New(t, "mqtts")
	n, addr := startTLSNode(t, ca, true)
	_, certFile, keyFile := ca.Client("sensor-1")
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-bob")
	ws.Send("type", "subscribe", "topic", topic)
	ws.ExpectType("subscribed")
	if out, err := mosq(t, addr, "mosquitto_pub", "--cafile", ca.File, "--cert", certFile, "--key", keyFile,
		"-u", "device", "-P", "dev-token-alice", "-t", topic, "-q", "1", "-m", "with a client certificate"); err != nil {
		t.Fatalf("mosquitto_pub with a client certificate: %v: %s", err, out)
	}
	f := ws.ExpectType("message")
	if got, _ := f.Map["data"].([]byte); string(got) != "with a client certificate" {
		if s, _ := f.Map["data"].(string); s != "with a client certificate" {
			t.Fatalf("message data %v", f.Map["data"])
		}
	}
	// Without a client certificate, or with one of another CA: refused
	// in the handshake, and nothing is published.
	other := certstest.New(t, "other")
	_, otherCert, otherKey := other.Client("intruder")
	for name, extra := range map[string][]string{"none": nil, "another CA's": {"--cert", otherCert, "--key", otherKey}} {
		args := append([]string{"--cafile", ca.File}, extra...)
		args = append(args, "-u", "device", "-P", "dev-token-alice", "-t", topic, "-q", "1", "-m", "refused")
		if out, err := mosq(t, addr, "mosquitto_pub", args...); err == nil {
			t.Fatalf("mosquitto_pub with %s client certificate connected: %s", name, out)
		}
	}
	ws.ExpectNothing(300 * time.Millisecond)
	if _, failed := n.mqtt.TLSHandshakes(); failed < 2 {
		t.Fatalf("%d failed handshakes counted, want 2", failed)
	}
}
