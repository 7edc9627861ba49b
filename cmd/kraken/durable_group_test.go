package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// durableTokens is a token file for the durable-group tests: "pub" may
// publish fast, "worker" has persistentSession (its load-balanced groups
// are durable, wire-reference.md §6.6), "plain" has not.
const durableTokens = `{"tokens": {
  "pub":    {"actorTokenId": "pub", "projectId": "p", "rateLimit": 100000,
             "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "demo-app", "app_name": "demo", "room_id": "r", "room_slug": "general"}]},
  "worker": {"actorTokenId": "worker", "projectId": "p", "persistentSession": true, "sessionExpirySeconds": 5,
             "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "demo-app", "app_name": "demo", "room_id": "r", "room_slug": "general"}]},
  "plain":  {"actorTokenId": "plain", "projectId": "p",
             "allowedTopics": [{"pattern": "demo/general/#", "permission": "pubSub", "app_id": "demo-app", "app_name": "demo", "room_id": "r", "room_slug": "general"}]}
}}`

// durableNodes starts two nodes over one NATS server with JetStream, the
// durable history on it (STORE_BACKEND=jetstream) and durableTokens.
func durableNodes(t *testing.T, env ...string) (a, b *broker) {
	t.Helper()
	srv := natstest.RunJetStream(t)
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	if err := os.WriteFile(tokens, []byte(durableTokens), 0o600); err != nil {
		t.Fatal(err)
	}
	node := func(id string) *broker {
		return startBroker(t, "", append([]string{"AUTH_FILE=" + tokens, "BROKER_BACKEND=nats", "NATS_URL=" + srv.ClientURL(),
			"NODE_ID=" + id, "STORE_BACKEND=jetstream", "STORE_DIR=" + filepath.Join(t.TempDir(), "unused")}, env...)...)
	}
	return node("node-a"), node("node-b")
}

// joinGroup connects a member of the load-balanced group "jobs" on
// demo/general/jobs to node n with token and client id id.
func joinGroup(t *testing.T, n *broker, token, id string) *testpeer.Peer {
	t.Helper()
	p := testpeer.Dial(t, n.addr)
	p.Auth(token, "clientId", id)
	p.Send("type", "subscribe", "topic", "demo/general/jobs", "loadBalance", true, "loadBalanceGroup", "jobs")
	p.ExpectFields("type", "subscribed", "topic", "demo/general/jobs")
	return p
}

// publishJobs publishes data from..to-1 on demo/general/jobs from node n,
// and returns once the last was accepted (replies come in request order).
func publishJobs(t *testing.T, n *broker, from, to int) {
	t.Helper()
	p := testpeer.Dial(t, n.addr)
	p.Auth("pub")
	for i := from; i < to; i++ {
		if i == to-1 {
			p.Send("type", "publish", "topic", "demo/general/jobs", "data", i, "msgRef", "last")
		} else {
			p.Send("type", "publish", "topic", "demo/general/jobs", "data", i)
		}
	}
	p.ExpectFields("type", "published", "msgRef", "last")
	_ = p.Conn.Close()
}

// TestDurableGroupKeepsMessagesAndHandsThemOutOnceAcrossNodes: the durable
// group "jobs" (its members' token has persistentSession) gets one member,
// which leaves; 1,000 messages are published while the group has no member
// anywhere. A member on node A then takes 10 of them without acking and
// drops. Two members, one on each node, ack everything they get: together
// they get each of the 1,000 exactly once, the 10 the first member took
// included (given back when its connection closed), the kept ones marked
// isReplay.
func TestDurableGroupKeepsMessagesAndHandsThemOutOnceAcrossNodes(t *testing.T) {
	a, b := durableNodes(t)
	first := joinGroup(t, a, "worker", "w0")
	_ = first.Conn.Close() // the group now has no member anywhere
	time.Sleep(200 * time.Millisecond)
	const total = 1000
	publishJobs(t, b, 0, total)

	taker := joinGroup(t, a, "worker", "w1")
	took := map[int]bool{}
	for len(took) < 10 {
		f := taker.ExpectType("message")
		n, _ := strconv.Atoi(fmt.Sprint(f.Map["data"]))
		if f.Map["isReplay"] != true {
			t.Fatalf("a kept message without isReplay: %s\n%s", f, a.stderr)
		}
		took[n] = true
	}
	_ = taker.Conn.Close() // never acked: given back

	var mu sync.Mutex
	got := map[int]int{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i, n := range []*broker{a, b} {
		m := joinGroup(t, n, "worker", fmt.Sprintf("w%d", i+2))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				f, err := m.Read(200 * time.Millisecond)
				if err != nil || f.Type() != "message" {
					continue
				}
				n, _ := strconv.Atoi(fmt.Sprint(f.Map["data"]))
				m.Send("type", "ack", "msgId", f.Map["msgId"])
				mu.Lock()
				got[n]++
				mu.Unlock()
			}
		}()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == total || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // a duplicate would come now
	close(done)
	wg.Wait()
	var missing, twice []int
	for i := range total {
		switch got[i] {
		case 0:
			missing = append(missing, i)
		case 1:
		default:
			twice = append(twice, i)
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		t.Fatalf("%d of %d delivered; missing %v; more than once %v\nnode A:\n%s\nnode B:\n%s",
			len(got), total, missing, twice, a.stderr, b.stderr)
	}
}

// TestDurableGroupRedeliversWhatAKilledNodeHandedOut: a member on node A
// takes 20 messages without acking, and node A is killed (SIGKILL: no
// goodbye, nothing given back). A member on node B gets all 20, marked
// isReplay, once the store's AckWait (30 s) has passed.
func TestDurableGroupRedeliversWhatAKilledNodeHandedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the store's 30 s AckWait")
	}
	a, b := durableNodes(t)
	taker := joinGroup(t, a, "worker", "wa")
	publishJobs(t, b, 0, 20)
	for range 20 {
		taker.ExpectType("message") // taken, never acked
	}
	_ = a.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case err := <-a.done:
		a.done <- err // for startBroker's cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("node A did not die")
	}
	m := joinGroup(t, b, "worker", "wb")
	got := map[int]bool{}
	deadline := time.Now().Add(45 * time.Second)
	for len(got) < 20 && time.Now().Before(deadline) {
		f, err := m.Read(time.Second)
		if err != nil {
			continue
		}
		if f.Type() != "message" || f.Map["isReplay"] != true {
			t.Fatalf("want a redelivered message with isReplay, got %s", f)
		}
		n, _ := strconv.Atoi(fmt.Sprint(f.Map["data"]))
		got[n] = true
		m.Send("type", "ack", "msgId", f.Map["msgId"])
	}
	if len(got) != 20 {
		t.Fatalf("node B's member got %d of the 20 node A had handed out: %v\n%s", len(got), got, b.stderr)
	}
}
