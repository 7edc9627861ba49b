package listener_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Tests against Debian's mosquitto-clients, a client no one here wrote.
// .ci/run installs it; without it these tests are skipped, loudly.

func needMosquitto(t *testing.T) {
	t.Helper()
	for _, bin := range []string{"mosquitto_sub", "mosquitto_pub"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("SKIPPED: %s not found; install mosquitto-clients (apt-get install -y mosquitto-clients) to test against a real MQTT client", bin)
		}
	}
}

// mosq runs a mosquitto client against addr with the given arguments,
// within 10 s, and returns its combined output and exit error.
func mosq(t *testing.T, addr, bin string, args ...string) (string, error) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-h", host, "-p", port}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// startSub starts mosquitto_sub for one message (-C 1) on topic with -v,
// and waits until the hub holds its subscription.
func startSub(t *testing.T, n *node, token, topic string) <-chan string {
	t.Helper()
	before := n.node.Stats().Hub.Subscriptions
	done := make(chan string, 1)
	go func() {
		out, err := mosq(t, n.mqttAddr(), "mosquitto_sub", "-u", "device", "-P", token, "-t", topic, "-C", "1", "-v")
		if err != nil {
			out += " (exit: " + err.Error() + ")"
		}
		done <- out
	}()
	waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions > before })
	return done
}

func TestMosquittoSubReceivesWebSocketPublish(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	done := startSub(t, n, "dev-token-bob", "demo/general/#")
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "publish", "topic", topic, "data", "hello from alice", "msgRef", "r1")
	ws.ExpectType("published")
	if out := <-done; strings.TrimSpace(out) != topic+" hello from alice" {
		t.Fatalf("mosquitto_sub printed %q", out)
	}
}

func TestMosquittoPubReachesWebSocket(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", topic)
	ws.ExpectType("subscribed")
	if out, err := mosq(t, n.mqttAddr(), "mosquitto_pub", "-u", "bob", "-P", "dev-token-bob", "-t", topic,
		"-q", "1", "-m", "hello from a device"); err != nil {
		t.Fatalf("mosquitto_pub: %v: %s", err, out)
	}
	f := ws.ExpectType("message")
	if d, ok := f.Map["data"].([]byte); !ok || !bytes.Equal(d, []byte("hello from a device")) {
		t.Fatalf("data %#v, want the bin of the payload", f.Map["data"])
	}
	if f.Map["from"] != "bob" {
		t.Fatalf("from %v", f.Map["from"])
	}
}

func TestMosquittoBadTokenRefused(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	out, err := mosq(t, n.mqttAddr(), "mosquitto_sub", "-u", "x", "-P", "wrong-token", "-t", topic, "-C", "1")
	if err == nil || !strings.Contains(out, "not authorised") {
		t.Fatalf("mosquitto_sub with a bad token: %v, %q; want CONNACK 5 (not authorised)", err, out)
	}
	out, err = mosq(t, n.mqttAddr(), "mosquitto_pub", "-u", "x", "-P", "wrong-token", "-t", topic, "-m", "x")
	if err == nil || !strings.Contains(out, "not authorised") {
		t.Fatalf("mosquitto_pub with a bad token: %v, %q", err, out)
	}
}

func TestMosquittoSubscribeDenied(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	out, _ := mosq(t, n.mqttAddr(), "mosquitto_sub", "-u", "x", "-P", "dev-token-bob", "-t", "other/room", "-C", "1")
	if !strings.Contains(out, "denied") {
		t.Fatalf("mosquitto_sub on an ungranted topic printed %q; want SUBACK 0x80 reported as denied", out)
	}
}

func TestMosquittoRetained(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	if out, err := mosq(t, n.mqttAddr(), "mosquitto_pub", "-u", "a", "-P", "dev-token-alice", "-t", topic,
		"-q", "1", "-r", "-m", "kept"); err != nil {
		t.Fatalf("mosquitto_pub -r: %v: %s", err, out)
	}
	out, err := mosq(t, n.mqttAddr(), "mosquitto_sub", "-u", "b", "-P", "dev-token-bob", "-t", topic, "-C", "1", "-W", "5")
	if err != nil || strings.TrimSpace(out) != "kept" {
		t.Fatalf("mosquitto_sub after a retained publish: %v, %q", err, out)
	}
	ws := testpeer.Dial(t, n.wsAddr()) // the same retained store as the SDKs'
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", topic)
	ws.ExpectType("subscribed")
	if f := ws.ExpectType("message"); !bytes.Equal(f.Map["data"].([]byte), []byte("kept")) {
		t.Fatalf("retained for the SDK: %s", f)
	}
}

// TestMosquittoSubBurstQoS1: `mosquitto_sub -q 1 -C 1000` gets all of a
// burst of 1,000 QoS 1 messages, in order, though the in-flight window is
// 64: the rest wait for its PUBACKs instead of closing it as a slow
// consumer. Twenty runs, each a fresh subscriber; the publisher's token
// allows the burst (RATE_LIMIT).
func TestMosquittoSubBurstQoS1(t *testing.T) {
	needMosquitto(t)
	const total, runs = 1000, 20
	n := startNode(t, func(c *testConfig) { c.RateLimit = 100000 })
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	for run := range runs {
		before := n.node.Stats().Hub.Subscriptions
		done := make(chan string, 1)
		go func() {
			host, port, _ := net.SplitHostPort(n.mqttAddr())
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			out, err := exec.CommandContext(ctx, "mosquitto_sub", "-h", host, "-p", port, "-u", "device", "-P", "dev-token-bob",
				"-t", topic, "-q", "1", "-C", fmt.Sprint(total)).CombinedOutput()
			if err != nil {
				out = append(out, " (exit: "+err.Error()+")"...)
			}
			done <- string(out)
		}()
		waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions > before })
		for i := range total {
			ws.Send("type", "publish", "topic", topic, "data", fmt.Sprint(i), "echo", false)
		}
		out := <-done
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != total {
			t.Fatalf("run %d: mosquitto_sub printed %d lines, want %d; last: %q", run, len(lines), total, lines[len(lines)-1])
		}
		for i, l := range lines {
			if l != fmt.Sprint(i) {
				t.Fatalf("run %d: line %d is %q, want %d (in order)", run, i, l, i)
			}
		}
		waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions == before })
	}
	if got := n.node.Stats().Hub.SlowConsumers; got != 0 {
		t.Fatalf("%d slow consumers, want none", got)
	}
}

// mosquitto_pub -q 2 to mosquitto_sub -q 2 with two overlapping
// subscriptions: each message arrives once [MQTT-3.3.5-1], QoS 2 end to
// end.
func TestMosquittoQoS2Overlapping(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	host, port, _ := net.SplitHostPort(n.mqttAddr())
	before := n.node.Stats().Hub.Subscriptions
	done := make(chan string, 1)
	go func() {
		out, err := exec.Command("mosquitto_sub", "-h", host, "-p", port, "-u", "d", "-P", "dev-token-bob", "-q", "2",
			"-t", "demo/general/#", "-t", topic, "-C", "3", "-W", "5", "-v").CombinedOutput()
		if err != nil {
			out = append(out, " (exit: "+err.Error()+")"...)
		}
		done <- string(out)
	}()
	waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions >= before+2 })
	for _, m := range []string{"one", "two", "three"} {
		if out, err := mosq(t, n.mqttAddr(), "mosquitto_pub", "-u", "a", "-P", "dev-token-alice", "-t", topic,
			"-q", "2", "-m", m); err != nil {
			t.Fatalf("mosquitto_pub -q 2: %v: %s", err, out)
		}
	}
	want := topic + " one\n" + topic + " two\n" + topic + " three"
	if out := <-done; strings.TrimSpace(out) != want {
		t.Fatalf("mosquitto_sub printed %q, want each message once", out)
	}
}
