package admin_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

// cluster starts n nodes ("node-a", "node-b", ...) joined by an embedded
// NATS server with JetStream, each with drain recording what it was
// asked, and waits until each knows the others.
func cluster(t *testing.T, n int, drains []chan bool) []*testNode {
	t.Helper()
	ns := natstest.RunJetStream(t)
	nodes := make([]*testNode, n)
	brokers := make([]*natsbroker.Broker, n)
	for i := range nodes {
		id := fmt.Sprintf("node-%c", 'a'+i)
		b, err := natsbroker.New(natsbroker.Config{URLs: []string{ns.ClientURL()}, Node: id,
			Heartbeat: 100 * time.Millisecond, LivenessTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		o := nodeOptions{id: id, broker: b}
		if drains != nil {
			ch := drains[i]
			o.drain = func(exit bool) error { ch <- exit; return nil }
		}
		nodes[i], brokers[i] = startNode(t, o), b
	}
	waitFor(t, 10*time.Second, "every node knows the others", func() bool {
		for _, b := range brokers {
			if len(b.Peers()) != n-1 {
				return false
			}
		}
		return true
	})
	return nodes
}

// On a cluster, the list asked of one node covers every node and says
// which answered; a disconnect issued on node A closes a connection held
// by node C; topics add up across nodes; info lists every node; a drain
// naming another node reaches that node only.
func TestClusterWide(t *testing.T) {
	drains := []chan bool{make(chan bool, 1), make(chan bool, 1), make(chan bool, 1)}
	nodes := cluster(t, 3, drains)
	a, c := nodes[0], nodes[2]
	for _, tn := range nodes {
		p := tn.client(t, "dev-token-bob")
		p.Send("type", "subscribe", "topic", "demo/general/everywhere")
		p.ExpectType("subscribed")
	}
	aliceOnC := c.client(t, "dev-token-alice")

	page := a.connections(t, "")
	if page.Total != 4 || len(page.Connections) != 4 || len(page.Nodes) != 3 {
		t.Fatalf("cluster list: %+v", page)
	}
	for _, s := range page.Nodes {
		if !s.Answered || s.Error != "" || s.Self != (s.Node == "node-a") {
			t.Fatalf("node status %+v", s)
		}
	}
	var onC *admin.Connection
	for i, conn := range page.Connections {
		if conn.Node == "node-c" && conn.Actor == "alice" {
			onC = &page.Connections[i]
		}
	}
	if onC == nil {
		t.Fatalf("alice on node-c is not listed: %+v", page.Connections)
	}
	// Pages of one walk every node's connections once, by node then id.
	var walked []string
	for after := ""; ; {
		p := a.connections(t, "limit=1&after="+after)
		for _, conn := range p.Connections {
			walked = append(walked, fmt.Sprintf("%s/%d", conn.Node, conn.ConnID))
		}
		if p.Next == "" || len(walked) > 4 {
			break
		}
		after = p.Next
	}
	if len(walked) != 4 || !sort.StringsAreSorted(walked) || walked[0][:6] != "node-a" || walked[3][:6] != "node-c" {
		t.Fatalf("paged across the nodes: %v", walked)
	}
	if got := a.connections(t, "node=node-b"); got.Total != 1 || got.Connections[0].Node != "node-b" || len(got.Nodes) != 1 {
		t.Fatalf("node-b only: %+v", got)
	}

	var res admin.ActionResult
	if status, body := a.call(t, http.MethodPost, "/api/disconnect", map[string]any{"conn_id": onC.ConnID}); status != 400 ||
		!strings.Contains(string(body), "conn_id needs its node") {
		t.Fatalf("conn_id without its node on a cluster: %d %s, want 400", status, body)
	}
	a.post(t, "/api/disconnect", map[string]any{"conn_id": onC.ConnID, "node": "node-c", "code": 1012}, 200, &res)
	if res.Disconnected != 1 {
		t.Fatalf("disconnect on node-c from node-a: %+v", res)
	}
	if code, _ := aliceOnC.ExpectClose(); code != 1012 {
		t.Fatalf("alice on node-c closed %d, want 1012", code)
	}
	a.post(t, "/api/disconnect", map[string]any{"actor": "bob", "reason": "everywhere"}, 200, &res)
	if res.Disconnected != 3 || len(res.Nodes) != 3 {
		t.Fatalf("disconnect bob everywhere: %+v", res)
	}

	var topics admin.TopicsPage
	waitFor(t, 5*time.Second, "the closes", func() bool { return a.connections(t, "").Total == 0 })
	for _, tn := range nodes {
		p := tn.client(t, "dev-token-alice")
		p.Send("type", "subscribe", "topic", "demo/general/everywhere")
		p.ExpectType("subscribed")
	}
	a.get(t, "/api/topics", &topics)
	if len(topics.Topics) != 1 || topics.Topics[0].Subscribers != 3 || len(topics.Nodes) != 3 {
		t.Fatalf("topics across nodes: %+v", topics)
	}

	var info admin.InfoPage
	a.get(t, "/api/info", &info)
	if len(info.Info) != 3 || info.Info[0].Node != "node-a" || len(info.Info[0].Peers) != 2 || len(info.Nodes) != 3 {
		t.Fatalf("info: %+v", info)
	}

	a.post(t, "/api/drain", map[string]any{"node": "node-c", "exit": false}, http.StatusAccepted, nil)
	select {
	case exit := <-drains[2]:
		if exit {
			t.Fatal("node-c was asked to exit; want stay")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("node-c was not asked to drain")
	}
	for _, i := range []int{0, 1} {
		select {
		case <-drains[i]:
			t.Fatalf("node %d was asked to drain too", i)
		default:
		}
	}

	// A node that stops is named, not asked and not counted, rather than
	// left out of the answer.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.n.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "node-c named as down", func() bool {
		for _, s := range a.connections(t, "").Nodes {
			if s.Node == "node-c" && !s.Answered && strings.Contains(s.Error, "judged down") {
				return true
			}
		}
		return false
	})
}

// A node filter naming no live node is a 404 that says so, for lists and
// actions alike.
func TestUnknownNodeIs404(t *testing.T) {
	tn := startNode(t, nodeOptions{})
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/connections?node=nowhere", nil},
		{"GET", "/api/topics?node=nowhere", nil},
		{"POST", "/api/disconnect", map[string]any{"conn_id": 1, "node": "nowhere"}},
		{"POST", "/api/drain", map[string]any{"node": "nowhere"}},
	} {
		status, body := tn.call(t, c.method, c.path, c.body)
		if status != http.StatusNotFound || !strings.Contains(string(body), `no node \"nowhere\"`) {
			t.Errorf("%s %s: %d %s, want 404 naming the node", c.method, c.path, status, body)
		}
	}
}
