package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker/membus"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestTwoNodesShareMessagesThroughTheBrokerSlot: with a fan-out backend
// joining two nodes, a subscriber on one node receives a publish made on the
// other, exactly once, with the publisher's fields, while local delivery on
// the publishing node still happens once.
func TestTwoNodesShareMessagesThroughTheBrokerSlot(t *testing.T) {
	b := &membus.Bus{}
	nodeA := start(t, func(c *testConfig) { c.Broker = b.Node("a"); c.NodeID = "a" })
	nodeB := start(t, func(c *testConfig) { c.Broker = b.Node("b"); c.NodeID = "b" })

	bobOnB := authed(t, nodeB, "dev-token-bob")
	subscribe(t, bobOnB, "demo/general/+")
	carolOnA := authed(t, nodeA, "dev-token-bob")
	subscribe(t, carolOnA, "demo/general/cluster")

	alice := authed(t, nodeA, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/cluster", "data", map[string]any{"n": 1}, "filter", "x")
	local := carolOnA.ExpectFields("type", "message", "topic", "demo/general/cluster", "from", "alice")
	remote := bobOnB.ExpectFields("type", "message", "topic", "demo/general/+", "sourceTopic", "demo/general/cluster",
		"data", map[string]any{"n": 1}, "filter", "x", "from", "alice", "fromType", "actor")
	if local.Map["msgId"] != remote.Map["msgId"] || local.Map["timestamp"] != remote.Map["timestamp"] {
		t.Fatalf("the nodes disagree on the message: %s vs %s", local, remote)
	}
	bobOnB.ExpectNothing(200 * time.Millisecond)
	carolOnA.ExpectNothing(100 * time.Millisecond)
}

// cluster starts n nodes joined by one in-memory bus.
func cluster(t *testing.T, n int, mutate func(*testConfig)) []*Server {
	b := &membus.Bus{}
	var nodes []*Server
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("node%d", i)
		nodes = append(nodes, start(t, func(c *testConfig) {
			c.Broker, c.NodeID = b.Node(id), id
			if mutate != nil {
				mutate(c)
			}
		}))
	}
	return nodes
}

// A load-balanced group with a member on each of three nodes gets each
// message exactly once cluster-wide, every member a share; a broadcast
// subscriber on another node gets every message.
func TestGroupAcrossNodesGetsEachMessageOnce(t *testing.T) {
	nodes := cluster(t, 3, func(c *testConfig) { c.RateLimit = 1000 })
	var members []*testpeer.Peer
	for _, n := range nodes {
		p := authed(t, n, "dev-token-bob")
		subscribe(t, p, "demo/general/jobs", "loadBalance", true, "loadBalanceGroup", "workers")
		members = append(members, p)
	}
	watcher := authed(t, nodes[2], "dev-token-bob")
	subscribe(t, watcher, "demo/general/jobs")
	alice := authed(t, nodes[0], "dev-token-alice")
	const total = 300
	for i := 0; i < total; i++ {
		alice.Send("type", "publish", "topic", "demo/general/jobs", "data", i)
	}
	for i := 0; i < total; i++ {
		watcher.ExpectFields("type", "message", "data", i)
	}
	expectGroupOnce(t, members, total)
}

// A retained message set on one node reaches a new subscriber on another,
// and a clear from a third node removes it everywhere.
func TestRetainedAcrossNodes(t *testing.T) {
	nodes := cluster(t, 3, nil)
	alice := authed(t, nodes[0], "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/state", "data", "on", "retain", true, "msgRef", "r")
	alice.ExpectFields("type", "published", "msgRef", "r")
	bobOnC := authed(t, nodes[2], "dev-token-bob")
	waitFor(t, 2*time.Second, func() bool {
		bobOnC.Send("type", "subscribe", "topic", "demo/general/state")
		bobOnC.ExpectFields("type", "subscribed")
		f, err := bobOnC.Read(100 * time.Millisecond)
		return err == nil && f.Map["data"] == "on"
	})
	carolOnB := authed(t, nodes[1], "dev-token-alice")
	carolOnB.Send("type", "publish", "topic", "demo/general/state", "retain", true, "msgRef", "clear")
	carolOnB.ExpectFields("type", "published", "msgRef", "clear")
	bobOnC.ExpectFields("type", "message", "data", nil) // the live clear
	late := authed(t, nodes[2], "dev-token-bob")
	subscribe(t, late, "demo/general/state")
	late.ExpectNothing(200 * time.Millisecond)
}

// expectGroupOnce reads the members of one load-balanced group, a member
// per node, until total messages (data 0..total-1) arrived, and fails
// unless each arrived exactly once and every member got a share.
func expectGroupOnce(t *testing.T, members []*testpeer.Peer, total int) {
	t.Helper()
	seen := map[int64]int{}
	share := make([]int, len(members))
	for got := 0; got < total; {
		progress := false
		for i, m := range members {
			if f, err := m.Read(50 * time.Millisecond); err == nil {
				seen[asInt(t, f.Map["data"])]++
				share[i]++
				got++
				progress = true
			}
		}
		if !progress {
			t.Fatalf("the group got %d of %d messages (shares %v)", got, total, share)
		}
	}
	for i := int64(0); i < int64(total); i++ {
		if seen[i] != 1 {
			t.Fatalf("message %d reached the group %d times", i, seen[i])
		}
	}
	for i, m := range members {
		m.ExpectNothing(100 * time.Millisecond)
		if share[i] == 0 {
			t.Errorf("the member on node %d got no share: %v", i, share)
		}
	}
}
