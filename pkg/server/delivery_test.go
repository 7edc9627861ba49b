package server

import (
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestRetainedMessageAfterSubscribed checks §6.7 / OQ-58: a retained message
// reaches a later subscriber right after `subscribed`, with its original
// msgId, also through a wildcard, and a retained nil clears it (OQ-15).
func TestRetainedMessageAfterSubscribed(t *testing.T) {
	s := start(t, nil)
	alice := testpeer.Dial(t, s.Addr().String())
	alice.Auth("dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/state", "data", "v1", "retain", true, "msgRef", "r1")
	alice.ExpectFields("type", "published", "msgRef", "r1")
	alice.Send("type", "publish", "topic", "demo/general/state", "data", "v2", "retain", true, "msgRef", "r2")
	alice.ExpectFields("type", "published", "msgRef", "r2")

	bob := testpeer.Dial(t, s.Addr().String())
	bob.Auth("dev-token-bob")
	bob.Send("type", "subscribe", "topic", "demo/general/state")
	bob.ExpectFields("type", "subscribed", "topic", "demo/general/state")
	first := bob.ExpectFields("type", "message", "topic", "demo/general/state", "data", "v2")

	bob.Send("type", "subscribe", "topic", "demo/general/+")
	bob.ExpectFields("type", "subscribed", "topic", "demo/general/+")
	again := bob.ExpectFields("type", "message", "topic", "demo/general/+", "data", "v2", "sourceTopic", "demo/general/state")
	if first.Map["msgId"] != again.Map["msgId"] {
		t.Fatalf("retained msgId changed: %v then %v", first.Map["msgId"], again.Map["msgId"])
	}

	alice.Send("type", "publish", "topic", "demo/general/state", "retain", true, "msgRef", "clear")
	alice.ExpectFields("type", "published", "msgRef", "clear")
	bob.ExpectFields("type", "message", "data", nil)
	bob.ExpectFields("type", "message", "data", nil)

	carol := testpeer.Dial(t, s.Addr().String())
	carol.Auth("dev-token-bob")
	carol.Send("type", "subscribe", "topic", "demo/general/state")
	carol.ExpectFields("type", "subscribed")
	carol.ExpectNothing(200 * time.Millisecond)
}

// TestLoadBalancedRoundRobin checks §6.8 / OQ-34: 30 messages over a group of
// 3 give each member exactly 10, while a broadcast subscriber gets all 30.
func TestLoadBalancedRoundRobin(t *testing.T) {
	s := start(t, func(c *testConfig) { c.RateLimit = 1000 })
	addr := s.Addr().String()
	var members []*testpeer.Peer
	for i := 0; i < 3; i++ {
		p := testpeer.Dial(t, addr)
		p.Auth("dev-token-bob")
		p.Send("type", "subscribe", "topic", "demo/general/jobs", "loadBalance", true, "loadBalanceGroup", "workers/a")
		p.ExpectFields("type", "subscribed", "loadBalance", true)
		members = append(members, p)
	}
	watcher := testpeer.Dial(t, addr)
	watcher.Auth("dev-token-bob")
	watcher.Send("type", "subscribe", "topic", "demo/general/jobs")
	watcher.ExpectFields("type", "subscribed", "loadBalance", false)

	alice := testpeer.Dial(t, addr)
	alice.Auth("dev-token-alice")
	for i := 0; i < 30; i++ {
		alice.Send("type", "publish", "topic", "demo/general/jobs", "data", i)
	}
	seen := map[int64]int{}
	for _, m := range members {
		for j := 0; j < 10; j++ {
			f := m.ExpectFields("type", "message", "topic", "demo/general/jobs")
			seen[f.Map["data"].(int64)]++
		}
		m.ExpectNothing(100 * time.Millisecond)
	}
	for i := int64(0); i < 30; i++ {
		if seen[i] != 1 {
			t.Fatalf("message %d delivered %d times to the group", i, seen[i])
		}
		watcher.ExpectFields("type", "message", "data", i)
	}
}

// TestFilteredSubscriptions checks §6.9, OQ-2 and OQ-3: a filtered subscriber
// gets only its values, an unfiltered one gets everything, and `filter`
// carries the published value.
func TestFilteredSubscriptions(t *testing.T) {
	s := start(t, nil)
	addr := s.Addr().String()
	filtered := testpeer.Dial(t, addr)
	filtered.Auth("dev-token-bob")
	filtered.Send("type", "subscribe", "topic", "demo/general/feed", "filters", []any{"alice", []any{"Size:Large", "color:red"}})
	filtered.ExpectFields("type", "subscribed")
	all := testpeer.Dial(t, addr)
	all.Auth("dev-token-bob")
	all.Send("type", "subscribe", "topic", "demo/general/feed")
	all.ExpectFields("type", "subscribed")

	alice := testpeer.Dial(t, addr)
	alice.Auth("dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/feed", "data", 1, "filter", "bob")
	alice.Send("type", "publish", "topic", "demo/general/feed", "data", 2, "filters", []any{"color:RED", "size:large"})
	alice.Send("type", "publish", "topic", "demo/general/feed", "data", 3)
	alice.Send("type", "publish", "topic", "demo/general/feed", "data", 4, "filter", "alice")

	filtered.ExpectFields("data", 2, "filter", "color:red|size:large")
	filtered.ExpectFields("data", 4, "filter", "alice")
	filtered.ExpectNothing(100 * time.Millisecond)
	all.ExpectFields("data", 1, "filter", "bob")
	all.ExpectFields("data", 2)
	f := all.ExpectFields("data", 3)
	if _, ok := f.Map["filter"]; ok {
		t.Fatalf("unfiltered publish carries a filter: %s", f)
	}
	all.ExpectFields("data", 4)

	alice.Send("type", "publish", "topic", "demo/general/feed", "data", 5, "filter", "a/b", "msgRef", "x")
	alice.ExpectFields("type", "error", "code", 42960, "error", "invalid_filter", "msgRef", "x")

	filtered.Send("type", "setFilters", "topic", "demo/general/feed", "filters", []any{"bob"})
	filtered.ExpectFields("type", "filtersUpdated", "filters", []any{"bob"})
	filtered.Send("type", "setFilters", "topic", "demo/general/nope", "filters", []any{"bob"})
	filtered.ExpectFields("type", "error", "error", "not_subscribed", "topic", "demo/general/nope")
	filtered.Send("type", "subscribe", "topic", "demo/general/feed", "filters", []any{"a|b"})
	filtered.ExpectFields("type", "error", "error", "invalid_filter_chars (/, #, +, | not allowed)")
	alice.Send("type", "publish", "topic", "demo/general/feed", "data", 6, "filter", "bob")
	filtered.ExpectFields("data", 6, "filter", "bob")
}

// TestConcurrentSubscribePublishClose races subscribe, unsubscribe,
// load-balanced subscribe, retained publish and close on one topic from
// many connections (run under -race); afterwards every table is empty.
func TestConcurrentSubscribePublishClose(t *testing.T) {
	s := start(t, func(c *testConfig) { c.RateLimit = 100000 })
	addr := s.Addr().String()
	done := make(chan struct{})
	for g := 0; g < 8; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			for round := 0; round < 5; round++ {
				p := testpeer.Dial(t, addr)
				p.Auth("dev-token-bob")
				for i := 0; i < 20; i++ {
					switch (g + i) % 4 {
					case 0:
						p.Send("type", "subscribe", "topic", "demo/general/race")
					case 1:
						p.Send("type", "subscribe", "topic", "demo/general/race", "loadBalance", true)
					case 2:
						p.Send("type", "unsubscribe", "topic", "demo/general/race")
					case 3:
						p.Send("type", "publish", "topic", "demo/general/race", "data", i, "retain", i%2 == 0)
					}
				}
				_ = p.Conn.Close()
			}
		}(g)
	}
	for g := 0; g < 8; g++ {
		<-done
	}
	waitFor(t, 10*time.Second, func() bool {
		st := s.hub.Stats()
		return st.Connections == 0 && st.Subscriptions == 0 && st.Groups == 0
	})
}
