package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/sessionkv"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// killRounds is how many times TestResumeOnAnotherNodeAfterAKill kills
// the node its subscriber is on; KRAKEN_KILL_ROUNDS sets another number.
const killRounds = 20

// TestResumeOnAnotherNodeAfterAKill: three nodes over a three-server NATS
// cluster with JetStream (NATS_REPLICAS=3), STORE_BACKEND=jetstream and
// resumable sessions. In each round a subscriber on node C gets messages
// 0–4 published on node B and acks 0–2, gets 5–9 and acks none, node C is
// killed (SIGKILL: no goodbye, no last save), B publishes 10–14, and the
// subscriber reconnects to node A with reconnect:true: it gets its
// subscription back and, in order, every message from 3 to 14, with
// complete:true; only already-acked messages (0–2) may come before them
// (at-least-once: the kept position is a couple of seconds behind). Node C
// is started again for the next round. 0 lost in killRounds rounds.
func TestResumeOnAnotherNodeAfterAKill(t *testing.T) {
	rounds := killRounds
	if v, err := strconv.Atoi(os.Getenv("KRAKEN_KILL_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	servers := natstest.Cluster(t, 3)
	node := func(i int, id string) *broker {
		return startBroker(t, "", "BROKER_BACKEND=nats", "NATS_URL="+servers[i].ClientURL(), "NATS_REPLICAS=3",
			"NODE_ID="+id, "STORE_BACKEND=jetstream", "STORE_DIR="+filepath.Join(t.TempDir(), "unused"),
			"RESUME_SESSIONS=true")
	}
	a, b := node(0, "node-a"), node(1, "node-b")
	nc, err := nats.Connect(servers[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store, err := sessionkv.Open(ctx, sessionkv.Config{Conn: nc, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	alice := testpeer.Dial(t, b.addr)
	alice.Auth("dev-token-alice")
	published := 0
	publish := func(topic string, n int) {
		t.Helper()
		published++
		alice.Send("type", "publish", "topic", topic, "data", n, "msgRef", fmt.Sprint(published))
		alice.ExpectFields("type", "published", "msgRef", fmt.Sprint(published))
	}
	for round := range rounds {
		c := node(2, fmt.Sprintf("node-c-%d", round))
		topic := fmt.Sprintf("demo/general/k%d", round)
		client := fmt.Sprintf("kill-%d", round)
		sub := testpeer.Dial(t, c.addr)
		sub.Auth("dev-token-bob", "clientId", client)
		sub.Send("type", "subscribe", "topic", topic)
		sub.ExpectFields("type", "subscribed", "topic", topic)
		time.Sleep(100 * time.Millisecond) // the subscription reached node B through NATS
		for n := range 10 {
			publish(topic, n)
			m := sub.ExpectFields("type", "message", "topic", topic, "data", n)
			if n <= 2 {
				sub.Send("type", "ack", "msgId", m.Map["msgId"])
			}
			if n == 4 {
				waitForRecord(t, store, resume.Identity("bob", client)) // a batch of saves went by
			}
		}
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case err := <-c.done:
			c.done <- err // for startBroker's cleanup
		case <-time.After(10 * time.Second):
			t.Fatal("node C did not die")
		}
		_ = sub.Conn.Close()
		for n := 10; n < 15; n++ {
			publish(topic, n)
		}

		back := testpeer.Dial(t, a.addr)
		ok := back.Auth("dev-token-bob", "clientId", client, "reconnect", true)
		if !strings.Contains(ok.String(), topic) {
			t.Fatalf("round %d: auth reply restores no subscription: %s", round, ok)
		}
		var got []int
		for _, f := range readReplay(t, back, topic, a.stderr) {
			n, _ := strconv.Atoi(fmt.Sprint(f.Map["data"]))
			got = append(got, n)
		}
		i := 0
		for i < len(got) && got[i] <= 2 && (i == 0 || got[i] > got[i-1]) {
			i++ // acked before: may come again
		}
		want := []int{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
		if fmt.Sprint(got[i:]) != fmt.Sprint(want) {
			t.Fatalf("round %d: replayed %v, want %v after acked ones\n%s", round, got, want, a.stderr)
		}
		_ = back.Conn.Close()
	}
}

// waitForRecord waits up to 10 s until the session store holds a live
// record of session id with a subscription.
func waitForRecord(t *testing.T, store *sessionkv.Store, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rec, ok, err := store.Load(ctx, id)
		cancel()
		if err == nil && ok && rec.Live && len(rec.Specs) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no live record of session %q within 10 s", id)
}
