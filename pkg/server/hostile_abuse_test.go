package server

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Abuse of the protocol: subscription caps and churn,
// oversized topics.

func TestHostileSubscribeOverTheCapGetsTooManySubscriptions(t *testing.T) {
	s := start(t, func(c *testConfig) { c.Hub.MaxSubscriptions = 3 })
	p := authed(t, s, "dev-token-alice")
	for _, topic := range []string{"demo/general/a", "demo/general/b", "demo/general/+"} {
		subscribe(t, p, topic)
	}
	p.Send("type", "subscribe", "topic", "demo/general/d")
	p.ExpectFields("type", "error", "error", "too_many_subscriptions", "topic", "demo/general/d")
	expectPong(t, p)
	if n := s.hub.Stats().Subscriptions; n != 3 {
		t.Fatalf("%d subscriptions, want 3", n)
	}
}

func TestHostileResubscribingAnExistingPatternAtTheCapStillWorks(t *testing.T) {
	s := start(t, func(c *testConfig) { c.Hub.MaxSubscriptions = 2 })
	p := authed(t, s, "dev-token-alice")
	subscribe(t, p, "demo/general/a")
	subscribe(t, p, "demo/general/b")
	// Re-subscribing replaces the subscription (here switching it to a
	// load-balanced one): it does not take a new slot.
	p.Send("type", "subscribe", "topic", "demo/general/a", "loadBalance", true)
	p.ExpectFields("type", "subscribed", "topic", "demo/general/a", "loadBalance", true)
	p.Send("type", "publish", "topic", "demo/general/a", "data", "still routed")
	p.ExpectFields("type", "message", "topic", "demo/general/a", "data", "still routed")
	if n := s.hub.Stats().Subscriptions; n != 2 {
		t.Fatalf("%d subscriptions, want 2", n)
	}
}

func TestHostileUnsubscribingAtTheCapFreesASlot(t *testing.T) {
	s := start(t, func(c *testConfig) { c.Hub.MaxSubscriptions = 1 })
	p := authed(t, s, "dev-token-alice")
	subscribe(t, p, "demo/general/a")
	p.Send("type", "subscribe", "topic", "demo/general/b")
	p.ExpectFields("type", "error", "error", "too_many_subscriptions", "topic", "demo/general/b")
	p.Send("type", "unsubscribe", "topic", "demo/general/a")
	p.ExpectFields("type", "unsubscribed", "topic", "demo/general/a")
	subscribe(t, p, "demo/general/b")
}

func TestHostileThousandsOfSubscriptionsStopAtTheDefaultCapOf1000(t *testing.T) {
	const sent = 1500
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	var burst []byte
	for i := 0; i < sent; i++ {
		burst = append(burst, binFrame("type", "subscribe", "topic", "demo/general/many/"+itoa(i))...)
	}
	p.SendRaw(burst)
	for i := 0; i < sent; i++ {
		topic := "demo/general/many/" + itoa(i)
		if i < 1000 {
			p.ExpectFields("type", "subscribed", "topic", topic)
			continue
		}
		p.ExpectFields("type", "error", "error", "too_many_subscriptions", "topic", topic)
	}
	if n := s.hub.Stats().Subscriptions; n != 1000 {
		t.Fatalf("%d subscriptions, want 1000", n)
	}
	_ = p.Conn.Close()
	waitFor(t, 5*time.Second, func() bool { return s.hub.Stats().Subscriptions == 0 })
}

// churn runs n subscribe/unsubscribe cycles on p, pipelined in batches, over
// exact and wildcard patterns that are all distinct.
func churn(t *testing.T, p *testpeer.Peer, from, n int) {
	t.Helper()
	const batch = 250
	for i := from; i < from+n; i += batch {
		var b []byte
		var topics []string
		for j := i; j < min(i+batch, from+n); j++ {
			topic := "demo/general/churn/" + itoa(j)
			if j%2 == 1 {
				topic += "/+/#"
			}
			topics = append(topics, topic)
			b = append(b, binFrame("type", "subscribe", "topic", topic)...)
			b = append(b, binFrame("type", "unsubscribe", "topic", topic)...)
		}
		p.SendRaw(b)
		for _, topic := range topics {
			p.ExpectFields("type", "subscribed", "topic", topic)
			p.ExpectFields("type", "unsubscribed", "topic", topic)
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestHostileSubscribeUnsubscribeChurnLeavesNothingBehind(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	churn(t, p, 0, 1000) // warm up pools and maps
	before := heapInUse()
	churn(t, p, 1000, 10_000)
	after := heapInUse()
	t.Logf("heap after warm-up %d bytes, after 10,000 cycles %d bytes", before, after)
	st := s.hub.Stats()
	if st.Subscriptions != 0 || st.Groups != 0 {
		t.Fatalf("after churn: %d subscriptions, %d groups, want 0", st.Subscriptions, st.Groups)
	}
	// Measured noise is under 100 KiB; 5,000 leaked routing-map entries
	// alone would cost about 600 KiB.
	if after > before && after-before > 256<<10 {
		t.Fatalf("heap grew by %d bytes over 10,000 cycles", after-before)
	}
	subscribe(t, p, "demo/general/churn/after") // the connection is still usable
}

func TestHostileTopicOver1024BytesIsInvalidTopic(t *testing.T) {
	for _, size := range []int{1025, 500_000} {
		t.Run(itoa(size), func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			topic := "demo/general/" + strings.Repeat("x", size-len("demo/general/"))
			p.Send("type", "subscribe", "topic", topic)
			// The echo is cut to 1024 bytes ("…" at the end): docs/protocol.md, "Topics".
			p.ExpectFields("type", "error", "error", "invalid_topic", "topic", wire.Echo(topic), "detail", "topic: topic too long")
			p.Send("type", "publish", "topic", topic, "data", "x", "msgRef", "long")
			p.ExpectFields("type", "error", "error", "invalid_topic", "topic", wire.Echo(topic), "msgRef", "long")
			expectPong(t, p)
		})
	}
}

func TestHostileTopicWith5000LevelsIsInvalidTopic(t *testing.T) {
	for _, tt := range []struct{ name, topic string }{
		{name: "plain levels", topic: "demo/general" + strings.Repeat("/a", 4998)},
		{name: "wildcard levels", topic: "demo/general" + strings.Repeat("/+", 4998)},
		{name: "empty levels", topic: "demo/general" + strings.Repeat("/", 4998)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			if n := strings.Count(tt.topic, "/") + 1; n != 5000 {
				t.Fatalf("topic has %d levels", n)
			}
			p.Send("type", "subscribe", "topic", tt.topic)
			p.ExpectFields("type", "error", "error", "invalid_topic", "topic", wire.Echo(tt.topic))
			p.Send("type", "publish", "topic", tt.topic, "data", "x", "msgRef", "deep")
			f := p.Expect()
			if f.Type() != "error" || f.Map["msgRef"] != "deep" {
				t.Fatalf("publish to 5,000 levels answered %s, want an error", f)
			}
			expectPong(t, p)
		})
	}
}

func TestHostileTopicWith65LevelsIsInvalidTopic(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	topic := "demo/general" + strings.Repeat("/a", 63) // 65 levels, 140 bytes
	p.Send("type", "subscribe", "topic", topic)
	p.ExpectFields("type", "error", "error", "invalid_topic", "topic", topic, "detail", "topic: too many levels")
	p.Send("type", "publish", "topic", topic, "data", "x")
	p.ExpectFields("type", "error", "error", "invalid_topic", "topic", topic, "detail", "topic: too many levels")
	subscribe(t, p, "demo/general"+strings.Repeat("/a", 62)) // 64 levels fit
}
