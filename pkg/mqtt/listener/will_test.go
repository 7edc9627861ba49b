package listener_test

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/NoLagApp/kraken/pkg/broker/membus"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

const willTopic = "demo/general/status"

// startWillClient starts `mosquitto_sub` with a will on willTopic and
// waits until it holds its subscription; the caller ends it.
func startWillClient(t *testing.T, n *node, extra ...string) *exec.Cmd {
	t.Helper()
	host, port, _ := net.SplitHostPort(n.mqttAddr())
	before := n.node.Stats().Hub.Subscriptions
	args := append([]string{"-h", host, "-p", port, "-u", "device", "-P", "dev-token-bob", "-i", "sensor-1",
		"-t", topic, "--will-topic", willTopic, "--will-payload", "sensor-1 offline", "--will-qos", "1"}, extra...)
	cmd := exec.Command("mosquitto_sub", args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitFor(t, func() bool { return n.node.Stats().Hub.Subscriptions > before })
	return cmd
}

// willWatcher is an SDK client subscribed to willTopic.
func willWatcher(t *testing.T, n *node) *testpeer.Peer {
	t.Helper()
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", willTopic)
	ws.ExpectType("subscribed")
	return ws
}

// A client killed with SIGKILL (no DISCONNECT) has its will published: an
// SDK subscriber of the will topic gets it, data the bin of the payload.
func TestWillOfAKilledClientIsPublished(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	ws := willWatcher(t, n)

	cmd := startWillClient(t, n)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	f := ws.ExpectType("message")
	if d, ok := f.Map["data"].([]byte); !ok || string(d) != "sensor-1 offline" {
		t.Fatalf("will data %#v", f.Map["data"])
	}
	if f.Map["topic"] != willTopic {
		t.Fatalf("will topic %v", f.Map["topic"])
	}
}

// A client that ends with DISCONNECT has no will published [MQTT-3.14.4-3]:
// mosquitto_sub -C 1 disconnects cleanly after its one message.
func TestNoWillAfterDisconnect(t *testing.T) {
	needMosquitto(t)
	n := startNode(t, nil)
	ws := willWatcher(t, n)

	cmd := startWillClient(t, n, "-C", "1")
	ws.Send("type", "publish", "topic", topic, "data", "bye", "echo", false)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mosquitto_sub: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("mosquitto_sub -C 1 did not end")
	}
	ws.ExpectNothing(300 * time.Millisecond)
}

// A will on a topic outside the token's grants is refused like a PUBLISH
// would be: nobody gets it. A will of a client closed for a protocol error
// is published.
func TestWillGrantsAndProtocolError(t *testing.T) {
	n := startNode(t, nil)
	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", "demo/general/#")
	ws.ExpectType("subscribed")

	m := dial(t, n.mqttAddr())
	m.send(connectWill(30, "dev-token-bob", "other/room/x", "nope"))
	m.expect(0x20)
	_ = m.c.Close()

	m = dial(t, n.mqttAddr())
	m.send(connectWill(30, "dev-token-bob", willTopic, "broken"))
	m.expect(0x20)
	m.send([]byte{0xf0, 0x00}) // reserved packet type: a protocol error
	m.expectClosed()
	f := ws.ExpectType("message")
	if d, _ := f.Map["data"].([]byte); string(d) != "broken" {
		t.Fatalf("will %#v, want the protocol-error client's (and none for the ungranted topic)", f.Map["data"])
	}
	// A client still connected when the node shuts down at the end of the
	// test has its will published during the shutdown: no crash, no
	// goroutine left (goleak in TestMain).
	m = dial(t, n.mqttAddr())
	m.send(connectWill(30, "dev-token-bob", willTopic, "shutdown"))
	m.expect(0x20)
}

// A second CONNECT with a connected client identifier closes the first
// connection [MQTT-3.1.4-2] (which publishes its will); paho's first
// client sees its connection lost. Another actor's client with the same
// identifier is not a takeover.
func TestClientIDTakeover(t *testing.T) {
	n := startNode(t, nil)
	ws := willWatcher(t, n)

	lost := make(chan error, 1)
	opts := paho.NewClientOptions().AddBroker("tcp://"+n.mqttAddr()).SetClientID("dev-1").
		SetUsername("device").SetPassword("dev-token-bob").SetCleanSession(true).
		SetAutoReconnect(false).SetConnectRetry(false).SetKeepAlive(30*time.Second).
		SetWill(willTopic, "dev-1 replaced", 1, false).
		SetConnectionLostHandler(func(_ paho.Client, err error) { lost <- err })
	first := paho.NewClient(opts)
	wait(t, "first connect", first.Connect())
	t.Cleanup(func() { first.Disconnect(0) })

	other, err := pahoClient(t, n.mqttAddr(), "dev-1", "dev-token-alice") // another actor
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		t.Fatalf("another actor's client with the same identifier closed the first: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	other.Disconnect(0)

	second, err := pahoClient(t, n.mqttAddr(), "dev-1", "dev-token-bob")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(3 * time.Second):
		t.Fatal("the first connection is still open after a takeover")
	}
	if f := ws.ExpectType("message"); string(f.Map["data"].([]byte)) != "dev-1 replaced" {
		t.Fatalf("will %#v", f.Map["data"])
	}
	// the second keeps working
	got := make(chan []byte, 1)
	wait(t, "subscribe", second.Subscribe(topic, 1, func(_ paho.Client, m paho.Message) { got <- m.Payload() }))
	ws.Send("type", "publish", "topic", topic, "data", "still here")
	select {
	case p := <-got:
		if !bytes.Equal(p, []byte("still here")) {
			t.Fatalf("payload %q", p)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the new connection got nothing")
	}
}

// The listener reports its metrics: a takeover, a will and a kept session
// are counted (kraken_mqtt_takeovers_total, kraken_mqtt_wills_total,
// kraken_mqtt_sessions_kept).
func TestMQTTMetrics(t *testing.T) {
	n := startNode(t, nil)
	first := dial(t, n.mqttAddr())
	first.send(connectWillID("m-1", "dev-token-bob"))
	first.expect(0x20)
	second, _ := sessionClient(t, n, "m-1", false) // takes over: the first's will goes out
	first.expectClosed()
	_ = second.c.Close()
	waitFor(t, func() bool { return n.mqtt.KeptSessions() == 1 })
	collect := func() map[string]float64 { return samples(t, n.mqtt) }
	var got map[string]float64
	deadline := time.Now().Add(3 * time.Second)
	for got = collect(); got["kraken_mqtt_wills_total"] != 1 && time.Now().Before(deadline); got = collect() {
		time.Sleep(5 * time.Millisecond) // the will goes out from the close callback
	}
	if got["kraken_mqtt_wills_total"] != 1 {
		t.Errorf("metrics %v, want one will", got)
	}
	for _, name := range []string{"kraken_mqtt_takeovers_total", "kraken_mqtt_sessions_kept"} {
		if got[name] != 1 {
			t.Errorf("%s = %v, want 1 (%v)", name, got[name], got)
		}
	}
	if len(got) != 4 {
		t.Fatalf("%d metrics reported, want 4", len(got))
	}
}

// A client that goes silent past its keep-alive (1 s, so 1.5 s) is closed
// by the server [MQTT-3.1.2-24], and its will is published: an SDK
// subscriber of the will topic gets it.
func TestWillOnKeepAliveExpiry(t *testing.T) {
	n := startNode(t, func(c *testConfig) { c.Hub.IdleTimeout = time.Hour }) // only the keep-alive closes it
	ws := willWatcher(t, n)
	m := dial(t, n.mqttAddr())
	m.send(connectWill(1, "dev-token-bob", willTopic, "silent"))
	m.expect(0x20)
	m.expectClosed()
	if f := ws.ExpectType("message"); string(f.Map["data"].([]byte)) != "silent" {
		t.Fatalf("will %#v", f.Map["data"])
	}
}

// A node that shuts down closes its MQTT connections without a DISCONNECT
// from them, so their wills are published [MQTT-3.1.2-8], and they reach
// the other nodes: the node's Shutdown closes its bus connection only once
// its transports' connections are closed, their wills published. A client
// with a will on node a; a subscriber of the will topic on node z gets it
// when a shuts down, on the in-memory bus and over NATS.
func TestWillOnShutdownReachesOtherNodes(t *testing.T) {
	t.Run("membus", func(t *testing.T) {
		b := &membus.Bus{}
		a := startNode(t, func(c *testConfig) { c.Broker = b.Node("a"); c.NodeID = "a" })
		z := startNode(t, func(c *testConfig) { c.Broker = b.Node("z"); c.NodeID = "z" })
		willOnShutdown(t, a, z)
	})
	t.Run("nats", func(t *testing.T) {
		node := natsNodes(t)
		willOnShutdown(t, node("a"), node("z"))
	})
}

func willOnShutdown(t *testing.T, a, z *node) {
	sub := connected(t, z.mqttAddr(), "dev-token-alice")
	sub.send(subscribeQoS(1, 1, willTopic))
	sub.expect(0x90)
	m := dial(t, a.mqttAddr())
	m.send(connectWill(30, "dev-token-bob", willTopic, "node gone"))
	m.expect(0x20)
	// Until the subscription's interest reached node a (over NATS it takes
	// a moment): a probe published on a arrives.
	probe := connected(t, a.mqttAddr(), "dev-token-bob")
	deadline := time.Now().Add(5 * time.Second)
	for {
		probe.send(publishPkt(willTopic, 0, false, 0, "probe"))
		if _, _, err := sub.read(200 * time.Millisecond); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery across nodes within 5 s")
		}
	}
	drainProbes(t, sub)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.node.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	m.expectClosed()
	if tp, p := sub.expectPublish(); tp != willTopic || string(p) != "node gone" {
		t.Fatalf("got %q %q, want the will", tp, p)
	}
}
