package listener_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/sessionkv"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// storedCluster is an embedded NATS server with JetStream and a function
// starting a node on it with the session store and the message history
// (STORE_BACKEND=jetstream), and a store to look at the records with.
type storedCluster struct {
	t     *testing.T
	url   string
	store *sessionkv.Store
}

func newStoredCluster(t *testing.T) *storedCluster {
	ns := natstest.RunJetStream(t)
	sc := &storedCluster{t: t, url: ns.ClientURL()}
	sc.store = sc.openStore(sc.conn())
	return sc
}

func (sc *storedCluster) conn() *nats.Conn {
	nc, err := nats.Connect(sc.url)
	if err != nil {
		sc.t.Fatal(err)
	}
	sc.t.Cleanup(nc.Close)
	return nc
}

func (sc *storedCluster) openStore(nc *nats.Conn) *sessionkv.Store {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := sessionkv.Open(ctx, sessionkv.Config{Conn: nc})
	if err != nil {
		sc.t.Fatal(err)
	}
	sc.t.Cleanup(st.Close)
	return st
}

// node starts node id with the store, the history and a NATS broker,
// msgIds on, and mutate applied.
func (sc *storedCluster) node(id string, mutate ...func(*testConfig)) *node {
	t := sc.t
	nc := sc.conn()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hist, err := history.Open(ctx, history.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hist.Close)
	store := sc.openStore(nc)
	b, err := natsbroker.New(natsbroker.Config{URLs: []string{sc.url}, Node: id,
		Heartbeat: 100 * time.Millisecond, LivenessTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return startNode(t, func(c *testConfig) {
		c.Broker, c.NodeID, c.History, c.Sessions, c.RecordMessages = b, id, hist, store, true
		for _, m := range mutate {
			m(c)
		}
	})
}

// record waits up to 5 s for the stored record of id to satisfy ok, and
// returns it.
func (sc *storedCluster) record(id string, ok func(r sessionkv.Record, found bool) bool) sessionkv.Record {
	sc.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, found, err := sc.store.Load(context.Background(), id)
		if err != nil {
			sc.t.Fatal(err)
		}
		if ok(r, found) {
			return r
		}
		if time.Now().After(deadline) {
			sc.t.Fatalf("record %q: %+v (found %v), not as awaited within 5 s", id, r, found)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// mqttID is the store ID of bob's persistent session with client
// identifier id.
func mqttID(id string) string { return "mqtt\x00bob\x00" + id }

// persistentPaho connects a paho client as bob with Clean Session 0 and
// client identifier id, sending every message it gets to got, and returns
// it with its CONNACK's session present.
func persistentPaho(t *testing.T, addr, id string, got chan<- string) (paho.Client, bool) {
	t.Helper()
	opts := paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).
		SetUsername("device").SetPassword("dev-token-bob").SetCleanSession(false).
		SetAutoReconnect(false).SetConnectRetry(false).SetKeepAlive(5 * time.Second).
		SetConnectTimeout(3 * time.Second).SetProtocolVersion(4).SetOrderMatters(true).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) })
	c := paho.NewClient(opts)
	tok := c.Connect()
	wait(t, "connect", tok)
	return c, tok.(*paho.ConnectToken).SessionPresent()
}

// publishOn publishes payloads at QoS 1 on n as alice, each acknowledged.
func publishOn(t *testing.T, n *node, payloads ...string) {
	t.Helper()
	c := connected(t, n.mqttAddr(), "dev-token-alice")
	for i, p := range payloads {
		c.send(publishPkt(topic, 1, false, uint16(i+1), p))
		c.expect(0x40)
	}
}

// subscribedSession connects a raw Clean Session 0 client as bob with
// identifier id to n, subscribed to topic at QoS 1.
func subscribedSession(t *testing.T, n *node, id string) *client {
	t.Helper()
	c, _ := sessionClient(t, n, id, false)
	c.send(subscribeQoS(1, 1, topic))
	c.expect(0x90)
	return c
}

// untilInterest publishes probes on from until sub, a raw QoS 1
// subscriber on another node, gets one: the subscription's interest has
// crossed.
func untilInterest(t *testing.T, from *node, sub *client) {
	t.Helper()
	pub := connected(t, from.mqttAddr(), "dev-token-alice")
	deadline := time.Now().Add(5 * time.Second)
	for id := uint16(1); ; id++ {
		pub.send(publishPkt(topic, 1, false, id, "probe"))
		pub.expect(0x40)
		if _, body, err := sub.read(200 * time.Millisecond); err == nil {
			sub.send(ack(0x40, publishID(body)))
			drainProbes(t, sub)
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no delivery across nodes within 5 s")
		}
	}
}

// A Clean Session 0 client of node a that disconnects resumes its session
// on node z (STORE_BACKEND=jetstream): session present 1, the 10 messages
// published on z while it was away, in order, then the live ones; the
// session's record names z afterwards.
func TestStoredSessionMovesToAnotherNode(t *testing.T) {
	sc := newStoredCluster(t)
	a, z := sc.node("a"), sc.node("z")
	got := make(chan string, 100)
	c, present := persistentPaho(t, a.mqttAddr(), "meter-9", got)
	if present {
		t.Fatal("a first connect got session present 1")
	}
	wait(t, "subscribe", c.Subscribe(topic, 1, nil))
	sc.record(mqttID("meter-9"), func(r sessionkv.Record, ok bool) bool {
		return ok && r.Node == "a" && r.Live && len(r.Specs) == 1
	})
	c.Disconnect(100)
	rec := sc.record(mqttID("meter-9"), func(r sessionkv.Record, ok bool) bool { return ok && !r.Live })
	if rec.Node != "a" || len(rec.Specs) != 1 || rec.Specs[0].Pattern != topic || rec.Specs[0].QoS != 1 {
		t.Fatalf("parked record %+v", rec)
	}

	var want []string
	for i := range 10 {
		want = append(want, fmt.Sprintf("away %d", i))
	}
	publishOn(t, z, want...)

	c, present = persistentPaho(t, z.mqttAddr(), "meter-9", got)
	defer c.Disconnect(100)
	if !present {
		t.Fatal("the reconnect on node z got session present 0")
	}
	var order []string
	seen := map[string]bool{}
	for len(order) < len(want) {
		select {
		case p := <-got:
			if strings.HasPrefix(p, "away") && !seen[p] {
				seen[p] = true
				order = append(order, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("got %q of the messages published while away, want %q", order, want)
		}
	}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", order, want)
	}
	publishOn(t, z, "live")
	for {
		select {
		case p := <-got:
			if p == "live" {
				sc.record(mqttID("meter-9"), func(r sessionkv.Record, ok bool) bool {
					return ok && r.Node == "z" && r.Live && len(r.Specs) == 1
				})
				return
			}
			if !strings.HasPrefix(p, "away") { // a repeat of what came already is at-least-once
				t.Fatalf("got %q before the live message", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no live message after the replay")
		}
	}
}

// A live Clean Session 0 connection on node a is closed when a Clean
// Session 0 CONNECT with its client identifier comes to node z
// [MQTT-3.1.4-2], which resumes its session.
func TestStoredSessionTakesOverLiveConnectionOnAnotherNode(t *testing.T) {
	sc := newStoredCluster(t)
	a, z := sc.node("a"), sc.node("z")
	old := subscribedSession(t, a, "meter-3")
	sc.record(mqttID("meter-3"), func(r sessionkv.Record, ok bool) bool {
		return ok && r.Node == "a" && r.Live && len(r.Specs) == 1
	})
	c, present := sessionClient(t, z, "meter-3", false)
	if !present {
		t.Fatal("CONNACK session present 0 on node z")
	}
	old.expectClosed()
	untilInterest(t, a, c) // its subscription came along
	sc.record(mqttID("meter-3"), func(r sessionkv.Record, ok bool) bool {
		return ok && r.Node == "z" && r.Live
	})
	if a.mqtt.KeptSessions() != 0 {
		t.Fatalf("node a keeps %d sessions, want the one taken over dropped", a.mqtt.KeptSessions())
	}
}

// A Clean Session 1 CONNECT ends the identity's stored session
// [MQTT-3.1.2-6]: a Clean Session 0 CONNECT on another node then starts a
// new one (session present 0).
func TestCleanSessionEndsStoredSession(t *testing.T) {
	sc := newStoredCluster(t)
	a, z := sc.node("a"), sc.node("z")
	c := subscribedSession(t, a, "meter-4")
	c.send(pkt(0xe0)) // DISCONNECT
	sc.record(mqttID("meter-4"), func(r sessionkv.Record, ok bool) bool { return ok && !r.Live && r.Expiry > 0 })
	clean, _ := sessionClient(t, a, "meter-4", true)
	clean.send(pkt(0xe0))
	sc.record(mqttID("meter-4"), func(r sessionkv.Record, ok bool) bool {
		return !ok || !time.Now().Before(r.Expires())
	})
	if _, present := sessionClient(t, z, "meter-4", false); present {
		t.Fatal("a session ended by Clean Session 1 was resumed on another node")
	}
}

// A WebSocket resumable session and an MQTT persistent session of the
// same actor and client identifier are two records: saving one does not
// replace the other, and resuming the MQTT one on another node leaves the
// WebSocket connection alone.
func TestStoredMQTTAndWebSocketSessionsDoNotCollide(t *testing.T) {
	sc := newStoredCluster(t)
	resumable := func(c *testConfig) { c.Resume.Enabled = true }
	a, z := sc.node("a", resumable), sc.node("z", resumable)
	ws := testpeer.Dial(t, a.wsAddr())
	ws.Auth("dev-token-bob", "clientId", "same")
	ws.Send("type", "subscribe", "topic", "demo/general/ws-only", "qos", 1)
	ws.ExpectType("subscribed")
	m := subscribedSession(t, a, "same")
	sc.record(resume.Identity("bob", "same"), func(r sessionkv.Record, ok bool) bool {
		return ok && len(r.Specs) == 1 && r.Specs[0].Pattern == "demo/general/ws-only"
	})
	sc.record(mqttID("same"), func(r sessionkv.Record, ok bool) bool {
		return ok && len(r.Specs) == 1 && r.Specs[0].Pattern == topic
	})
	_ = m.c.Close()
	sc.record(mqttID("same"), func(r sessionkv.Record, ok bool) bool { return ok && !r.Live })
	if _, present := sessionClient(t, z, "same", false); !present {
		t.Fatal("the MQTT session was not resumed on node z")
	}
	time.Sleep(300 * time.Millisecond) // a takeover notice would have come by now
	ws.Send("type", "publish", "topic", "demo/general/ws-only", "data", "still here", "msgRef", "r")
	ws.ExpectType("published")
	if r := sc.record(resume.Identity("bob", "same"), func(r sessionkv.Record, ok bool) bool { return ok }); r.Node != "a" ||
		len(r.Specs) != 1 || r.Specs[0].Pattern != "demo/general/ws-only" {
		t.Fatalf("WebSocket session's record %+v", r)
	}
}

// A Clean Session 0 CONNECT whose record cannot be read (here: it does
// not decode) starts a new session (session present 0) and writes
// nothing over the record, neither while connected nor when it goes.
func TestStoredSessionUnreadableStartsNewSessionAndWritesNothing(t *testing.T) {
	sc := newStoredCluster(t)
	z := sc.node("z")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(sc.conn())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, sc.store.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	key := sessionkv.Key(mqttID("meter-5"))
	if _, err := kv.Put(ctx, key, []byte("not a record")); err != nil {
		t.Fatal(err)
	}
	c, present := sessionClient(t, z, "meter-5", false)
	if present {
		t.Fatal("session present 1 from a record that cannot be read")
	}
	c.send(subscribeQoS(1, 1, topic))
	c.expect(0x90)
	time.Sleep(1500 * time.Millisecond) // past a batch of saves
	_ = c.c.Close()
	waitFor(t, func() bool { return z.mqtt.KeptSessions() == 1 })
	time.Sleep(1500 * time.Millisecond)
	if e, err := kv.Get(ctx, key); err != nil || string(e.Value()) != "not a record" {
		t.Fatalf("the unreadable record was written over: %v", err)
	}
}

// A node's shutdown writes the persistent sessions it parks: a connected
// client's record says parked afterwards, and another node resumes it.
func TestShutdownSavesParkedMQTTSessions(t *testing.T) {
	sc := newStoredCluster(t)
	a, z := sc.node("a"), sc.node("z")
	subscribedSession(t, a, "meter-6")
	sc.record(mqttID("meter-6"), func(r sessionkv.Record, ok bool) bool { return ok && r.Live && len(r.Specs) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.node.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r, ok, err := sc.store.Load(ctx, mqttID("meter-6"))
	if err != nil || !ok || r.Live || r.Node != "a" || len(r.Specs) != 1 {
		t.Fatalf("record after the shutdown %+v (found %v, %v), want parked on a", r, ok, err)
	}
	if _, present := sessionClient(t, z, "meter-6", false); !present {
		t.Fatal("the session node a parked at its shutdown was not resumed on node z")
	}
}
