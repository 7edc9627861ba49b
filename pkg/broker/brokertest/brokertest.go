// Package brokertest is the conformance suite of the broker slot: every
// backend runs Run against its own cluster (membus in process, natsbroker on
// an embedded NATS server) and so keeps the contract of package broker.
//
// A backend's test supplies a Cluster: a way to make the broker of one more
// node on one shared bus. Single-node backends (local) run only the part of
// the suite that does not need a second node.
package brokertest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// Cluster makes clusters of a backend.
type Cluster struct {
	// New makes a new, empty cluster for test t and returns the maker of its
	// nodes: an unstarted broker for a node with the given id, on that
	// cluster's shared bus. The suite starts and closes each node.
	New func(t *testing.T) func(id string) broker.Broker
	// Single marks a single-node backend: only one node is ever made.
	Single bool
	// Settle is how long a change of interest takes to reach the bus (0 for
	// in-process buses); the suite waits that long after declaring interest.
	Settle time.Duration
	// Kill, if set, stops a started node without a goodbye, as a killed
	// process does: it sends nothing more and withdraws nothing. The suite
	// then expects the others to judge it down within LivenessTimeout (plus
	// scheduling slack) and its state to be purged. Close may be called
	// on a killed node and does nothing.
	Kill func(broker.Broker)
	// LivenessTimeout is the backend's liveness timeout as the cluster is
	// configured (0 for a bus that knows at once).
	LivenessTimeout time.Duration
	// NoSharedState skips the shared-state cases (presence, counts,
	// liveness): the cluster is configured without them (natsbroker on
	// servers without JetStream).
	NoSharedState bool
}

// Wait bounds every wait for a delivery.
const Wait = 5 * time.Second

// Run runs the suite.
func Run(t *testing.T, c Cluster) {
	t.Run("PublishAndInterestNeverBlock", func(t *testing.T) { publishNeverBlocks(t, c) })
	if c.Single {
		return
	}
	t.Run("InterestSelectsWhatANodeReceives", func(t *testing.T) { interestSelects(t, c) })
	t.Run("WildcardInterest", func(t *testing.T) { wildcardInterest(t, c) })
	t.Run("InterestIsReferenceCounted", func(t *testing.T) { refCounted(t, c) })
	t.Run("GroupGetsEachMessageOnceClusterWide", func(t *testing.T) { groupsOnce(t, c) })
	t.Run("RetainedReachesEveryNode", func(t *testing.T) { retainedEverywhere(t, c) })
	t.Run("MessageFieldsSurvive", func(t *testing.T) { fieldsSurvive(t, c) })
	if c.NoSharedState {
		return
	}
	t.Run("PresenceReachesEveryOtherNode", func(t *testing.T) { presenceReaches(t, c) })
	t.Run("PresenceUpdateAndMoveReplace", func(t *testing.T) { presenceReplaces(t, c) })
	t.Run("ClearPresenceIsGoneElsewhere", func(t *testing.T) { presenceClears(t, c) })
	t.Run("ConnectionCountsPerOrganisation", func(t *testing.T) { connectionCounts(t, c) })
	t.Run("LateNodeGetsTheCurrentState", func(t *testing.T) { lateNodeGetsState(t, c) })
	t.Run("ClosedNodeIsDownOnce", func(t *testing.T) { closedNodeDown(t, c) })
	if c.Kill != nil {
		t.Run("KilledNodeIsJudgedDownAndPurged", func(t *testing.T) { killedNodeDown(t, c) })
	}
}

// Recorder is a broker.Handler that records what a node receives.
type Recorder struct {
	mu       sync.Mutex
	messages []*broker.Message
	groups   []GroupDelivery
	retained []*broker.Message
	events   []Event
	changed  chan struct{}
}

// EventKind says which shared-state Handler method an Event records.
type EventKind int

// The shared-state Handler methods.
const (
	EventPresence     EventKind = iota + 1 // HandlePresence
	EventPresenceGone                      // HandlePresenceGone
	EventConnections                       // HandleConnections
	EventNodeDown                          // HandleNodeDown
)

// Event is one shared-state Handler call: Presence for EventPresence;
// Node and ID for EventPresenceGone; Node, Org and N for EventConnections;
// Node for EventNodeDown.
type Event struct {
	Kind     EventKind
	Presence *broker.Presence
	Node, ID string
	Org      string
	N        int
	At       time.Time // when the call was made
}

// Member names a connection cluster-wide.
type Member struct{ Node, ID string }

// OrgCount names one node's count of one organisation.
type OrgCount struct{ Node, Org string }

// GroupDelivery is one HandleGroupMessage call.
type GroupDelivery struct {
	Msg       *broker.Message
	Name, Key string
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{changed: make(chan struct{}, 1)} }

// HandleMessage implements broker.Handler.
func (r *Recorder) HandleMessage(m *broker.Message) {
	r.add(func() { r.messages = append(r.messages, m) })
}

// HandleGroupMessage implements broker.Handler.
func (r *Recorder) HandleGroupMessage(m *broker.Message, name, key string) {
	r.add(func() { r.groups = append(r.groups, GroupDelivery{m, name, key}) })
}

// HandleRetained implements broker.Handler.
func (r *Recorder) HandleRetained(m *broker.Message) {
	r.add(func() { r.retained = append(r.retained, m) })
}

// HandlePresence implements broker.Handler.
func (r *Recorder) HandlePresence(p *broker.Presence) {
	r.event(Event{Kind: EventPresence, Presence: p, Node: p.Node, ID: p.ID})
}

// HandlePresenceGone implements broker.Handler.
func (r *Recorder) HandlePresenceGone(node, id string) {
	r.event(Event{Kind: EventPresenceGone, Node: node, ID: id})
}

// HandleConnections implements broker.Handler.
func (r *Recorder) HandleConnections(node, org string, n int) {
	r.event(Event{Kind: EventConnections, Node: node, Org: org, N: n})
}

// HandleNodeDown implements broker.Handler.
func (r *Recorder) HandleNodeDown(node string) {
	r.event(Event{Kind: EventNodeDown, Node: node})
}

func (r *Recorder) event(e Event) {
	e.At = time.Now()
	r.add(func() { r.events = append(r.events, e) })
}

// Events returns a copy of the shared-state calls recorded, in order.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// State is what the recorded shared-state calls add up to, as a node
// would keep it: each member's newest presence, each node's count per
// organisation (none for 0), and a node's entries dropped on its
// HandleNodeDown.
func (r *Recorder) State() (presence map[Member]*broker.Presence, counts map[OrgCount]int) {
	presence, counts = map[Member]*broker.Presence{}, map[OrgCount]int{}
	for _, e := range r.Events() {
		switch e.Kind {
		case EventPresence:
			presence[Member{e.Node, e.ID}] = e.Presence
		case EventPresenceGone:
			delete(presence, Member{e.Node, e.ID})
		case EventConnections:
			if e.N > 0 {
				counts[OrgCount{e.Node, e.Org}] = e.N
			} else {
				delete(counts, OrgCount{e.Node, e.Org})
			}
		case EventNodeDown:
			for m := range presence {
				if m.Node == e.Node {
					delete(presence, m)
				}
			}
			for k := range counts {
				if k.Node == e.Node {
					delete(counts, k)
				}
			}
		}
	}
	return presence, counts
}

// Changed is signalled (without blocking, capacity one) after each call
// recorded.
func (r *Recorder) Changed() <-chan struct{} { return r.changed }

func (r *Recorder) add(f func()) {
	r.mu.Lock()
	f()
	r.mu.Unlock()
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// Snapshot returns copies of what was recorded.
func (r *Recorder) Snapshot() (messages []*broker.Message, groups []GroupDelivery, retained []*broker.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(messages, r.messages...), append(groups, r.groups...), append(retained, r.retained...)
}

type node struct {
	b   broker.Broker
	rec *Recorder
	id  string
}

func startNodes(t *testing.T, c Cluster, ids ...string) []node {
	t.Helper()
	ns, _ := startCluster(t, c, ids...)
	return ns
}

// startCluster starts the nodes ids on a new cluster and returns them and
// a function that starts one more node on that cluster.
func startCluster(t *testing.T, c Cluster, ids ...string) ([]node, func(id string) node) {
	t.Helper()
	newNode := c.New(t)
	more := func(id string) node {
		t.Helper()
		b := newNode(id)
		rec := NewRecorder()
		if err := b.Start(context.Background(), rec); err != nil {
			t.Fatalf("start %s: %v", id, err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return node{b, rec, id}
	}
	var out []node
	for _, id := range ids {
		out = append(out, more(id))
	}
	return out, more
}

func msg(from, key string, i int) *broker.Message {
	return &broker.Message{Key: key, Topic: key, Data: []byte{0xa1, byte('a' + i%26)}, MsgID: fmt.Sprintf("%s-%d", from, i),
		From: "alice", FromType: "actor", Timestamp: time.UnixMilli(1_796_000_000_000), Node: from}
}

// eventually polls cond until it holds or Wait passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, Wait)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quiet gives stray deliveries a moment to arrive before counting.
func quiet(c Cluster) { time.Sleep(50*time.Millisecond + c.Settle) }

func publishNeverBlocks(t *testing.T, c Cluster) {
	n := startNodes(t, c, "n1")[0]
	done := make(chan struct{})
	// Waited for below; past Wait the test has failed and the package's
	// goroutine check reports the broker's Publish that blocked it.
	go func() {
		defer close(done)
		n.b.Interest("app/a/b", false, 1)
		n.b.GroupInterest("g", "app/a/#", true, 1)
		for i := 0; i < 1000; i++ {
			_ = n.b.Publish(msg("n1", "app/a/b", i))
		}
		n.b.Interest("app/a/b", false, -1)
		n.b.GroupInterest("g", "app/a/#", true, -1)
	}()
	select {
	case <-done:
	case <-time.After(Wait):
		t.Fatal("1000 publishes did not return within 5 s")
	}
	quiet(c)
	if m, _, r := n.rec.Snapshot(); len(m) != 0 || len(r) != 0 {
		t.Fatalf("a node received %d of its own messages and %d own retained copies", len(m), len(r))
	}
}

func interestSelects(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b", "c")
	ns[1].b.Interest("app/room/x", false, 1)
	time.Sleep(c.Settle)
	_ = ns[0].b.Publish(msg("a", "app/room/x", 1))
	_ = ns[0].b.Publish(msg("a", "app/room/y", 2))
	eventually(t, "b receives x", func() bool { m, _, _ := ns[1].rec.Snapshot(); return len(m) == 1 })
	quiet(c)
	if m, _, _ := ns[1].rec.Snapshot(); len(m) != 1 || m[0].Key != "app/room/x" {
		t.Fatalf("b received %d messages, want only app/room/x", len(m))
	}
	if m, _, _ := ns[2].rec.Snapshot(); len(m) != 0 {
		t.Fatalf("c has no interest but received %d messages", len(m))
	}
	if m, _, _ := ns[0].rec.Snapshot(); len(m) != 0 {
		t.Fatalf("the publisher received %d of its own messages", len(m))
	}
}

func wildcardInterest(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b")
	ns[1].b.Interest("app/+/x", true, 1)
	ns[1].b.Interest("app/deep/#", true, 1)
	time.Sleep(c.Settle)
	for i, key := range []string{"app/r1/x", "app/r1/y", "app/deep", "app/deep/a/b", "other/r/x"} {
		_ = ns[0].b.Publish(msg("a", key, i))
	}
	eventually(t, "b receives the 3 matching keys", func() bool { m, _, _ := ns[1].rec.Snapshot(); return len(m) >= 3 })
	quiet(c)
	m, _, _ := ns[1].rec.Snapshot()
	got := map[string]int{}
	for _, x := range m {
		got[x.Key]++
	}
	want := map[string]int{"app/r1/x": 1, "app/deep": 1, "app/deep/a/b": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("b received %v, want %v (once each, even where two patterns match)", got, want)
	}
}

func refCounted(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b")
	ns[1].b.Interest("app/r/x", false, 1)
	ns[1].b.Interest("app/r/x", false, 1)
	ns[1].b.Interest("app/r/x", false, -1)
	time.Sleep(c.Settle)
	_ = ns[0].b.Publish(msg("a", "app/r/x", 1))
	eventually(t, "b still interested after one of two is gone", func() bool { m, _, _ := ns[1].rec.Snapshot(); return len(m) == 1 })
	ns[1].b.Interest("app/r/x", false, -1)
	time.Sleep(c.Settle + 50*time.Millisecond)
	_ = ns[0].b.Publish(msg("a", "app/r/x", 2))
	quiet(c)
	if m, _, _ := ns[1].rec.Snapshot(); len(m) != 1 {
		t.Fatalf("b received %d messages after its last interest went, want 1", len(m))
	}
}

func groupsOnce(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b", "c")
	for _, n := range ns {
		n.b.GroupInterest("workers", "app/jobs/#", true, 1)
	}
	ns[1].b.GroupInterest("other", "app/jobs/run", false, 1)
	time.Sleep(c.Settle)
	const total = 90
	for i := 0; i < total; i++ {
		_ = ns[0].b.Publish(msg("a", "app/jobs/run", i))
	}
	count := func() (workers, other int, per map[string]int, seen map[string]int) {
		per, seen = map[string]int{}, map[string]int{}
		for _, n := range ns {
			_, gs, _ := n.rec.Snapshot()
			for _, g := range gs {
				switch g.Name {
				case "workers":
					workers++
					per[n.id]++
					seen[g.Msg.MsgID]++
					if g.Key != "app/jobs/#" {
						t.Errorf("group delivery for key %q, want the declared app/jobs/#", g.Key)
					}
				case "other":
					other++
				}
			}
		}
		return
	}
	eventually(t, "every message to the groups", func() bool { w, o, _, _ := count(); return w >= total && o >= total })
	quiet(c)
	w, o, per, seen := count()
	if w != total || o != total {
		t.Fatalf("workers got %d and other %d deliveries of %d messages, want exactly %d each", w, o, total, total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("message %s reached the group %d times", id, n)
		}
	}
	for _, n := range ns {
		if per[n.id] == 0 {
			t.Errorf("node %s got no share of the group's %d messages: %v", n.id, total, per)
		}
	}
	for _, n := range ns {
		if m, _, _ := n.rec.Snapshot(); len(m) != 0 {
			t.Fatalf("node %s got %d broadcast copies without broadcast interest", n.id, len(m))
		}
	}
}

func retainedEverywhere(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b", "c")
	time.Sleep(c.Settle)
	m := msg("a", "app/r/state", 1)
	m.Retain = true
	_ = ns[0].b.Publish(m)
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" follows the retained publish", func() bool { _, _, r := n.rec.Snapshot(); return len(r) == 1 })
	}
	quiet(c)
	if _, _, r := ns[0].rec.Snapshot(); len(r) != 0 {
		t.Fatal("the publisher got its own retained copy")
	}
	for _, n := range ns[1:] {
		if _, _, r := n.rec.Snapshot(); len(r) != 1 || !r[0].Retain || r[0].Key != "app/r/state" {
			t.Fatalf("node %s: retained copies %v", n.id, r)
		}
	}
}

func fieldsSurvive(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b")
	ns[1].b.Interest("app/r/x", false, 1)
	time.Sleep(c.Settle)
	want := &broker.Message{Key: "app/r/x", Topic: "r/x", Filter: "color:red|size:l", Data: []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0xc4, 0x01, 0xff},
		MsgID: "3f2a0000-0000-4000-8000-000000000000", From: "alice", FromType: "actor",
		Timestamp: time.UnixMilli(1_796_000_000_123), Node: "a", ExactlyOnce: true}
	_ = ns[0].b.Publish(want)
	qos0 := &broker.Message{Key: "app/r/x", Topic: "r/x", Data: []byte{0xc0}, Node: "a", AtMostOnce: true}
	_ = ns[0].b.Publish(qos0)
	qos1 := &broker.Message{Key: "app/r/x", Topic: "r/x", Data: []byte{0xc0}, Node: "a"}
	_ = ns[0].b.Publish(qos1)
	eventually(t, "b receives", func() bool { m, _, _ := ns[1].rec.Snapshot(); return len(m) == 3 })
	m, _, _ := ns[1].rec.Snapshot()
	got := m[0]
	if got.Key != want.Key || got.Topic != want.Topic || got.Filter != want.Filter || string(got.Data) != string(want.Data) ||
		got.MsgID != want.MsgID || got.From != want.From || got.FromType != want.FromType ||
		!got.Timestamp.Equal(want.Timestamp) || got.Node != want.Node || got.Retain || got.ClearRetained ||
		got.AtMostOnce || !got.ExactlyOnce {
		t.Fatalf("received %+v, want %+v", got, want)
	}
	if !m[1].AtMostOnce || m[1].ExactlyOnce {
		t.Fatalf("QoS 0 message received as %+v", m[1])
	}
	if m[2].AtMostOnce || m[2].ExactlyOnce {
		t.Fatalf("QoS 1 message received as %+v", m[2])
	}
}
