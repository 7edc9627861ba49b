package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// mqttClient connects a paho client to the MQTT listener at addr with
// client identifier id, token as its password and the Clean Session flag
// clean, sending each message it gets to got (when not nil); it returns
// the client and its CONNACK's session present.
func mqttClient(t *testing.T, addr, id, token string, clean bool, got chan<- string) (paho.Client, bool) {
	t.Helper()
	opts := paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).
		SetUsername("device").SetPassword(token).SetCleanSession(clean).
		SetAutoReconnect(false).SetConnectRetry(false).SetKeepAlive(5 * time.Second).
		SetConnectTimeout(3 * time.Second).SetProtocolVersion(4).SetOrderMatters(true)
	if got != nil {
		opts.SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) })
	}
	deadline := time.Now().Add(10 * time.Second) // the MQTT listener starts after /health answers
	for {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("MQTT listener %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := paho.NewClient(opts)
	tok := c.Connect()
	mqttWait(t, "connect", tok)
	t.Cleanup(func() { c.Disconnect(50) })
	return c, tok.(*paho.ConnectToken).SessionPresent()
}

func mqttWait(t *testing.T, what string, tok paho.Token) {
	t.Helper()
	if !tok.WaitTimeout(5 * time.Second) {
		t.Fatalf("%s: timed out", what)
	}
	if err := tok.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// next returns the next message of got, failing t after 5 s without one.
func next(t *testing.T, got <-chan string) string {
	t.Helper()
	select {
	case p := <-got:
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5 s")
		return ""
	}
}

// TestMQTTSessionAcrossARestart: with STORE_BACKEND=jetstream (the
// embedded store under STORE_DIR), a Clean Session 0 MQTT client that
// subscribed at QoS 1 disconnects; alice publishes 5 messages; the broker
// is stopped (SIGTERM in one run, SIGKILL in the other) and started again
// on the same STORE_DIR; the client connects again with Clean Session 0
// and the same client identifier: session present 1, the 5 messages in
// order (one it had already received may come first: at-least-once, its
// position is a couple of seconds behind, docs/mqtt.md), then live ones.
func TestMQTTSessionAcrossARestart(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "js")
			admin := "127.0.0.1:" + freePort(t)
			env := []string{"STORE_BACKEND=jetstream", "STORE_DIR=" + dir, "MQTT_ENABLED=true"}
			mqttAddr := "127.0.0.1:" + freePort(t)
			b := startBroker(t, "", append(env, "ADMIN_ADDR="+admin, "MQTT_PORT="+strings.Split(mqttAddr, ":")[1])...)
			got := make(chan string, 100)
			bob, present := mqttClient(t, mqttAddr, "meter-restart", "dev-token-bob", false, got)
			if present {
				t.Fatal("a first connect got session present 1")
			}
			mqttWait(t, "subscribe", bob.Subscribe("demo/general/mr", 1, nil))
			alice, _ := mqttClient(t, mqttAddr, "", "dev-token-alice", true, nil)
			publish := func(c paho.Client, i int) {
				t.Helper()
				mqttWait(t, "publish", c.Publish("demo/general/mr", 1, false, fmt.Sprintf("m%d", i)))
			}
			publish(alice, 0)
			if p := next(t, got); p != "m0" {
				t.Fatalf("got %q, want m0", p)
			}
			waitForMetric(t, admin, "kraken_resume_saved_total{result=\"ok\"}", 1) // bob's live session
			bob.Disconnect(50)
			for i := 1; i <= 5; i++ {
				publish(alice, i)
			}
			waitForMetric(t, admin, "kraken_history_stored_messages", 6)
			stopAfterSave(t, b, sig)

			mqttAddr = "127.0.0.1:" + freePort(t)
			b2 := startBroker(t, "", append(env, "MQTT_PORT="+strings.Split(mqttAddr, ":")[1])...)
			_, present = mqttClient(t, mqttAddr, "meter-restart", "dev-token-bob", false, got)
			if !present {
				t.Fatalf("the reconnect after the restart got session present 0\n%s", b2.stderr)
			}
			var order []string
			for len(order) < 5 || order[len(order)-1] != "m5" {
				order = append(order, next(t, got))
			}
			if s := strings.TrimPrefix(strings.Join(order, " "), "m0 "); s != "m1 m2 m3 m4 m5" {
				t.Fatalf("got %q, want m1 … m5 (after an optional m0)", order)
			}
			alice2, _ := mqttClient(t, mqttAddr, "", "dev-token-alice", true, nil)
			publish(alice2, 6)
			if p := next(t, got); p != "m6" {
				t.Fatalf("got %q, want the live m6", p)
			}
		})
	}
}
