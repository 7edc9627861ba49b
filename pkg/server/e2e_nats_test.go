package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Three kraken nodes, each on its own server of a three-server embedded
// NATS cluster: one broker (BROKER_BACKEND=nats).

// natsNodes starts one kraken node per NATS server, each knowing every
// server's URL (its own first) as NATS_URL would list them.
func natsNodes(t *testing.T, servers []*natsserver.Server, mutate func(*testConfig)) ([]*Server, []*natsbroker.Broker) {
	t.Helper()
	var nodes []*Server
	var brokers []*natsbroker.Broker
	for i := range servers {
		n, b := natsNode(t, servers, i, mutate)
		nodes, brokers = append(nodes, n), append(brokers, b)
	}
	return nodes, brokers
}

// natsNode starts kraken node i on servers[i].
func natsNode(t *testing.T, servers []*natsserver.Server, i int, mutate func(*testConfig)) (*Server, *natsbroker.Broker) {
	return natsNodeWith(t, servers, i, mutate, nil)
}

// natsNodeWith is natsNode with a change to the node's broker
// configuration. Liveness is judged fast (heartbeat 100 ms, timeout 500 ms)
// so that a stopped node's leaves come within a test's patience.
func natsNodeWith(t *testing.T, servers []*natsserver.Server, i int, mutate func(*testConfig), brokerConfig func(*natsbroker.Config)) (*Server, *natsbroker.Broker) {
	t.Helper()
	own := servers[i]
	urls := []string{own.ClientURL()}
	for _, s := range servers {
		if s != own {
			urls = append(urls, s.ClientURL())
		}
	}
	id := fmt.Sprintf("node%d", i)
	bc := natsbroker.Config{URLs: urls, Node: id, Heartbeat: 100 * time.Millisecond, LivenessTimeout: 500 * time.Millisecond}
	if brokerConfig != nil {
		brokerConfig(&bc)
	}
	b, err := natsbroker.New(bc)
	if err != nil {
		t.Fatal(err)
	}
	n := start(t, func(c *testConfig) {
		c.Broker, c.NodeID = b, id
		if mutate != nil {
			mutate(c)
		}
	})
	return n, b
}

// interestSettles waits for subscriptions just made to cross the cluster's
// routes (documented as under a second; measured here in the log).
func interestSettles(t *testing.T, check func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	waitFor(t, 5*time.Second, check)
	return time.Since(began)
}

func TestNATSClusterDeliversOnceToEveryNode(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	nodes, brokers := natsNodes(t, servers, func(c *testConfig) { c.RateLimit = 1000 })
	var subs []*testpeer.Peer
	for _, n := range nodes {
		p := authed(t, n, "dev-token-bob")
		subscribe(t, p, "demo/general/+")
		subs = append(subs, p)
	}
	alice := authed(t, nodes[0], "dev-token-alice")
	// Probe until a publish on node 0 reaches every node: the interest has
	// crossed the routes.
	probe := 0
	took := interestSettles(t, func() bool {
		probe++
		alice.Send("type", "publish", "topic", "demo/general/probe", "data", probe)
		ok := true
		for _, p := range subs {
			for {
				f, err := p.Read(50 * time.Millisecond)
				if err != nil {
					ok = false
					break
				}
				if asInt(t, f.Map["data"]) == int64(probe) {
					break
				}
			}
		}
		return ok
	})
	t.Logf("a subscription on one node took effect on the others within %v", took)
	for _, p := range subs { // drain older probes
		for {
			if _, err := p.Read(100 * time.Millisecond); err != nil {
				break
			}
		}
	}
	before := brokers[0].Stats().Published
	const total = 100
	for i := 0; i < total; i++ {
		alice.Send("type", "publish", "topic", "demo/general/x", "data", i)
	}
	for node, p := range subs {
		for i := 0; i < total; i++ {
			f := p.ExpectFields("type", "message", "topic", "demo/general/+", "sourceTopic", "demo/general/x")
			if got := asInt(t, f.Map["data"]); got != int64(i) {
				t.Fatalf("node %d: message %d carries %d (lost, duplicated or reordered)", node, i, got)
			}
		}
		p.ExpectNothing(100 * time.Millisecond)
	}
	if sent := brokers[0].Stats().Published - before; sent != total {
		t.Fatalf("%d NATS messages for %d publishes, want one per publish", sent, total)
	}
}

func TestNATSClusterGroupGetsEachMessageOnce(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	nodes, _ := natsNodes(t, servers, func(c *testConfig) { c.RateLimit = 1000 })
	var members []*testpeer.Peer
	for _, n := range nodes {
		p := authed(t, n, "dev-token-bob")
		subscribe(t, p, "demo/general/jobs", "loadBalance", true, "loadBalanceGroup", "workers")
		members = append(members, p)
	}
	time.Sleep(500 * time.Millisecond) // queue interest crosses the routes
	alice := authed(t, nodes[0], "dev-token-alice")
	const total = 300
	for i := 0; i < total; i++ {
		alice.Send("type", "publish", "topic", "demo/general/jobs", "data", i)
	}
	expectGroupOnce(t, members, total)
}

// A retained publish on one node reaches the retained store of the others,
// and a clear replaces it.
//
// A node that follows the retained stream gets retained publishes only
// through it (its live subscription is gone), and one that does not yet
// follows them live and stores its own in the stream once it does (see
// natsbroker's retained.go). Start waits up to 5 s for the stream; on a
// loaded machine it may return before, and the publishing node's
// publish then reaches the stream only once that node follows it, maybe
// after this test's patience. So the test first waits for every node to
// follow the stream, the state it is about, not on the time that takes.
// A failure logs what each node and the stream hold.
func TestNATSClusterRetained(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	nodes, brokers := natsNodes(t, servers, nil)
	waitFor(t, 30*time.Second, func() bool {
		for _, b := range brokers {
			if !b.RetainedReady() {
				return false
			}
		}
		return true
	})
	t.Cleanup(func() {
		if t.Failed() {
			logRetained(t, servers[0], brokers)
		}
	})
	alice := authed(t, nodes[0], "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/state", "data", "on", "retain", true, "msgRef", "r")
	alice.ExpectFields("type", "published", "msgRef", "r")
	bobOnC := authed(t, nodes[2], "dev-token-bob")
	took := interestSettles(t, func() bool {
		bobOnC.Send("type", "subscribe", "topic", "demo/general/state")
		bobOnC.ExpectFields("type", "subscribed")
		f, err := bobOnC.Read(100 * time.Millisecond)
		return err == nil && f.Map["data"] == "on"
	})
	t.Logf("a retained message set on one node reached another within %v", took)
	carolOnB := authed(t, nodes[1], "dev-token-alice")
	carolOnB.Send("type", "publish", "topic", "demo/general/state", "retain", true, "msgRef", "clear")
	carolOnB.ExpectFields("type", "published", "msgRef", "clear")
	bobOnC.ExpectFields("type", "message", "data", nil)
	late := authed(t, nodes[2], "dev-token-bob")
	subscribe(t, late, "demo/general/state")
	late.ExpectNothing(200 * time.Millisecond)
}

// logRetained logs, for a failed retained test, whether each node follows
// the retained stream and its counts, and what the stream holds (asked
// through server).
func logRetained(t *testing.T, server *natsserver.Server, brokers []*natsbroker.Broker) {
	t.Helper()
	for i, b := range brokers {
		st := b.Stats()
		t.Logf("node%d: follows the retained stream %v; published %d, received %d, malformed %d, recaptured %d, unkept %d, reconnects %d",
			i, b.RetainedReady(), st.Published, st.Received, st.Malformed, st.Recaptured, st.Unkept, st.Reconnects)
	}
	nc, err := nats.Connect(server.ClientURL())
	if err != nil {
		t.Logf("retained stream: %v", err)
		return
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Logf("retained stream: %v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, natsbroker.RetainedStream(""))
	if err != nil {
		t.Logf("retained stream: %v", err)
		return
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Logf("retained stream: %v", err)
		return
	}
	leader := ""
	if info.Cluster != nil {
		leader = info.Cluster.Leader
	}
	t.Logf("retained stream: %d messages (sequences %d to %d), leader %q", info.State.Msgs, info.State.FirstSeq, info.State.LastSeq, leader)
}

// A NATS server of the cluster killed mid-stream: the node on it reconnects
// to another server with its subscriptions, and delivery resumes.
func TestNATSServerLossLosesNoSubscription(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	nodes, brokers := natsNodes(t, servers, func(c *testConfig) { c.RateLimit = 1000 })
	bobOnB := authed(t, nodes[1], "dev-token-bob")
	subscribe(t, bobOnB, "demo/general/live")
	alice := authed(t, nodes[0], "dev-token-alice")
	next := 0
	delivered := func() bool {
		next++
		alice.Send("type", "publish", "topic", "demo/general/live", "data", next)
		for {
			f, err := bobOnB.Read(100 * time.Millisecond)
			if err != nil {
				return false
			}
			if asInt(t, f.Map["data"]) == int64(next) {
				return true
			}
		}
	}
	waitFor(t, 5*time.Second, delivered)
	on := brokers[1].ConnectedURL()
	for _, s := range servers {
		if s.ClientURL() == on {
			s.Shutdown() // the server node 1 is connected to
		}
	}
	took := interestSettles(t, func() bool {
		return brokers[1].Stats().Reconnects > 0 && brokers[1].Ready() == nil && delivered()
	})
	t.Logf("delivery resumed %v after node 1's NATS server (%s) died; now on %s", took, on, brokers[1].ConnectedURL())
}

// A node that joins after a retained publish gets it from JetStream.
//
// Start waits up to 5 s for the node to follow the retained stream; on a
// loaded machine (go test -race ./...) a fresh cluster's JetStream can take
// longer, and the node then stores its retained publish in the stream only
// once it follows it, maybe after the late node's patience. So the test
// waits for both nodes to follow the stream (what it is about), not on
// the time that takes; the recovery itself is natsbroker's
// TestRetainedRecoversWhenJetStreamComesUp.
func TestNATSClusterRetainedForALateNode(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	a, ab := natsNode(t, servers, 0, nil)
	waitFor(t, 30*time.Second, ab.RetainedReady)
	alice := authed(t, a, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/config", "data", map[string]any{"v": 7}, "retain", true, "msgRef", "r")
	alice.ExpectFields("type", "published", "msgRef", "r")
	time.Sleep(300 * time.Millisecond)
	late, lb := natsNode(t, servers, 2, nil)
	waitFor(t, 30*time.Second, lb.RetainedReady)
	bob := authed(t, late, "dev-token-bob")
	took := interestSettles(t, func() bool {
		bob.Send("type", "subscribe", "topic", "demo/general/config")
		bob.ExpectFields("type", "subscribed")
		f, err := bob.Read(100 * time.Millisecond)
		return err == nil && sameJSON(f.Map["data"], map[string]any{"v": 7})
	})
	t.Logf("a node started after the retained publish had it %v after its first subscribe", took)
}

// `subscribed` means subscribed cluster-wide: a message published on
// another node right after the subscriber read its `subscribed` reaches
// it, every time (the node answers once NATS confirmed its new interest,
// broker.InterestWaiter). Each topic is new, so each subscribe is a first
// interest: a SUB that must reach NATS before the answer. The nodes share
// one NATS server, where the confirmation is exact; across the servers of
// a NATS cluster the servers' own route propagation comes on top
// (docs/cluster.md).
func TestNATSSubscribedMeansSubscribedClusterWide(t *testing.T) {
	server := natstest.RunJetStream(t)
	var nodes []*Server
	for i := 0; i < 3; i++ {
		b, err := natsbroker.New(natsbroker.Config{URLs: []string{server.ClientURL()}, Node: fmt.Sprintf("node%d", i),
			Heartbeat: 100 * time.Millisecond, LivenessTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, start(t, func(c *testConfig) { c.Broker, c.NodeID, c.RateLimit = b, fmt.Sprintf("node%d", i), 1000 }))
	}
	sub := authed(t, nodes[2], "dev-token-bob")
	alice := authed(t, nodes[0], "dev-token-alice")
	// The cluster's routes are up: a first subscription crosses them.
	subscribe(t, sub, "demo/general/warmup")
	interestSettles(t, func() bool {
		alice.Send("type", "publish", "topic", "demo/general/warmup", "data", 0)
		_, err := sub.Read(50 * time.Millisecond)
		return err == nil
	})
	sub.Send("type", "unsubscribe", "topic", "demo/general/warmup")
	for {
		if f, err := sub.Read(200 * time.Millisecond); err != nil || f.Type() == "unsubscribed" {
			break
		}
	}
	const total = 300
	got := 0
	for i := 0; i < total; i++ {
		topic := fmt.Sprintf("demo/general/first-%d", i)
		sub.Send("type", "subscribe", "topic", topic)
		sub.ExpectFields("type", "subscribed", "topic", topic)
		alice.Send("type", "publish", "topic", topic, "data", i)
		if f, err := sub.Read(2 * time.Second); err == nil && f.Type() == "message" && f.Map["topic"] == topic {
			got++
		}
	}
	if got != total {
		t.Fatalf("%d of %d messages published right after `subscribed` arrived", got, total)
	}
}
