package server

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/broker/brokertest"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker"
	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// severableDialer dials NATS and can cut every connection it made and
// refuse new ones: to the rest of the cluster, the node stops without a
// goodbye, as if its process were killed.
type severableDialer struct {
	mu     sync.Mutex
	conns  []net.Conn
	cut    bool
	dialer net.Dialer
}

func (d *severableDialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cut {
		return nil, errors.New("severed")
	}
	c, err := d.dialer.DialContext(context.Background(), network, address)
	if err == nil {
		d.conns = append(d.conns, c)
	}
	return c, err
}

func (d *severableDialer) sever() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cut = true
	for _, c := range d.conns {
		_ = c.Close()
	}
}

// Presence joined on node 0 is listed on node 2 and seen live on node 1
// and by a lobby watcher on node 2; when node 0 is cut off without a
// goodbye, its members' leaves reach node 1 and node 2 once its liveness
// expires.
func TestNATSClusterPresenceAndLobbies(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	cut := &severableDialer{}
	a, _ := natsNodeWith(t, servers, 0, func(c *testConfig) { c.Auth = presenceTokens() },
		func(bc *natsbroker.Config) { bc.Options = []nats.Option{nats.SetCustomDialer(cut)} })
	b, _ := natsNode(t, servers, 1, func(c *testConfig) { c.Auth = presenceTokens() })
	c, _ := natsNode(t, servers, 2, func(c *testConfig) { c.Auth = presenceTokens() })
	presenceAcrossNodes(t, []*Server{a, b, c}, func(int) { cut.sever() })
}

// An organisation limit of 3 connections holds across three nodes on NATS.
func TestNATSClusterConnectionLimit(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	nodes, _ := natsNodes(t, servers, func(c *testConfig) { c.Auth = limitedPresenceTokens(3) })
	connectionLimitAcrossNodes(t, nodes)
}

// stateStream is the JetStream stream of the shared state's bucket.
var stateStream = "KV_" + natsbroker.StateBucket("kraken")

// stateLeader makes the state bucket with the given replicas (a node that
// starts and closes) and returns the index of the server that leads its
// stream: with one replica, the one server that holds it.
func stateLeader(t *testing.T, servers []*natsserver.Server, replicas int) int {
	t.Helper()
	b, err := natsbroker.New(natsbroker.Config{URLs: []string{servers[0].ClientURL()}, Node: "bucket-maker",
		StateReplicas: replicas, RetainReplicas: replicas})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(t.Context(), brokertest.NewRecorder()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	leader := -1
	waitFor(t, 30*time.Second, func() bool {
		for i, s := range servers {
			if s.JetStreamIsStreamLeader(natsserver.DEFAULT_GLOBAL_ACCOUNT, stateStream) {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// observedNodes returns the log lines of the nodes started with the
// returned broker configuration, which also sets their replicas and keeps
// each on its own NATS server first (its NATS_URL's first, not a random
// one).
func observedNodes(replicas int) (*observer.ObservedLogs, func(*natsbroker.Config)) {
	core, logs := observer.New(zapcore.InfoLevel)
	return logs, func(bc *natsbroker.Config) {
		bc.StateReplicas, bc.RetainReplicas = replicas, replicas
		bc.Logger = zap.New(core).With(zap.String("node", bc.Node))
		bc.Options = append(bc.Options, nats.DontRandomize())
	}
}

// awaitFrame reads p's frames until one has the fields kv (as
// ExpectFields compares them), failing after within.
func awaitFrame(t *testing.T, p *testpeer.Peer, within time.Duration, kv ...any) testpeer.Frame {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		f, err := p.Read(time.Until(deadline))
		if err != nil {
			t.Fatalf("no frame with %v within %v: %v", kv, within, err)
		}
		match := f.Map != nil
		for i := 0; match && i+1 < len(kv); i += 2 {
			match = sameJSON(f.Map[kv[i].(string)], kv[i+1])
		}
		if match {
			return f
		}
	}
}

// failing returns the reason named name among s's failing readiness
// checks, or nil.
func failing(s *Server, name string) error {
	for _, r := range s.node.NotReady() {
		if r.Name == name {
			return r.Err
		}
	}
	return nil
}

// stateCluster is a three-server NATS cluster whose state bucket has a
// given number of replicas, server B leading its stream, with node A and
// node C on the two other servers.
type stateCluster struct {
	servers []*natsserver.Server
	b       int // the index of server B
	a, c    *Server
	logs    *observer.ObservedLogs // the nodes' log lines
	config  func(*natsbroker.Config)
}

// aroundStateLeader starts a stateCluster, its nodes on presence tokens.
func aroundStateLeader(t *testing.T, replicas int) *stateCluster {
	t.Helper()
	sc := &stateCluster{servers: natstest.Cluster(t, 3)}
	sc.b = stateLeader(t, sc.servers, replicas)
	sc.logs, sc.config = observedNodes(replicas)
	sc.a = sc.node(t, (sc.b+1)%3, "")
	sc.c = sc.node(t, (sc.b+2)%3, "")
	return sc
}

// node starts a node on server i, named id ("" for node<i>).
func (sc *stateCluster) node(t *testing.T, i int, id string) *Server {
	t.Helper()
	n, _ := natsNodeWith(t, sc.servers, i, func(cfg *testConfig) {
		cfg.Auth = presenceTokens()
		if id != "" {
			cfg.NodeID = id
		}
	}, func(bc *natsbroker.Config) {
		if id != "" {
			bc.Node = id
		}
		sc.config(bc)
	})
	return n
}

func joinOf(actor, presence string) map[string]any {
	return map[string]any{"actor_token_id": actor, "presence": presence}
}

// A NATS server of a three-server cluster stops, the one that leads the
// state bucket's stream (with one replica, the one that holds it); the
// nodes are on the two others. With three replicas the state survives: a
// join on the node of server C reaches the node of server A, a node started
// afterwards lists the members, every node stays or turns ready. With one,
// the state is gone until the server is back: the nodes warned at start
// that the cluster has more servers than replicas, and now /ready answers
// 503 with cluster_state and an error is logged; once the server is back,
// they are ready again and presence crosses again.
func TestNATSClusterStateWhenAServerStops(t *testing.T) {
	const patience = 30 * time.Second
	t.Run("ThreeReplicas", func(t *testing.T) {
		sc := aroundStateLeader(t, 3)
		servers, b, a, c, logs := sc.servers, sc.b, sc.a, sc.c, sc.logs
		bob := authed(t, a, "dev-token-bob")
		bob.Send("type", "presence", "roomId", "general", "data", "bob")
		bob.ExpectFields("type", "presence", "event", "join", "data", joinOf("bob", "bob"))

		servers[b].Shutdown()
		servers[b].WaitForShutdown()
		stopped := time.Now()
		alice := authed(t, c, "dev-token-alice")
		alice.Send("type", "presence", "roomId", "general", "data", "alice")
		awaitFrame(t, bob, patience, "type", "presence", "event", "join", "data", joinOf("alice", "alice"))
		t.Logf("a join on the node of server C reached the node of server A %v after server B (the bucket's leader) stopped",
			time.Since(stopped).Round(time.Millisecond))

		late := sc.node(t, (b+1)%3, "late")
		carol := authed(t, late, "dev-token-bob")
		waitFor(t, patience, func() bool {
			carol.Send("type", "getPresence", "roomId", "general")
			items, _ := carol.ExpectFields("type", "presenceList").Map["data"].([]any)
			return len(items) == 2
		})
		waitFor(t, patience, func() bool {
			return a.node.NotReady() == nil && c.node.NotReady() == nil && late.node.NotReady() == nil
		})
		t.Logf("a node started after server B stopped lists both members; every node ready %v after the stop",
			time.Since(stopped).Round(time.Millisecond))
		if n := logs.FilterMessageSnippet("more servers than JetStream replicas").Len(); n != 0 {
			t.Errorf("%d warnings about the replicas with three replicas on three servers", n)
		}
	})
	t.Run("OneReplica", func(t *testing.T) {
		sc := aroundStateLeader(t, 1)
		servers, b, a, c, logs := sc.servers, sc.b, sc.a, sc.c, sc.logs
		waitFor(t, patience, func() bool {
			return logs.FilterMessageSnippet("more servers than JetStream replicas").
				FilterField(zap.Int("servers", 3)).FilterField(zap.Int("state_replicas", 1)).Len() == 2
		})
		bob := authed(t, a, "dev-token-bob")
		bob.Send("type", "presence", "roomId", "general", "data", "bob")
		bob.ExpectFields("type", "presence", "event", "join", "data", joinOf("bob", "bob"))
		alice := authed(t, c, "dev-token-alice")
		alice.Send("type", "presence", "roomId", "general", "data", "alice")
		awaitFrame(t, bob, patience, "type", "presence", "event", "join", "data", joinOf("alice", "alice"))
		if a.node.NotReady() != nil || c.node.NotReady() != nil {
			t.Fatalf("not ready before the stop: %v, %v", a.node.NotReady(), c.node.NotReady())
		}
		logs.TakeAll() // from here on, the lines of the outage

		servers[b].Shutdown()
		servers[b].WaitForShutdown()
		stopped := time.Now()
		waitFor(t, patience, func() bool { return failing(a, "cluster_state") != nil && failing(c, "cluster_state") != nil })
		t.Logf("both nodes not ready %v after server B (the bucket's one replica) stopped: %v",
			time.Since(stopped).Round(time.Millisecond), failing(a, "cluster_state"))
		resp, body := httpExchange(t, a, "GET /ready HTTP/1.1\r\nHost: x\r\n\r\n")
		if resp.StatusCode != 503 || !strings.Contains(body, `"cluster_state"`) {
			t.Errorf("GET /ready: %d %s, want 503 naming cluster_state", resp.StatusCode, body)
		}
		failed := logs.FilterMessageSnippet("cluster state failing").FilterField(zap.String("node", "node"+strconv.Itoa((b+1)%3)))
		if failed.Len() == 0 || failed.All()[0].Level != zapcore.ErrorLevel {
			t.Fatalf("node A logged %d failure lines, want an error first", failed.Len())
		}
		t.Logf("logged: %s %v", failed.All()[0].Message, failed.All()[0].ContextMap())

		natstest.Restart(t, servers[b])
		restarted := time.Now()
		waitFor(t, patience, func() bool { return a.node.NotReady() == nil && c.node.NotReady() == nil })
		t.Logf("both nodes ready again %v after server B restarted", time.Since(restarted).Round(time.Millisecond))
		for _, i := range []int{(b + 1) % 3, (b + 2) % 3} {
			node := "node" + strconv.Itoa(i)
			if logs.FilterMessage("cluster state works again").FilterField(zap.String("node", node)).Len() == 0 {
				t.Errorf("%s did not log the end of the outage", node)
			}
		}
		carol := authed(t, c, "dev-token-bob")
		carol.Send("type", "presence", "roomId", "general", "data", "carol")
		awaitFrame(t, bob, patience, "type", "presence", "event", "join", "data", joinOf("bob", "carol"))
	})
}
