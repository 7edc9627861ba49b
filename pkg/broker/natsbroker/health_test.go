package natsbroker

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

// The first failure of an outage is logged at once, the next ones at most
// once per interval with the count of those not logged; readiness names
// what fails until every part works again, which is logged once; nothing
// is recorded once closing.
func TestStateHealthLogsOncePerIntervalAndClears(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := newStateHealth(zap.New(core), "kraken_STATE", 1)
	h.every = time.Hour
	failing := func() []observer.LoggedEntry { return logs.FilterMessageSnippet("cluster state failing").All() }
	noStream := errors.New("nats: no response from stream")

	if err := h.err(); err != nil {
		t.Fatalf("healthy: %v", err)
	}
	h.fail(partWrite, "bucket", errors.New("context deadline exceeded"))
	if l := failing(); len(l) != 1 || l[0].Level != zapcore.WarnLevel {
		t.Fatalf("a failure before the state ever worked: %v, want one warning", l)
	}
	h.ok(partWrite)
	if n := logs.FilterMessage("cluster state works again").Len(); n != 1 {
		t.Fatalf("the end of the start's outage logged %d times", n)
	}
	logs.TakeAll()
	h.ok(partWrite) // nothing failing: no line
	for range 5 {
		h.fail(partWrite, "heartbeat", noStream)
	}
	if n := len(failing()); n != 1 {
		t.Fatalf("%d lines for 5 failures within the interval, want 1", n)
	}
	first := failing()[0]
	if first.Level != zapcore.ErrorLevel || first.ContextMap()["op"] != "heartbeat" || first.ContextMap()["suppressed"] != int64(0) {
		t.Errorf("first line %s %v", first.Level, first.ContextMap())
	}
	err := h.err()
	if err == nil || !strings.Contains(err.Error(), "write (heartbeat): nats: no response from stream") ||
		!strings.Contains(err.Error(), "kraken_STATE has 1 replica") {
		t.Fatalf("reason %v", err)
	}

	h.every = 0 // the interval has passed
	h.fail(partWatch, "watch", errWatchEnded)
	lines := failing()
	if len(lines) != 2 || lines[1].ContextMap()["suppressed"] != int64(4) || lines[1].ContextMap()["part"] != "watch" {
		t.Fatalf("after the interval: %d lines, the last %v; want 2, with 4 suppressed", len(lines), lines[len(lines)-1].ContextMap())
	}
	h.ok(partWrite)
	if err := h.err(); err == nil || strings.Contains(err.Error(), "write") || !strings.Contains(err.Error(), "watch (watch)") {
		t.Fatalf("the watch still fails: %v", err)
	}
	if n := logs.FilterMessage("cluster state works again").Len(); n != 0 {
		t.Fatalf("logged the end while the watch fails")
	}
	h.ok(partWatch)
	if err := h.err(); err != nil {
		t.Fatalf("every part works: %v", err)
	}
	again := logs.FilterMessage("cluster state works again").All()
	if len(again) != 1 || again[0].ContextMap()["failures"] != int64(6) {
		t.Fatalf("end of the outage: %v", again)
	}

	h.every = time.Hour
	h.fail(partWrite, "put", noStream)
	if n := len(failing()); n != 3 {
		t.Fatalf("a new outage's first failure: %d lines, want 3", n)
	}
	h.ok(partWrite)
	h.close()
	h.fail(partWrite, "put", noStream)
	if n := len(failing()); n != 3 || h.err() != nil {
		t.Fatalf("a failure while closing: %d lines, reason %v", n, h.err())
	}
}

// The cluster's size as a node estimates it, however NATS_URL names its
// servers: all of them, one, or by host name where the servers announce
// addresses; one for a server in no cluster.
func TestClusterServers(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	var all []string
	for _, s := range servers {
		all = append(all, s.ClientURL())
	}
	byName := strings.Replace(servers[1].ClientURL(), "127.0.0.1", "localhost", 1)
	for _, c := range []struct {
		name, urls string
		want       int
	}{
		{"every server", strings.Join(all, ","), 3},
		{"one server", all[2], 3},
		{"a host name", byName, 3},
		{"a host name and an address", byName + "," + all[0], 3},
	} {
		nc, err := nats.Connect(c.urls)
		if err != nil {
			t.Fatal(err)
		}
		if got := clusterServers(nc); got != c.want {
			t.Errorf("%s (%s): %d servers, want %d (pool %v, discovered %v)", c.name, c.urls, got, c.want,
				nc.Servers(), nc.DiscoveredServers())
		}
		nc.Close()
	}
	single := natstest.RunServer(t, nil)
	nc, err := nats.Connect(single.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := clusterServers(nc); got != 1 {
		t.Errorf("a server in no cluster: %d servers, want 1", got)
	}
}
