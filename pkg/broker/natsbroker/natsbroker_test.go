package natsbroker_test

import (
	"fmt"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/broker/brokertest"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startBroker starts a broker with cfg, closed when the test ends, with a
// recorder of what it is handed.
func startBroker(t *testing.T, cfg natsbroker.Config) (*natsbroker.Broker, *brokertest.Recorder) {
	t.Helper()
	b, err := natsbroker.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := brokertest.NewRecorder()
	if err := b.Start(t.Context(), r); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b, r
}

// A node that starts after a retained publish gets it from JetStream, and
// a clear replaces it.
func TestRetainedSurvivesForALateNode(t *testing.T) {
	s := natstest.RunJetStream(t)
	start := func(id string) (*natsbroker.Broker, *brokertest.Recorder) {
		return startBroker(t, natsbroker.Config{URLs: []string{s.ClientURL()}, Node: id})
	}
	a, _ := start("a")
	for _, k := range []string{"app/r/one", "app/r/two", "app/r/one"} {
		_ = a.Publish(&broker.Message{Key: k, Topic: k, Data: []byte{0xa1, k[len(k)-1]}, Node: "a", Retain: true})
	}
	time.Sleep(200 * time.Millisecond)
	_, late := start("late")
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, _, r := late.Snapshot()
		if len(r) >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	_, _, r := late.Snapshot()
	keys := map[string]int{}
	for _, m := range r {
		keys[m.Key]++
	}
	if len(r) != 2 || keys["app/r/one"] != 1 || keys["app/r/two"] != 1 {
		t.Fatalf("the late node got %d retained copies %v, want the newest of each of 2 topics", len(r), keys)
	}
	// a restarted node with the same id gets its own retained messages back
	_, again := start("a")
	time.Sleep(300 * time.Millisecond)
	if _, _, r := again.Snapshot(); len(r) != 2 {
		t.Fatalf("node a restarted got %d of its own retained messages, want 2", len(r))
	}
}

// Short liveness in tests: a killed node is judged down within about
// half a second.
const (
	testHeartbeat = 100 * time.Millisecond
	testLiveness  = 500 * time.Millisecond
)

func newNode(t *testing.T, url, id string) *natsbroker.Broker {
	t.Helper()
	b, err := natsbroker.New(natsbroker.Config{URLs: []string{url}, Node: id,
		Heartbeat: testHeartbeat, LivenessTimeout: testLiveness})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestConformanceWithJetStream(t *testing.T) {
	brokertest.Run(t, brokertest.Cluster{Settle: 100 * time.Millisecond, Kill: natsbroker.Kill, LivenessTimeout: testLiveness,
		New: func(t *testing.T) func(string) broker.Broker {
			s := natstest.RunJetStream(t)
			return func(id string) broker.Broker { return newNode(t, s.ClientURL(), id) }
		}})
}

// Without JetStream on the server, publications, groups and live retained
// copies still cross; shared state stays per node.
func TestConformanceOnOneServer(t *testing.T) {
	brokertest.Run(t, brokertest.Cluster{Settle: 100 * time.Millisecond, NoSharedState: true,
		New: func(t *testing.T) func(string) broker.Broker {
			s := natstest.RunServer(t, nil)
			return func(id string) broker.Broker {
				b, err := natsbroker.New(natsbroker.Config{URLs: []string{s.ClientURL()}, Node: id})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
		}})
}

// The suite again with every node on a different server of a three-server
// cluster: interest crosses the routes.
func TestConformanceAcrossAClusterOfServers(t *testing.T) {
	brokertest.Run(t, brokertest.Cluster{Settle: 300 * time.Millisecond, Kill: natsbroker.Kill, LivenessTimeout: testLiveness,
		New: func(t *testing.T) func(string) broker.Broker {
			servers := natstest.Cluster(t, 3)
			next := 0
			return func(id string) broker.Broker {
				s := servers[next%len(servers)]
				next++
				return newNode(t, s.ClientURL(), id)
			}
		}})
}

// An exact and a wildcard interest both matching a key give one delivery.
func TestOverlappingInterestsDeliverOnce(t *testing.T) {
	s := natstest.RunServer(t, nil)
	a, _ := natsbroker.New(natsbroker.Config{URLs: []string{s.ClientURL()}, Node: "a"})
	b, _ := natsbroker.New(natsbroker.Config{URLs: []string{s.ClientURL()}, Node: "b"})
	ra, rb := brokertest.NewRecorder(), brokertest.NewRecorder()
	for _, x := range []struct {
		b *natsbroker.Broker
		r *brokertest.Recorder
	}{{a, ra}, {b, rb}} {
		if err := x.b.Start(t.Context(), x.r); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = x.b.Close() })
	}
	b.Interest("app/r/x", false, 1)
	b.Interest("app/r/+", true, 1)
	b.Interest("app/#", true, 1)
	time.Sleep(100 * time.Millisecond)
	for i := 0; i < 50; i++ {
		_ = a.Publish(&broker.Message{Key: "app/r/x", Topic: "r/x", Data: []byte{0xc0}, Node: "a", MsgID: fmt.Sprint(i)})
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, _, _ := rb.Snapshot()
		if len(m) >= 50 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	if m, _, _ := rb.Snapshot(); len(m) != 50 {
		t.Fatalf("b got %d deliveries of 50 publishes through 3 overlapping interests", len(m))
	}
	if st := b.Stats(); st.Duplicates != 100 {
		t.Fatalf("duplicates = %d, want 100 (two extra copies of each)", st.Duplicates)
	}
	if st := a.Stats(); st.Published != 50 {
		t.Fatalf("a sent %d NATS messages for 50 publishes, want 50", st.Published)
	}
}

// A node restarted under the same NODE_ID is a new source: none of its
// publishes is taken for one of its earlier run's.
func TestRestartedNodeWithTheSameIDIsHeard(t *testing.T) {
	s := natstest.RunServer(t, nil)
	rb := brokertest.NewRecorder()
	b, _ := natsbroker.New(natsbroker.Config{URLs: []string{s.ClientURL()}, Node: "b"})
	if err := b.Start(t.Context(), rb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	b.Interest("app/r/x", false, 1)
	time.Sleep(100 * time.Millisecond)
	for run, n := range []int{5, 7} {
		a, _ := natsbroker.New(natsbroker.Config{URLs: []string{s.ClientURL()}, Node: "a"})
		if err := a.Start(t.Context(), brokertest.NewRecorder()); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			_ = a.Publish(&broker.Message{Key: "app/r/x", Topic: "r/x", Data: []byte{0xc0}, Node: "a", MsgID: fmt.Sprint(run, i)})
		}
		_ = a.Close()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, _, _ := rb.Snapshot()
		if len(m) >= 12 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m, _, _ := rb.Snapshot(); len(m) != 12 {
		t.Fatalf("b heard %d of the 12 publishes of two runs of node a", len(m))
	}
}
