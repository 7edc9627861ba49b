package natsbroker_test

import (
	"context"
	"fmt"
	"slices"
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

func startNode(t *testing.T, url, id string) (*natsbroker.Broker, *brokertest.Recorder) {
	t.Helper()
	b := newNode(t, url, id)
	r := brokertest.NewRecorder()
	if err := b.Start(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, r
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A publish costs one NATS message in and one out per interested other
// node: the publishing node, interested itself, gets no echo.
func TestOneNATSMessagePerInterestedOtherNode(t *testing.T) {
	s := natstest.RunServer(t, nil) // no JetStream: no KV traffic to count
	a, _ := startNode(t, s.ClientURL(), "a")
	b, rb := startNode(t, s.ClientURL(), "b")
	c, rc := startNode(t, s.ClientURL(), "c")
	d, rd := startNode(t, s.ClientURL(), "d") // not interested
	for _, n := range []*natsbroker.Broker{a, b, c} {
		n.Interest("app/r/x", false, 1)
	}
	d.Interest("app/r/other", false, 1)
	time.Sleep(200 * time.Millisecond)
	before := varz(t, s)
	const n = 100
	for i := 0; i < n; i++ {
		_ = a.Publish(&broker.Message{Key: "app/r/x", Topic: "r/x", Data: []byte{0xc0}, Node: "a", MsgID: fmt.Sprint(i)})
	}
	waitFor(t, "b and c get every publish", func() bool {
		mb, _, _ := rb.Snapshot()
		mc, _, _ := rc.Snapshot()
		return len(mb) == n && len(mc) == n
	})
	time.Sleep(100 * time.Millisecond)
	after := varz(t, s)
	in, out := after.InMsgs-before.InMsgs, after.OutMsgs-before.OutMsgs
	t.Logf("%d publishes, 2 interested other nodes: %d NATS messages in, %d out (%.2f out per publish)", n, in, out, float64(out)/n)
	if in != n || out != 2*n {
		t.Fatalf("NATS counted %d in and %d out for %d publishes to 2 interested other nodes, want %d and %d (no echo)", in, out, n, n, 2*n)
	}
	if m, _, _ := rd.Snapshot(); len(m) != 0 {
		t.Fatalf("d without interest got %d", len(m))
	}
	if st := b.Stats(); st.Duplicates != 0 {
		t.Fatalf("b dropped %d duplicates", st.Duplicates)
	}
}

// The publishing node's own members stay in the queue group: the second,
// echoing connection receives its share.
func TestPublisherIsInItsOwnQueueGroup(t *testing.T) {
	s := natstest.RunServer(t, nil)
	a, ra := startNode(t, s.ClientURL(), "a")
	b, rb := startNode(t, s.ClientURL(), "b")
	a.GroupInterest("g", "app/jobs", false, 1)
	b.GroupInterest("g", "app/jobs", false, 1)
	time.Sleep(200 * time.Millisecond)
	before := varz(t, s)
	const n = 200
	for i := 0; i < n; i++ {
		_ = a.Publish(&broker.Message{Key: "app/jobs", Topic: "jobs", Data: []byte{0xc0}, Node: "a", MsgID: fmt.Sprint(i)})
	}
	waitFor(t, "every job delivered", func() bool {
		_, ga, _ := ra.Snapshot()
		_, gb, _ := rb.Snapshot()
		return len(ga)+len(gb) >= n
	})
	time.Sleep(100 * time.Millisecond)
	_, ga, _ := ra.Snapshot()
	_, gb, _ := rb.Snapshot()
	after := varz(t, s)
	t.Logf("%d group publishes: a got %d, b got %d; NATS %d in, %d out", n, len(ga), len(gb),
		after.InMsgs-before.InMsgs, after.OutMsgs-before.OutMsgs)
	if len(ga)+len(gb) != n || len(ga) == 0 || len(gb) == 0 {
		t.Fatalf("a got %d and b %d of %d group messages, want every one once and a share each", len(ga), len(gb), n)
	}
	if out := after.OutMsgs - before.OutMsgs; out != n {
		t.Fatalf("NATS sent %d messages for %d group publishes, want %d", out, n, n)
	}
}

func varz(t *testing.T, s *natsserver.Server) *natsserver.Varz {
	t.Helper()
	v, err := s.Varz(nil)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// How long a presence change on A takes to reach B, on one embedded
// server and across the routes of a three-server cluster.
func TestPresencePropagation(t *testing.T) {
	t.Run("OneServer", func(t *testing.T) {
		s := natstest.RunJetStream(t)
		measurePropagation(t, s.ClientURL(), s.ClientURL())
	})
	t.Run("AcrossServers", func(t *testing.T) {
		servers := natstest.Cluster(t, 3)
		measurePropagation(t, servers[0].ClientURL(), servers[1].ClientURL())
	})
}

func measurePropagation(t *testing.T, urlA, urlB string) {
	a, _ := startNode(t, urlA, "a")
	_, rb := startNode(t, urlB, "b")
	const rounds = 50
	var took []time.Duration
	for i := 0; i < rounds; i++ {
		p := &broker.Presence{Node: "a", ID: "c1", RoomID: "r", RoomSlug: "r", ActorTokenID: "t", Data: []byte{0xc0}, JoinedAt: int64(i)}
		start := time.Now()
		a.SetPresence(p)
		deadline := time.After(5 * time.Second)
		for {
			ps, _ := rb.State()
			if q := ps[brokertest.Member{Node: "a", ID: "c1"}]; q != nil && q.JoinedAt == int64(i) {
				break
			}
			select {
			case <-rb.Changed():
			case <-deadline:
				t.Fatalf("round %d: b did not get the change within 5s", i)
			}
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("presence A→B over %d changes: median %v, p90 %v, max %v", rounds,
		took[rounds/2].Round(time.Microsecond), took[rounds*9/10].Round(time.Microsecond), took[rounds-1].Round(time.Microsecond))
	if took[rounds/2] > time.Second {
		t.Fatalf("median propagation %v, want well under 1 s", took[rounds/2])
	}
}

// A node that finds its keys deleted by another (judged down during a
// pause) writes them again, and a node that loses its NATS server writes
// its state again once reconnected to a new, empty one.
func TestStateIsWrittenAgain(t *testing.T) {
	t.Run("AfterADeleteByAnother", func(t *testing.T) {
		s := natstest.RunJetStream(t)
		a, _ := startNode(t, s.ClientURL(), "a")
		_, rb := startNode(t, s.ClientURL(), "b")
		p := &broker.Presence{Node: "a", ID: "c1", RoomID: "r", Data: []byte{0xc0}}
		a.SetPresence(p)
		a.SetConnections("org", 2)
		member := brokertest.Member{Node: "a", ID: "c1"}
		waitFor(t, "b has a's presence", func() bool { ps, _ := rb.State(); return ps[member] != nil })
		kv := bucket(t, s.ClientURL())
		for _, k := range []string{"p.a.c1", "n.a"} {
			if err := kv.Delete(t.Context(), k); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "a writes its keys again", func() bool {
			_, e1 := kv.Get(t.Context(), "p.a.c1")
			_, e2 := kv.Get(t.Context(), "n.a")
			return e1 == nil && e2 == nil
		})
		waitFor(t, "b has a's presence again", func() bool {
			ps, counts := rb.State()
			return ps[member] != nil && counts[brokertest.OrgCount{Node: "a", Org: "org"}] == 2
		})
		if a.Stats().Rejoins == 0 {
			t.Fatal("a did not count the rejoin")
		}
	})
	t.Run("AfterAReconnection", func(t *testing.T) {
		port := natstest.FreePort(t)
		opts := func() *natsserver.Options {
			return &natsserver.Options{Port: port, JetStream: true, StoreDir: t.TempDir()}
		}
		s := natstest.RunServer(t, opts())
		url := s.ClientURL()
		a, _ := startNode(t, url, "a")
		b, rb := startNode(t, url, "b")
		a.SetPresence(&broker.Presence{Node: "a", ID: "c1", RoomID: "r", Data: []byte{0xc0}})
		member := brokertest.Member{Node: "a", ID: "c1"}
		waitFor(t, "b has a's presence", func() bool { ps, _ := rb.State(); return ps[member] != nil })
		s.Shutdown()
		s.WaitForShutdown()
		natstest.RunServer(t, opts()) // same port, empty store
		restarted := time.Now()
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() }) // before the server stops
		_, rb2 := startNode(t, url, "c")
		kv := bucket(t, url)
		waitFor(t, "a writes its presence again into the new server", func() bool {
			_, err := kv.Get(t.Context(), "p.a.c1")
			return err == nil
		})
		t.Logf("written again %v after the restart", time.Since(restarted).Round(time.Millisecond))
		waitFor(t, "a node started after the restart gets a's presence", func() bool { ps, _ := rb2.State(); return ps[member] != nil })
		waitFor(t, "b, reconnected, holds a's presence", func() bool { ps, _ := rb.State(); return ps[member] != nil })
		waitFor(t, "both of a's connections back and counted", func() bool { return a.Ready() == nil && a.Stats().Reconnects == 2 })
	})
}

func bucket(t *testing.T, url string) jetstream.KeyValue {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	var kv jetstream.KeyValue
	waitFor(t, "the state bucket", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		kv, err = js.KeyValue(ctx, natsbroker.StateBucket("kraken"))
		return err == nil
	})
	return kv
}
