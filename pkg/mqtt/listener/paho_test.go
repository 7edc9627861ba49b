package listener_test

import (
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// pahoClient connects a github.com/eclipse/paho.mqtt.golang client with
// token as its password, clean session, no automatic reconnect.
func pahoClient(t *testing.T, addr, id, token string) (paho.Client, error) {
	t.Helper()
	opts := paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).
		SetUsername("device").SetPassword(token).SetCleanSession(true).
		SetAutoReconnect(false).SetConnectRetry(false).SetKeepAlive(2 * time.Second).
		SetConnectTimeout(3 * time.Second).SetProtocolVersion(4)
	c := paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(5 * time.Second) {
		return nil, errTimeout
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Disconnect(100) })
	return c, nil
}

type timeoutError struct{}

func (timeoutError) Error() string { return "timed out" }

var errTimeout = timeoutError{}

func wait(t *testing.T, what string, tok paho.Token) {
	t.Helper()
	if !tok.WaitTimeout(5 * time.Second) {
		t.Fatalf("%s: timed out", what)
	}
	if err := tok.Error(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// The paho client: one SUBSCRIBE of several filters answered by one SUBACK
// (granted 0, 0x80 for the ungranted one), QoS 1 publishes acknowledged,
// cross-transport delivery both ways, UNSUBSCRIBE removing a wildcard
// subscription, and a refused token.
func TestPahoClient(t *testing.T) {
	n := startNode(t, nil)
	if _, err := pahoClient(t, n.mqttAddr(), "bad", "wrong-token"); err == nil ||
		!strings.Contains(err.Error(), "not Authorized") {
		t.Fatalf("connect with a bad token: %v, want not authorised", err)
	}
	c, err := pahoClient(t, n.mqttAddr(), "dev", "dev-token-bob")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan paho.Message, 16)
	tok := c.SubscribeMultiple(map[string]byte{"demo/general/#": 1, "other/room": 1},
		func(_ paho.Client, m paho.Message) { got <- m })
	wait(t, "subscribe", tok)
	codes := tok.(*paho.SubscribeToken).Result()
	if codes["demo/general/#"] != 1 || codes["other/room"] != 0x80 {
		t.Fatalf("SUBACK codes %v, want demo/general/# 1 and other/room 0x80", codes)
	}

	ws := testpeer.Dial(t, n.wsAddr())
	ws.Auth("dev-token-alice")
	ws.Send("type", "subscribe", "topic", topic)
	ws.ExpectType("subscribed")
	ws.Send("type", "publish", "topic", topic, "data", "from the SDK", "echo", false)
	select {
	case m := <-got:
		if m.Topic() != topic || string(m.Payload()) != "from the SDK" || m.Qos() != 1 {
			t.Fatalf("delivery %q %q qos %d", m.Topic(), m.Payload(), m.Qos())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery to the paho client")
	}

	wait(t, "publish QoS 1", c.Publish(topic, 1, false, []byte("from paho")))
	if f := ws.ExpectType("message"); string(f.Map["data"].([]byte)) != "from paho" {
		t.Fatalf("the SDK got %s", f)
	}
	<-got // its own copy

	wait(t, "unsubscribe", c.Unsubscribe("demo/general/#"))
	ws.Send("type", "publish", "topic", topic, "data", "after", "msgRef", "r2")
	ws.ExpectType("published")
	select {
	case m := <-got:
		t.Fatalf("delivered after UNSUBSCRIBE: %q", m.Payload())
	case <-time.After(200 * time.Millisecond):
	}
	if !c.IsConnectionOpen() {
		t.Fatal("the paho client lost its connection")
	}
}

// Overlapping subscriptions with a real client: a wildcard at QoS 1 and
// the exact topic at QoS 2 both match a QoS 2 publish; paho gets one copy,
// at QoS 2, the highest of the matching subscriptions [MQTT-3.3.5-1]. The
// subscriptions have no callbacks of their own, so every delivery goes to
// the default handler once (paho would call each matching route itself).
func TestPahoOverlappingSubscriptionsOneCopyAtHighestQoS(t *testing.T) {
	n := startNode(t, nil)
	got := make(chan paho.Message, 4)
	opts := paho.NewClientOptions().AddBroker("tcp://" + n.mqttAddr()).SetClientID("paho-overlap").
		SetUsername("device").SetPassword("dev-token-bob").SetCleanSession(true).
		SetAutoReconnect(false).SetConnectRetry(false).SetKeepAlive(30 * time.Second).SetProtocolVersion(4).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { got <- m })
	c := paho.NewClient(opts)
	wait(t, "connect", c.Connect())
	defer c.Disconnect(100)
	tok := c.SubscribeMultiple(map[string]byte{"demo/general/#": 1, topic: 2}, nil)
	wait(t, "subscribe", tok)
	if codes := tok.(*paho.SubscribeToken).Result(); codes["demo/general/#"] != 1 || codes[topic] != 2 {
		t.Fatalf("SUBACK codes %v, want 1 and 2", codes)
	}

	p, err := pahoClient(t, n.mqttAddr(), "paho-overlap-pub", "dev-token-alice")
	if err != nil {
		t.Fatal(err)
	}
	wait(t, "publish QoS 2", p.Publish(topic, 2, false, []byte("once at 2")))
	select {
	case m := <-got:
		if m.Topic() != topic || string(m.Payload()) != "once at 2" || m.Qos() != 2 {
			t.Fatalf("delivery %q %q QoS %d, want QoS 2", m.Topic(), m.Payload(), m.Qos())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no delivery")
	}
	select {
	case m := <-got:
		t.Fatalf("a second copy %q QoS %d", m.Payload(), m.Qos())
	case <-time.After(300 * time.Millisecond):
	}
}
