package natsbroker_test

import (
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/brokertest"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

func TestRetainedStreamName(t *testing.T) {
	for prefix, want := range map[string]string{
		"":           "KRAKEN_RETAINED", // the default prefix, as before
		"kraken":     "KRAKEN_RETAINED",
		"eu":         "eu_RETAINED",
		"acme.prod":  "acme_prod_RETAINED",
		"a b*c>":     "a_b_c__RETAINED",
		"kraken-dev": "kraken-dev_RETAINED",
	} {
		if got := natsbroker.RetainedStream(prefix); got != want {
			t.Errorf("RetainedStream(%q) = %q, want %q", prefix, got, want)
		}
	}
}

func waitUntil(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func retainedOf(r *brokertest.Recorder, key string) int {
	_, _, ret := r.Snapshot()
	n := 0
	for _, m := range ret {
		if m.Key == key {
			n++
		}
	}
	return n
}

// Nodes that start while JetStream has no meta leader (one server of three
// up) follow retained publishes live; once a majority of servers runs they
// follow the stream, the publishing node stores its retained publish of the
// meantime in it, and a node that starts later gets it. Two nodes, each on
// its own prefix, keep their retained messages in two streams.
func TestRetainedRecoversWhenJetStreamComesUp(t *testing.T) {
	opts := natstest.ClusterOptions(t, 3)
	s0 := natstest.RunServer(t, opts[0])
	start := func(url, id, prefix string) (*natsbroker.Broker, *brokertest.Recorder) {
		return startBroker(t, natsbroker.Config{URLs: []string{url}, Node: id, Prefix: prefix,
			RetainWait: 300 * time.Millisecond, StateTimeout: 300 * time.Millisecond})
	}
	a, _ := start(s0.ClientURL(), "a", "")
	c, rc := start(s0.ClientURL(), "c", "")
	other, _ := start(s0.ClientURL(), "o", "other")
	if a.RetainedReady() || c.RetainedReady() {
		t.Fatal("RetainedReady without a JetStream meta leader")
	}
	time.Sleep(100 * time.Millisecond) // c's live subscription reaches the server
	_ = a.Publish(&broker.Message{Key: "app/r/cfg", Topic: "r/cfg", Data: []byte{0x07}, Node: "a", Retain: true})
	_ = other.Publish(&broker.Message{Key: "app/r/cfg", Topic: "r/cfg", Data: []byte{0x08}, Node: "o", Retain: true})
	waitUntil(t, 5*time.Second, "c gets a's retained publish live", func() bool { return retainedOf(rc, "app/r/cfg") >= 1 })
	if _, _, r := rc.Snapshot(); r[0].Data[0] != 0x07 {
		t.Fatalf("c got %x, want a's 07 (prefixes apart)", r[0].Data)
	}

	up := time.Now()
	natstest.RunServer(t, opts[1])
	s2 := natstest.RunServer(t, opts[2])
	t.Cleanup(func() { // the nodes close before the servers started last stop
		for _, b := range []*natsbroker.Broker{a, c, other} {
			_ = b.Close()
		}
	})
	for _, b := range []*natsbroker.Broker{a, c, other} {
		waitUntil(t, 30*time.Second, "the nodes follow the stream", b.RetainedReady)
	}
	t.Logf("the nodes followed the stream %v after a majority of the servers started", time.Since(up))
	waitUntil(t, 10*time.Second, "a stores its retained publish in the stream", func() bool { return a.Stats().Recaptured == 1 })
	waitUntil(t, 10*time.Second, "o stores its retained publish in its stream", func() bool { return other.Stats().Recaptured == 1 })

	late, rl := start(s2.ClientURL(), "late", "")
	if !late.RetainedReady() {
		t.Fatal("a node started on a healthy cluster is not RetainedReady when Start returns")
	}
	waitUntil(t, 5*time.Second, "the late node gets a's retained publish", func() bool { return retainedOf(rl, "app/r/cfg") >= 1 })
	time.Sleep(200 * time.Millisecond)
	if _, _, r := rl.Snapshot(); len(r) != 1 || r[0].Data[0] != 0x07 {
		t.Fatalf("the late node got %d retained copies (%v), want a's one", len(r), r)
	}
	if st := a.Stats(); st.Unkept != 0 {
		t.Fatalf("a: %d retained publishes not kept", st.Unkept)
	}
	// A second retained publish of a, now following the stream, needs no
	// recapture.
	_ = a.Publish(&broker.Message{Key: "app/r/cfg", Topic: "r/cfg", Data: []byte{0x09}, Node: "a", Retain: true})
	waitUntil(t, 5*time.Second, "the late node gets a's newer one", func() bool {
		_, _, r := rl.Snapshot()
		return len(r) == 2 && r[1].Data[0] == 0x09
	})
	if st := a.Stats(); st.Recaptured != 1 {
		t.Fatalf("a recaptured %d, want 1", st.Recaptured)
	}
}

// A node closed while it still retries JetStream stops at once, leaving no
// goroutine behind (TestMain checks).
func TestCloseWhileRetryingJetStream(t *testing.T) {
	opts := natstest.ClusterOptions(t, 3)
	s0 := natstest.RunServer(t, opts[0])
	b, err := natsbroker.New(natsbroker.Config{URLs: []string{s0.ClientURL()}, Node: "a",
		RetainWait: 200 * time.Millisecond, StateTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(t.Context(), brokertest.NewRecorder()); err != nil {
		t.Fatal(err)
	}
	_ = b.Publish(&broker.Message{Key: "app/r/x", Topic: "r/x", Data: []byte{0x01}, Node: "a", Retain: true})
	time.Sleep(300 * time.Millisecond)
	began := time.Now()
	_ = b.Close()
	if took := time.Since(began); took > 3*time.Second {
		t.Fatalf("Close took %v", took)
	}
}

// Nodes that follow the retained stream get retained publishes only
// through it. A retained publish made while the server holding the stream
// (one replica) is down cannot be stored: the publishing node keeps it and
// stores it once the server is back, and the other node and a node started
// later get it then.
func TestRetainedPublishWhileTheStreamIsDown(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	start := func(url, id string) (*natsbroker.Broker, *brokertest.Recorder) {
		return startBroker(t, natsbroker.Config{URLs: []string{url}, Node: id, StateTimeout: 300 * time.Millisecond})
	}
	// The first node makes the stream; the test finds the server holding it
	// and starts two nodes on the other two.
	first, _ := start(servers[0].ClientURL(), "first")
	waitUntil(t, 30*time.Second, "the first node follows the stream", first.RetainedReady)
	nc, err := nats.Connect(servers[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), natsbroker.RetainedStream(""))
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	nc.Close()
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Close()
	var holder *natsserver.Server
	var others []*natsserver.Server
	for _, s := range servers {
		if s.Name() == info.Cluster.Leader {
			holder = s
		} else {
			others = append(others, s)
		}
	}
	if holder == nil {
		t.Fatalf("no server holds the stream (leader %q)", info.Cluster.Leader)
	}
	a, _ := start(others[0].ClientURL(), "a")
	c, rc := start(others[1].ClientURL(), "c")
	for _, b := range []*natsbroker.Broker{a, c} {
		waitUntil(t, 30*time.Second, "the nodes follow the stream", b.RetainedReady)
	}

	holder.Shutdown()
	holder.WaitForShutdown()
	_ = a.Publish(&broker.Message{Key: "app/r/down", Topic: "r/down", Data: []byte{0x05}, Node: "a", Retain: true})
	time.Sleep(500 * time.Millisecond)
	natstest.Restart(t, holder)
	t.Cleanup(func() { // the nodes close before the server started last stops
		_ = a.Close()
		_ = c.Close()
	})
	waitUntil(t, 30*time.Second, "a stores its retained publish once the stream is back", func() bool { return a.Stats().Recaptured == 1 })
	waitUntil(t, 30*time.Second, "c gets a's retained publish", func() bool { return retainedOf(rc, "app/r/down") == 1 })
	_, rl := start(others[0].ClientURL(), "late")
	waitUntil(t, 5*time.Second, "a node started later gets it", func() bool { return retainedOf(rl, "app/r/down") == 1 })
	if _, _, r := rl.Snapshot(); r[0].Data[0] != 0x05 {
		t.Fatalf("the late node got %x, want 05", r[0].Data)
	}
	if st := a.Stats(); st.Unkept != 0 {
		t.Fatalf("a: %d retained publishes not kept", st.Unkept)
	}
}
