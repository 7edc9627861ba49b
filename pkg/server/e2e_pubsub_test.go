package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Subscribe, unsubscribe, publish and delivery (wire-reference.md §3, §6.1, §6.2;
// decisions.md D-2, D-3, D-4, OQ-14, OQ-24, OQ-25, OQ-36, OQ-38,
// OQ-58, OQ-59, OQ-60).

func TestSubscribeRepliesSubscribedWithLoadBalanceFalse(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "subscribe", "topic", "demo/general/messages")
	f := p.ExpectFields("type", "subscribed", "topic", "demo/general/messages", "loadBalance", false)
	if len(f.Map) != 3 {
		t.Fatalf("subscribed has keys beyond §3.2: %s", f)
	}
}

func TestSubscribeOutsideGrantsIsNotAuthorizedForV1(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "subscribe", "topic", "demo/other/x")
	p.ExpectFields("type", "error", "code", 42940, "error", "not_authorized", "topic", "demo/other/x",
		"hint", "topic is outside this token's grants")
}

func TestSubscribeOutsideGrantsIsUnknownTopicForV2(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice", "protocolVersion", 2)
	p.Send("type", "subscribe", "topic", "demo/other/x")
	p.ExpectFields("type", "error", "code", 42940, "error", "unknown_topic", "topic", "demo/other/x",
		"hint", "topic is outside this token's grants")
}

func withPermission(perm acl.Permission) tokens {
	return demoTokensWith(func(g *auth.Grant) {
		rules := append(acl.Rules(nil), g.Rules...)
		rules[0].Permission = perm
		g.Rules = rules
	})
}

func TestSubscribeWithPublishOnlyGrantHintNamesThePermission(t *testing.T) {
	s := startWith(t, withPermission(acl.PermPublish), nil)
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "subscribe", "topic", "demo/general/x")
	p.ExpectFields("type", "error", "code", 42940, "error", "not_authorized", "topic", "demo/general/x",
		"hint", "permission subscribe not granted for this topic")
}

func TestPublishWithSubscribeOnlyGrantHintNamesThePermission(t *testing.T) {
	s := startWith(t, withPermission(acl.PermSubscribe), nil)
	p := authed(t, s, "dev-token-alice", "protocolVersion", 2)
	p.Send("type", "publish", "topic", "demo/general/x", "data", "x", "msgRef", "r1")
	p.ExpectFields("type", "error", "code", 42940, "error", "unknown_topic", "topic", "demo/general/x",
		"msgRef", "r1", "hint", "permission publish not granted for this topic")
}

func TestUnsubscribeWithoutSubscriptionRepliesUnsubscribed(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	// Never subscribed, outside the grants, odd bytes: echoed as sent.
	const topic = "Demo//never/ünïcode/+"
	p.Send("type", "unsubscribe", "topic", topic)
	f := p.ExpectFields("type", "unsubscribed", "topic", topic)
	if len(f.Map) != 2 {
		t.Fatalf("unsubscribed has keys beyond §3.2: %s", f)
	}
}

func TestUnsubscribeStopsDelivery(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/a")
	subscribe(t, bob, "demo/general/marker")
	bob.Send("type", "unsubscribe", "topic", "demo/general/a")
	bob.ExpectFields("type", "unsubscribed", "topic", "demo/general/a")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/a", "data", "gone")
	alice.Send("type", "publish", "topic", "demo/general/marker", "data", "marker")
	bob.ExpectFields("type", "message", "topic", "demo/general/marker")
}

func TestPublishIsEchoedToTheSenderByDefault(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	subscribe(t, p, "demo/general/echo")
	p.Send("type", "publish", "topic", "demo/general/echo", "data", "mine")
	p.ExpectFields("type", "message", "topic", "demo/general/echo", "data", "mine", "from", "alice")
}

func TestPublishEchoFalseSkipsOnlyTheSendingConnection(t *testing.T) {
	s := start(t, nil)
	sender := authed(t, s, "dev-token-alice")
	sibling := authed(t, s, "dev-token-alice") // the same actor, another connection
	subscribe(t, sender, "demo/general/echo")
	subscribe(t, sender, "demo/general/marker")
	subscribe(t, sibling, "demo/general/echo")
	sender.Send("type", "publish", "topic", "demo/general/echo", "data", "quiet", "echo", false)
	sender.Send("type", "publish", "topic", "demo/general/marker", "data", "marker")
	sibling.ExpectFields("type", "message", "topic", "demo/general/echo", "data", "quiet", "from", "alice")
	sender.ExpectFields("type", "message", "topic", "demo/general/marker") // not the echo
}

func TestPublishEchoIsSuppressedOnlyByLiteralFalse(t *testing.T) {
	for _, tt := range []struct {
		name string
		give any
	}{
		{name: "true", give: true},
		{name: "nil", give: nil},
		{name: "zero", give: 0},
		{name: "string", give: "false"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			subscribe(t, p, "demo/general/echo")
			p.Send("type", "publish", "topic", "demo/general/echo", "data", "x", "echo", tt.give)
			p.ExpectFields("type", "message", "topic", "demo/general/echo")
		})
	}
}

func TestPublishWithMsgRefIsAcknowledgedBeforeTheOwnEcho(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice") // v1: `published` does not depend on the version (OQ-24)
	subscribe(t, p, "demo/general/acked")
	p.Send("type", "publish", "topic", "demo/general/acked", "data", "x", "msgRef", "ref-1")
	f := p.ExpectFields("type", "published", "topic", "demo/general/acked", "msgRef", "ref-1")
	if len(f.Map) != 3 {
		t.Fatalf("published has keys beyond §3.2: %s", f)
	}
	p.ExpectFields("type", "message", "topic", "demo/general/acked", "data", "x")
}

func TestPublishWithoutDataDeliversNil(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/nil")
	alice := authed(t, s, "dev-token-alice", "protocolVersion", 2)
	alice.Send("type", "publish", "topic", "demo/general/nil", "msgRef", "no-data")
	alice.ExpectFields("type", "published", "topic", "demo/general/nil", "msgRef", "no-data")
	m := bob.ExpectFields("type", "message", "topic", "demo/general/nil")
	if v, ok := m.Map["data"]; !ok || v != nil {
		t.Fatalf("data = %v (present %v), want nil", v, ok)
	}
}

func TestMessageFrameCarriesSenderAndRecordFields(t *testing.T) {
	s := start(t, nil) // RecordMessages is on
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/meta")
	alice := authed(t, s, "dev-token-alice")
	before := time.Now().UnixMilli()
	alice.Send("type", "publish", "topic", "demo/general/meta", "data", "x")
	m := bob.ExpectFields("type", "message", "topic", "demo/general/meta", "data", "x",
		"from", "alice", "fromType", "actor", "requiresAck", true)
	after := time.Now().UnixMilli()
	if ts := asInt(t, m.Map["timestamp"]); ts < before-1000 || ts > after+1000 {
		t.Fatalf("timestamp = %d ms, want between %d and %d", ts, before, after)
	}
	if id, _ := m.Map["msgId"].(string); len(id) != 36 {
		t.Fatalf("msgId = %v, want a UUID", m.Map["msgId"])
	}
	if _, ok := m.Map["sourceTopic"]; ok {
		t.Fatalf("exact subscription got a sourceTopic: %s", m)
	}
	if _, ok := m.Map["filter"]; ok {
		t.Fatalf("unfiltered publish got a filter (OQ-3): %s", m)
	}
}

func TestMessageFrameWithoutRecordingHasNoMsgID(t *testing.T) {
	s := start(t, func(c *testConfig) { c.RecordMessages = false })
	p := authed(t, s, "dev-token-alice")
	subscribe(t, p, "demo/general/plain")
	p.Send("type", "publish", "topic", "demo/general/plain", "data", "x")
	m := p.ExpectFields("type", "message", "topic", "demo/general/plain", "from", "alice")
	for _, k := range []string{"msgId", "requiresAck"} {
		if _, ok := m.Map[k]; ok {
			t.Fatalf("%s sent without recording: %s", k, m)
		}
	}
}

func TestPublishDataBytesPassThroughVerbatim(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/raw")
	// [bin(ff 00 80), ext 42 (4 bytes), float32 1.5, "s"]: bin stays bin
	// (not str), the ext and the float32 survive (D-4, OQ-1).
	data := msgp.AppendArrayHeader(nil, 4)
	data = msgp.AppendBytes(data, []byte{0xff, 0x00, 0x80})
	data = append(data, 0xd6, 42, 1, 2, 3, 4) // fixext4, type 42
	data = msgp.AppendFloat32(data, 1.5)
	data = msgp.AppendString(data, "s")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/raw", "data", testpeer.Raw(data))
	f := bob.ExpectType("message")
	if got := rawField(t, f.Payload, "data"); !bytes.Equal(got, data) {
		t.Fatalf("data = % x, want the published bytes % x", got, data)
	}
}

func fastTokens(rate int) tokens {
	return demoTokensWith(func(g *auth.Grant) { g.RateLimit = rate })
}

func TestPublishOrderIsKeptPerPublisherAndSubscriber(t *testing.T) {
	const n = 200
	s := startWith(t, fastTokens(1000), nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/fifo")
	alice := authed(t, s, "dev-token-alice")
	var burst []byte
	for i := 0; i < n; i++ {
		burst = append(burst, binFrame("type", "publish", "topic", "demo/general/fifo", "data", i)...)
	}
	alice.SendRaw(burst)
	for i := 0; i < n; i++ {
		m := bob.ExpectType("message")
		if got := asInt(t, m.Map["data"]); got != int64(i) {
			t.Fatalf("message %d carries %d: order lost", i, got)
		}
	}
}

func TestWildcardSubscriptionReportsPatternAndSourceTopic(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/+")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/x", "data", "one")
	bob.ExpectFields("type", "message", "topic", "demo/general/+", "sourceTopic", "demo/general/x", "data", "one")
	// + spans exactly one level.
	alice.Send("type", "publish", "topic", "demo/general/x/deeper", "data", "two")
	alice.Send("type", "publish", "topic", "demo/general/y", "data", "three")
	bob.ExpectFields("type", "message", "topic", "demo/general/+", "sourceTopic", "demo/general/y", "data", "three")
}

func TestWildcardSubscriptionOnTheRulePatternReceivesConcreteTopics(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	// demo/general/# is the demo rule's own pattern: it must not resolve to
	// the rule's internal topic (OQ-38).
	subscribe(t, bob, "demo/general/#")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/a/b", "data", "deep")
	bob.ExpectFields("type", "message", "topic", "demo/general/#", "sourceTopic", "demo/general/a/b", "data", "deep")
}

func TestOverlappingSubscriptionsGetOneFramePerSubscription(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/x")
	subscribe(t, bob, "demo/general/+")
	subscribe(t, bob, "demo/general/marker")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/x", "data", "twice")
	alice.Send("type", "publish", "topic", "demo/general/marker", "data", "marker")
	got := map[string]testpeer.Frame{}
	for i := 0; i < 2; i++ {
		f := bob.ExpectFields("type", "message", "data", "twice")
		got[f.Map["topic"].(string)] = f
	}
	if _, ok := got["demo/general/x"]; !ok {
		t.Fatalf("no frame for the exact subscription: %v", got)
	}
	if _, ok := got["demo/general/x"].Map["sourceTopic"]; ok {
		t.Fatalf("exact subscription got a sourceTopic: %s", got["demo/general/x"])
	}
	if f, ok := got["demo/general/+"]; !ok || f.Map["sourceTopic"] != "demo/general/x" {
		t.Fatalf("wildcard frame = %v, want topic demo/general/+ with sourceTopic demo/general/x", got)
	}
	bob.ExpectFields("type", "message", "topic", "demo/general/marker") // and no third copy
}

func TestWildcardPublishIsRejected(t *testing.T) {
	for _, topic := range []string{"demo/general/+", "demo/general/#"} {
		t.Run(topic, func(t *testing.T) {
			s := start(t, nil)
			bob := authed(t, s, "dev-token-bob")
			subscribe(t, bob, "demo/general/#")
			alice := authed(t, s, "dev-token-alice")
			alice.Send("type", "publish", "topic", topic, "data", "x", "msgRef", "wild")
			f := alice.ExpectFields("type", "error", "code", 42940, "error", "not_authorized", "topic", topic, "msgRef", "wild")
			if h, _ := f.Map["hint"].(string); h == "" {
				t.Fatalf("no hint: %s", f)
			}
			alice.Send("type", "publish", "topic", "demo/general/marker", "data", "marker")
			bob.ExpectFields("type", "message", "sourceTopic", "demo/general/marker")
		})
	}
}

func TestResubscribingThePatternReplacesTheSubscription(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/again")
	subscribe(t, bob, "demo/general/again")
	subscribe(t, bob, "demo/general/marker")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/again", "data", "once")
	alice.Send("type", "publish", "topic", "demo/general/marker", "data", "marker")
	bob.ExpectFields("type", "message", "topic", "demo/general/again", "data", "once")
	bob.ExpectFields("type", "message", "topic", "demo/general/marker") // not a second copy
}

func TestPublishMsgRefIsAcknowledgedOnlyWhenANonEmptyString(t *testing.T) {
	for _, tt := range []struct {
		name string
		give any
	}{
		{name: "empty", give: ""},
		{name: "int", give: 7},
		{name: "nil", give: nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			subscribe(t, p, "demo/general/ref")
			p.Send("type", "publish", "topic", "demo/general/ref", "data", "x", "msgRef", tt.give)
			p.ExpectFields("type", "message", "topic", "demo/general/ref") // no `published` first
		})
	}
}

func TestPublishOutsideGrantsEchoesMsgRef(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "publish", "topic", "demo/other/x", "data", "x", "msgRef", "out")
	p.ExpectFields("type", "error", "code", 42940, "error", "not_authorized", "topic", "demo/other/x",
		"msgRef", "out", "hint", "topic is outside this token's grants")
}
