package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/testpeer"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Hostile MessagePack over the socket: every malformed or
// ill-typed frame gets `bad_request` with a reason, or the documented
// fallback (docs/protocol.md "Frames and encoding", wire.Decode), and the
// connection stays usable.

// expectBadRequest expects a bad_request error frame with detail, then
// checks that the connection still answers.
func expectBadRequest(t *testing.T, p *testpeer.Peer, detail string) {
	t.Helper()
	p.ExpectFields("type", "error", "error", "bad_request", "detail", detail)
	expectPong(t, p)
}

// nestedArrays is depth one-element arrays around nil.
func nestedArrays(depth int) []byte {
	return append(bytes.Repeat([]byte{0x91}, depth), 0xc0)
}

// nestedMaps is depth one-entry maps {"a": ...} around nil.
func nestedMaps(depth int) []byte {
	return append(bytes.Repeat([]byte{0x81, 0xa1, 'a'}, depth), 0xc0)
}

func TestHostileDeepMsgpackNestingGetsBadRequest(t *testing.T) {
	const dataTooDeep, envelopeTooDeep = "data nesting deeper than 128", "envelope nesting deeper than 32"
	for _, tt := range []struct {
		name   string
		give   []byte
		detail string
	}{
		{name: "100,000 arrays in data", give: testpeer.Map("type", "publish", "topic", "demo/general/deep",
			"data", testpeer.Raw(nestedArrays(100_000))), detail: dataTooDeep},
		{name: "100,000 maps in data", give: testpeer.Map("type", "publish", "topic", "demo/general/deep",
			"data", testpeer.Raw(nestedMaps(100_000))), detail: dataTooDeep},
		{name: "129 levels in data", give: testpeer.Map("type", "publish", "topic", "demo/general/deep",
			"data", testpeer.Raw(nestedArrays(wire.MaxDataDepth+1))), detail: dataTooDeep},
		{name: "deep value of an unknown key", give: testpeer.Map("type", "subscribe", "topic", "demo/general/deep",
			"extra", testpeer.Raw(nestedMaps(50_000))), detail: envelopeTooDeep},
		{name: "33 levels in an unknown key", give: testpeer.Map("type", "subscribe", "topic", "demo/general/deep",
			"extra", testpeer.Raw(nestedArrays(wire.MaxDepth))), detail: envelopeTooDeep},
		{name: "deep filters", give: testpeer.Map("type", "subscribe", "topic", "demo/general/deep",
			"filters", testpeer.Raw(nestedArrays(1000))), detail: envelopeTooDeep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendBinary(tt.give)
			expectBadRequest(t, p, tt.detail)
		})
	}
}

func TestHostileDeepMsgpackNestingBeforeAuthGetsBadRequest(t *testing.T) {
	s := start(t, nil)
	p := dialPeer(t, s)
	p.SendBinary(nestedArrays(100_000))
	expectBadRequest(t, p, "envelope nesting deeper than 32")
	p.Auth("dev-token-alice")
}

func TestHostileDeepJSONNestingInATextFrameGetsInvalidJSON(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	deep := `{"type":"publish","topic":"demo/general/deep","data":` +
		strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`
	p.SendFrame(ws.NewTextFrame([]byte(deep)))
	p.ExpectFields("type", "error", "error", "invalid_json", "detail", "data nesting deeper than 128")
	expectPong(t, p)
}

func TestHostileMsgpackNestingAtTheBoundIsAccepted(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	// data is bounded from itself, whatever the envelope around it.
	p.Send("type", "publish", "topic", "demo/general/deep", "data", testpeer.Raw(nestedArrays(wire.MaxDataDepth)), "msgRef", "128")
	p.ExpectFields("type", "published", "msgRef", "128")
}

func TestHostileContainerDeclaringFourBillionEntriesGetsBadRequest(t *testing.T) {
	map32 := []byte{0xdf, 0xff, 0xff, 0xff, 0xff}
	array32 := []byte{0xdd, 0xff, 0xff, 0xff, 0xff}
	for _, tt := range []struct {
		name string
		give []byte
	}{
		{name: "envelope map32", give: map32},
		{name: "envelope map32 with one entry", give: append(append([]byte(nil), map32...), testpeer.Map("type", "publish")[1:]...)},
		{name: "data map32", give: testpeer.Map("type", "publish", "topic", "demo/general/huge", "data", testpeer.Raw(map32))},
		{name: "data array32", give: testpeer.Map("type", "publish", "topic", "demo/general/huge", "data", testpeer.Raw(array32))},
		{name: "msgIds array32", give: testpeer.Map("type", "batchAck", "msgIds", testpeer.Raw(array32))},
		{name: "filters array32", give: testpeer.Map("type", "subscribe", "topic", "demo/general/huge", "filters", testpeer.Raw(array32))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendBinary(tt.give)
			expectBadRequest(t, p, "truncated msgpack value")
		})
	}
}

func TestHostileLengthsPastTheFrameEndGetBadRequest(t *testing.T) {
	publish := func(key string, v []byte) []byte {
		return testpeer.Map("type", "publish", "topic", "demo/general/short", key, testpeer.Raw(v))
	}
	for _, tt := range []struct {
		name string
		give []byte
	}{
		{name: "fixstr topic", give: publish("topic", []byte{0xbf, 'a', 'b'})},
		{name: "str8 topic", give: publish("topic", []byte{0xd9, 0xff, 'a', 'b', 'c'})},
		{name: "str16 topic", give: publish("topic", []byte{0xda, 0xff, 0xff, 'a'})},
		{name: "str32 topic", give: publish("topic", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'})},
		{name: "bin32 data", give: publish("data", []byte{0xc6, 0xff, 0xff, 0xff, 0xff, 1, 2})},
		{name: "ext32 data", give: publish("data", []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01, 1})},
		{name: "fixext16 data", give: publish("data", []byte{0xd8, 0x01, 1, 2, 3})},
		{name: "str32 key", give: append([]byte{0x81, 0xdb, 0xff, 0xff, 0xff, 0xff}, "type"...)},
		{name: "float64 cut", give: publish("data", []byte{0xcb, 0x40, 0x09})},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendBinary(tt.give)
			expectBadRequest(t, p, "truncated msgpack value")
		})
	}
}

func TestHostileNonStringEnvelopeKeysGetBadRequest(t *testing.T) {
	for _, tt := range []struct {
		name string
		key  []byte // one msgpack value used as a key
	}{
		{name: "int", key: msgp.AppendInt(nil, 1)},
		{name: "nil", key: msgp.AppendNil(nil)},
		{name: "bool", key: msgp.AppendBool(nil, true)},
		{name: "float", key: msgp.AppendFloat64(nil, 1.5)},
		{name: "array", key: []byte{0x91, 0xa4, 't', 'y', 'p', 'e'}},
		{name: "map", key: []byte{0x81, 0xa1, 'k', 0xa1, 'v'}},
		{name: "ext", key: []byte{0xd4, 0x01, 0x00}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			// {<key>: "x", "type": "subscribe", "topic": "demo/general/keys"}
			b := msgp.AppendMapHeader(nil, 3)
			b = append(b, tt.key...)
			b = msgp.AppendString(b, "x")
			b = append(b, testpeer.Map("type", "subscribe", "topic", "demo/general/keys")[1:]...)
			p.SendBinary(b)
			expectBadRequest(t, p, "map keys must be strings")
		})
	}
}

// typeStep is one request of a wrong-field-type case and the replies it
// must get, in order; noKey must be absent from the last one.
type typeStep struct {
	send  []any
	want  [][]any
	noKey string
}

func badRequest(detail string) [][]any {
	return [][]any{{"type", "error", "error", "bad_request", "detail", detail}}
}

func TestHostileWrongFieldTypesGetBadRequestOrTheDocumentedFallback(t *testing.T) {
	const topic = "demo/general/types"
	sub := typeStep{send: []any{"type", "subscribe", "topic", topic}, want: [][]any{{"type", "subscribed", "topic", topic}}}
	published := func(ref string, data any) [][]any {
		return [][]any{{"type", "published", "msgRef", ref}, {"type", "message", "topic", topic, "data", data}}
	}
	invalidFilter := [][]any{{"type", "error", "error", "invalid_filter_chars (/, #, +, | not allowed)", "topic", topic}}
	for _, tt := range []struct {
		name     string
		beforeAu bool // sent on a connection that has not authenticated
		steps    []typeStep
	}{
		// type: a string when present (wire.Decode), before and after auth.
		{name: "type int", steps: []typeStep{{send: []any{"type", 1}, want: badRequest("type must be a string")}}},
		{name: "type nil", steps: []typeStep{{send: []any{"type", nil}, want: badRequest("type must be a string")}}},
		{name: "type array", steps: []typeStep{{send: []any{"type", []any{"subscribe"}}, want: badRequest("type must be a string")}}},
		{name: "type int before auth", beforeAu: true, steps: []typeStep{{send: []any{"type", 1, "token", "dev-token-alice"},
			want: badRequest("type must be a string")}}},

		// auth: token of any type is looked up and denied; projectId must be a
		// string; reconnect and protocolVersion fall back.
		{name: "auth token int", beforeAu: true, steps: []typeStep{{send: []any{"type", "auth", "token", 7},
			want: [][]any{{"type", "auth", "success", false, "error", "access_denied"}}}}},
		{name: "auth token map", beforeAu: true, steps: []typeStep{{send: []any{"type", "auth", "token", map[string]any{"t": 1}},
			want: [][]any{{"type", "auth", "success", false, "error", "access_denied"}}}}},
		{name: "auth projectId int", beforeAu: true, steps: []typeStep{{send: []any{"type", "auth", "token", "dev-token-alice", "projectId", 1},
			want: badRequest("auth: projectId must be a string")}}},
		{name: "auth reconnect string", beforeAu: true, steps: []typeStep{{send: []any{"type", "auth", "token", "dev-token-alice", "reconnect", "true"},
			want: [][]any{{"type", "auth", "success", true, "restoredSubscriptions", []any{}}}}}},
		{name: "auth protocolVersion string", beforeAu: true, steps: []typeStep{{send: []any{"type", "auth", "token", "dev-token-alice", "protocolVersion", "2"},
			want: [][]any{{"type", "auth", "success", true, "protocolVersion", 1}}}}},
		{name: "auth protocolVersion negative", beforeAu: true, steps: []typeStep{{send: []any{"type", "auth", "token", "dev-token-alice", "protocolVersion", -2},
			want: [][]any{{"type", "auth", "success", true, "protocolVersion", 1}}}}},

		// subscribe: topic and loadBalanceGroup must be strings; qos and
		// loadBalance fall back; filters must be an array or nil.
		{name: "subscribe topic int", steps: []typeStep{{send: []any{"type", "subscribe", "topic", 1}, want: badRequest("subscribe: topic must be a string")}}},
		{name: "subscribe topic map", steps: []typeStep{{send: []any{"type", "subscribe", "topic", map[string]any{"a": 1}}, want: badRequest("subscribe: topic must be a string")}}},
		{name: "subscribe topic nil", steps: []typeStep{{send: []any{"type", "subscribe", "topic", nil}, want: badRequest("subscribe requires topic")}}},
		{name: "subscribe loadBalanceGroup int", steps: []typeStep{{send: []any{"type", "subscribe", "topic", topic, "loadBalance", true, "loadBalanceGroup", 5},
			want: badRequest("subscribe: loadBalanceGroup must be a string")}}},
		{name: "subscribe qos string", steps: []typeStep{{send: []any{"type", "subscribe", "topic", topic, "qos", "2"},
			want: [][]any{{"type", "subscribed", "topic", topic}}}}},
		{name: "subscribe qos out of range", steps: []typeStep{{send: []any{"type", "subscribe", "topic", topic, "qos", 9},
			want: [][]any{{"type", "subscribed", "topic", topic}}}}},
		{name: "subscribe loadBalance string", steps: []typeStep{{send: []any{"type", "subscribe", "topic", topic, "loadBalance", "true"},
			want: [][]any{{"type", "subscribed", "topic", topic, "loadBalance", false}}}}},
		{name: "subscribe filters string", steps: []typeStep{{send: []any{"type", "subscribe", "topic", topic, "filters", "a"}, want: invalidFilter}}},
		{name: "subscribe filters of ints", steps: []typeStep{{send: []any{"type", "subscribe", "topic", topic, "filters", []any{1}}, want: invalidFilter}}},
		{name: "subscribe foreign roomId int", steps: []typeStep{{send: []any{"type", "subscribe", "topic", topic, "roomId", 1},
			want: [][]any{{"type", "subscribed", "topic", topic}}}}},

		// unsubscribe and setFilters: topic must be a string; setFilters
		// filters must be an array or nil.
		{name: "unsubscribe topic int", steps: []typeStep{{send: []any{"type", "unsubscribe", "topic", 1}, want: badRequest("unsubscribe: topic must be a string")}}},
		{name: "setFilters topic bool", steps: []typeStep{{send: []any{"type", "setFilters", "topic", true, "filters", []any{"a"}}, want: badRequest("setFilters: topic must be a string")}}},
		{name: "setFilters filters int", steps: []typeStep{sub, {send: []any{"type", "setFilters", "topic", topic, "filters", 3}, want: invalidFilter}}},

		// publish: topic must be a string; msgRef, echo, retain, qos, filter
		// and a non-array filters fall back; filters elements must be strings.
		{name: "publish topic int", steps: []typeStep{{send: []any{"type", "publish", "topic", 1, "data", "x"}, want: badRequest("publish: topic must be a string")}}},
		{name: "publish topic array", steps: []typeStep{{send: []any{"type", "publish", "topic", []any{topic}, "data", "x"}, want: badRequest("publish: topic must be a string")}}},
		{name: "publish msgRef int", steps: []typeStep{sub, {send: []any{"type", "publish", "topic", topic, "data", "x", "msgRef", 42},
			want: [][]any{{"type", "message", "data", "x"}}}}},
		{name: "publish echo string", steps: []typeStep{sub, {send: []any{"type", "publish", "topic", topic, "data", "x", "msgRef", "r", "echo", "false"},
			want: published("r", "x")}}},
		{name: "publish echo zero", steps: []typeStep{sub, {send: []any{"type", "publish", "topic", topic, "data", "x", "msgRef", "r", "echo", 0},
			want: published("r", "x")}}},
		{name: "publish qos string", steps: []typeStep{sub, {send: []any{"type", "publish", "topic", topic, "data", "x", "msgRef", "r", "qos", "0"},
			want: published("r", "x")}}},
		{name: "publish filter int", steps: []typeStep{sub, {send: []any{"type", "publish", "topic", topic, "data", "x", "msgRef", "r", "filter", 42},
			want: published("r", "x"), noKey: "filter"}}},
		{name: "publish filters string", steps: []typeStep{sub, {send: []any{"type", "publish", "topic", topic, "data", "x", "msgRef", "r", "filters", "a"},
			want: published("r", "x"), noKey: "filter"}}},
		{name: "publish filters of ints", steps: []typeStep{{send: []any{"type", "publish", "topic", topic, "data", "x", "msgRef", "r", "filters", []any{1}},
			want: [][]any{{"type", "error", "code", 42960, "error", "invalid_filter", "detail", "filters must be non-empty strings", "msgRef", "r"}}}}},
		{name: "publish retain string", steps: []typeStep{
			sub,
			{send: []any{"type", "publish", "topic", topic, "data", "kept?", "msgRef", "r", "retain", "true"}, want: published("r", "kept?")},
			sub, // a retained message would follow `subscribed`
			{send: []any{"type", "publish", "topic", topic, "data", "marker"}, want: [][]any{{"type", "message", "data", "marker"}}},
		}},

		// presence and lobbies: roomId and lobbyId must be strings.
		{name: "presence roomId int", steps: []typeStep{{send: []any{"type", "presence", "roomId", 1, "data", "x"}, want: badRequest("presence: roomId must be a string")}}},
		{name: "getPresence roomId array", steps: []typeStep{{send: []any{"type", "getPresence", "roomId", []any{"general"}}, want: badRequest("getPresence: roomId must be a string")}}},
		{name: "lobbySubscribe lobbyId int", steps: []typeStep{{send: []any{"type", "lobbySubscribe", "lobbyId", 1}, want: badRequest("lobbySubscribe: lobbyId must be a string")}}},
		{name: "lobbyUnsubscribe lobbyId bool", steps: []typeStep{{send: []any{"type", "lobbyUnsubscribe", "lobbyId", false}, want: badRequest("lobbyUnsubscribe: lobbyId must be a string")}}},
		{name: "getLobbyPresence lobbyId float", steps: []typeStep{{send: []any{"type", "getLobbyPresence", "lobbyId", 1.5}, want: badRequest("getLobbyPresence: lobbyId must be a string")}}},
		{name: "getLobbyPresence lobbyId nil", steps: []typeStep{{send: []any{"type", "getLobbyPresence", "lobbyId", nil}, want: badRequest("getLobbyPresence requires lobbyId")}}},

		// ack and batchAck: msgId a string, msgIds an array of strings.
		{name: "ack msgId int", steps: []typeStep{{send: []any{"type", "ack", "msgId", 1}, want: badRequest("ack: msgId must be a string")}}},
		{name: "batchAck msgIds string", steps: []typeStep{{send: []any{"type", "batchAck", "msgIds", "a"}, want: badRequest("batchAck: msgIds must be an array of strings")}}},
		{name: "batchAck msgIds of ints", steps: []typeStep{{send: []any{"type", "batchAck", "msgIds", []any{"a", 2}}, want: badRequest("batchAck: msgIds must be an array of strings")}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			var p *testpeer.Peer
			if tt.beforeAu {
				p = dialPeer(t, s)
			} else {
				p = authed(t, s, "dev-token-alice")
			}
			for _, step := range tt.steps {
				p.Send(step.send...)
				var last testpeer.Frame
				for _, want := range step.want {
					last = p.ExpectFields(want...)
				}
				if _, ok := last.Map[step.noKey]; ok && step.noKey != "" {
					t.Fatalf("%q present in %s", step.noKey, last)
				}
			}
			expectPong(t, p) // nothing else was sent, and the connection is usable
			if tt.beforeAu {
				p.Send("type", "auth", "token", "dev-token-alice")
				p.ExpectType("auth")
			}
		})
	}
}

// TestJSONTextThatIsNotAnObjectFollowsTheNotAMapRule checks wire-reference.md
// §1.3 for text frames: well-formed JSON that is not an object gets
// not_authenticated before auth and is ignored after, like MessagePack.
func TestJSONTextThatIsNotAnObjectFollowsTheNotAMapRule(t *testing.T) {
	s := start(t, nil)
	p := dialPeer(t, s)
	p.SendFrame(ws.NewTextFrame([]byte(`[1,2,3]`)))
	p.ExpectFields("type", "error", "error", "not_authenticated")
	p.Auth("dev-token-bob")
	p.SendFrame(ws.NewTextFrame([]byte(`"just a string"`)))
	p.SendFrame(ws.NewTextFrame([]byte(`{"type":"subscribe","topic":7}`)))
	p.ExpectFields("type", "error", "error", "bad_request")
}
