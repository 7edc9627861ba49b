package wire

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// cmd returns the Command Decode produces for a message of type typ with no
// other keys, modified by set.
func cmd(typ string, set func(c *Command)) Command {
	c := Command{Type: typ, Echo: true, QoS: 1, ProtocolVersion: 1}
	if set != nil {
		set(&c)
	}
	return c
}

// quickstartPublish is the frame the JS SDK sends for the quickstart's
// alice.emit("demo/general/messages", {text:"hello from alice"}) (wire-reference.md
// §12.1, Appendix B.1): insertion-ordered keys, shortest encodings.
func quickstartPublish() []byte {
	b := msgp.AppendMapHeader(nil, 5)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "publish")
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, "demo/general/messages")
	b = msgp.AppendString(b, "data")
	b = msgp.AppendMapHeader(b, 1)
	b = msgp.AppendString(b, "text")
	b = msgp.AppendString(b, "hello from alice")
	b = msgp.AppendString(b, "qos")
	b = msgp.AppendInt(b, 1)
	b = msgp.AppendString(b, "echo")
	b = msgp.AppendBool(b, true)
	return b
}

func TestDecodeQuickstartPublish(t *testing.T) {
	var c Command
	if err := Decode(quickstartPublish(), &c); err != nil {
		t.Fatalf("Decode: %v", err)
	}
	wantData := msgp.AppendMapHeader(nil, 1)
	wantData = msgp.AppendString(wantData, "text")
	wantData = msgp.AppendString(wantData, "hello from alice")
	want := cmd("publish", func(c *Command) {
		c.Topic, c.HasTopic = "demo/general/messages", true
		c.Data, c.HasData = wantData, true
	})
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("Decode =\n%+v\nwant\n%+v", c, want)
	}
}

func TestDecodeFrames(t *testing.T) {
	timestampExt := raw{0xd6, 0xff, 0x65, 0x00, 0x00, 0x00} // ext -1 (a JS Date)
	tests := []struct {
		name    string
		give    []byte
		want    Command
		wantErr string
	}{
		// auth (§2.1)
		{
			name: "auth with every field",
			give: enc(kv{"type", "auth", "token", "dev-token-alice", "reconnect", true, "projectId", "demo-project", "protocolVersion", 2}),
			want: cmd("auth", func(c *Command) {
				c.Token, c.HasToken, c.TokenIsString = "dev-token-alice", true, true
				c.Reconnect, c.ProjectID, c.ProtocolVersion = true, "demo-project", 2
			}),
		},
		{
			name: "auth with bin keys and bin strings",
			give: enc(kv{bin("type"), bin("auth"), bin("token"), bin("t")}),
			want: cmd("auth", func(c *Command) { c.Token, c.HasToken, c.TokenIsString = "t", true, true }),
		},
		{
			name: "auth without token",
			give: enc(kv{"type", "auth"}),
			want: cmd("auth", nil),
		},
		{
			name: "auth with an int token",
			give: enc(kv{"type", "auth", "token", 42}),
			want: cmd("auth", func(c *Command) { c.HasToken = true }),
		},
		{
			name: "auth with a nil token",
			give: enc(kv{"type", "auth", "token", nil}),
			want: cmd("auth", func(c *Command) { c.HasToken = true }),
		},
		{
			name: "reauth carries its token",
			give: enc(kv{"type", "reauth", "token", "eyJ.new.token"}),
			want: cmd("reauth", func(c *Command) { c.Token, c.HasToken, c.TokenIsString = "eyJ.new.token", true, true }),
		},
		{
			name: "reconnect must be literal true",
			give: enc(kv{"type", "auth", "reconnect", "true"}),
			want: cmd("auth", nil),
		},
		{
			name: "reconnect 1 is not true",
			give: enc(kv{"type", "auth", "reconnect", 1}),
			want: cmd("auth", nil),
		},
		{
			name: "protocolVersion 0 counts as 1",
			give: enc(kv{"type", "auth", "protocolVersion", 0}),
			want: cmd("auth", nil),
		},
		{
			name: "protocolVersion negative counts as 1",
			give: enc(kv{"type", "auth", "protocolVersion", -3}),
			want: cmd("auth", nil),
		},
		{
			name: "protocolVersion float counts as 1",
			give: enc(kv{"type", "auth", "protocolVersion", 2.0}),
			want: cmd("auth", nil),
		},
		{
			name: "protocolVersion string counts as 1",
			give: enc(kv{"type", "auth", "protocolVersion", "2"}),
			want: cmd("auth", nil),
		},
		{
			name: "protocolVersion above 2 is kept",
			give: enc(kv{"type", "auth", "protocolVersion", 7}),
			want: cmd("auth", func(c *Command) { c.ProtocolVersion = 7 }),
		},
		{
			name: "protocolVersion as uint8",
			give: enc(kv{"type", "auth", "protocolVersion", raw{0xcc, 0x02}}),
			want: cmd("auth", func(c *Command) { c.ProtocolVersion = 2 }),
		},
		{
			name: "protocolVersion uint64 max saturates",
			give: enc(kv{"type", "auth", "protocolVersion", uint64(math.MaxUint64)}),
			want: cmd("auth", func(c *Command) { c.ProtocolVersion = math.MaxInt }),
		},
		{
			name:    "auth projectId must be a string",
			give:    enc(kv{"type", "auth", "token", "t", "projectId", 7}),
			wantErr: "[auth] auth: projectId must be a string",
		},
		{
			name: "auth projectId nil is absent",
			give: enc(kv{"type", "auth", "projectId", nil}),
			want: cmd("auth", nil),
		},
		{
			name: "auth ignores the extra keys of Python and old Go",
			give: enc(kv{"type", "auth", "token", "t", "loadBalance", "x", "loadBalanceGroup", 5, "id", 3, "topic", 1}),
			want: cmd("auth", func(c *Command) { c.Token, c.HasToken, c.TokenIsString = "t", true, true }),
		},

		// subscribe (§3.1, §6.9)
		{
			name: "subscribe as the JS SDK sends it",
			give: enc(kv{"type", "subscribe", "topic", "demo/general/messages", "qos", 1}),
			want: cmd("subscribe", func(c *Command) { c.Topic, c.HasTopic = "demo/general/messages", true }),
		},
		{
			name:    "subscribe topic must be a string",
			give:    enc(kv{"type", "subscribe", "topic", 5}),
			wantErr: "[subscribe] subscribe: topic must be a string",
		},
		{
			name:    "subscribe topic true",
			give:    enc(kv{"type", "subscribe", "topic", true}),
			wantErr: "[subscribe] subscribe: topic must be a string",
		},
		{
			name: "subscribe topic nil is absent",
			give: enc(kv{"type", "subscribe", "topic", nil}),
			want: cmd("subscribe", nil),
		},
		{
			name: "subscribe topic bin",
			give: enc(kv{"type", "subscribe", "topic", bin("a/b")}),
			want: cmd("subscribe", func(c *Command) { c.Topic, c.HasTopic = "a/b", true }),
		},
		{
			name: "subscribe with load balancing",
			give: enc(kv{"type", "subscribe", "topic", "t", "loadBalance", true, "loadBalanceGroup", "workers"}),
			want: cmd("subscribe", func(c *Command) {
				c.Topic, c.HasTopic = "t", true
				c.LoadBalance, c.LoadBalanceGroup, c.HasLoadBalanceGroup = true, "workers", true
			}),
		},
		{
			name: "loadBalance must be literal true",
			give: enc(kv{"type", "subscribe", "loadBalance", "true"}),
			want: cmd("subscribe", nil),
		},
		{
			name: "loadBalanceGroup nil is not set",
			give: enc(kv{"type", "subscribe", "loadBalanceGroup", nil}),
			want: cmd("subscribe", nil),
		},
		{
			name:    "loadBalanceGroup must be a string",
			give:    enc(kv{"type", "subscribe", "topic", "t", "loadBalanceGroup", 12}),
			wantErr: "[subscribe] subscribe: loadBalanceGroup must be a string",
		},
		{
			name: "qos 0",
			give: enc(kv{"type", "subscribe", "qos", 0}),
			want: cmd("subscribe", func(c *Command) { c.QoS = 0 }),
		},
		{
			name: "qos 2",
			give: enc(kv{"type", "subscribe", "qos", 2}),
			want: cmd("subscribe", func(c *Command) { c.QoS = 2 }),
		},
		{
			name: "qos 3 falls back to 1",
			give: enc(kv{"type", "subscribe", "qos", 3}),
			want: cmd("subscribe", nil),
		},
		{
			name: "qos -1 falls back to 1",
			give: enc(kv{"type", "subscribe", "qos", -1}),
			want: cmd("subscribe", nil),
		},
		{
			name: "qos string falls back to 1",
			give: enc(kv{"type", "subscribe", "qos", "0"}),
			want: cmd("subscribe", nil),
		},
		{
			name: "qos float falls back to 1",
			give: enc(kv{"type", "subscribe", "qos", 0.0}),
			want: cmd("subscribe", nil),
		},
		{
			name: "subscribe filters absent",
			give: enc(kv{"type", "subscribe", "topic", "t"}),
			want: cmd("subscribe", func(c *Command) { c.Topic, c.HasTopic = "t", true }),
		},
		{
			name: "subscribe filters nil",
			give: enc(kv{"type", "subscribe", "filters", nil}),
			want: cmd("subscribe", func(c *Command) { c.Filters = FilterSpec{Kind: FiltersNull, Raw: []byte{0xc0}} }),
		},
		{
			name: "subscribe filters not an array",
			give: enc(kv{"type", "subscribe", "filters", "a"}),
			want: cmd("subscribe", func(c *Command) { c.Filters = FilterSpec{Kind: FiltersInvalid, Raw: enc("a")} }),
		},
		{
			name: "subscribe filters with every item shape",
			give: enc(kv{"type", "subscribe", "filters", []any{"a", bin("B"), []any{"Size:Large", bin("color:red")}, 1, []any{"x", 2}, []any{}, kv{"k", "v"}}}),
			want: cmd("subscribe", func(c *Command) {
				c.Filters = FilterSpec{
					Kind: FiltersArray,
					Items: []FilterItem{
						{Values: []string{"a"}, Valid: true},
						{Values: []string{"B"}, Valid: true},
						{Values: []string{"Size:Large", "color:red"}, Group: true, Valid: true},
						{},
						{Values: []string{}, Group: true},
						{Group: true, Valid: true},
						{},
					},
					Raw: enc([]any{"a", bin("B"), []any{"Size:Large", bin("color:red")}, 1, []any{"x", 2}, []any{}, kv{"k", "v"}}),
				}
			}),
		},
		{
			name: "setFilters with an empty array",
			give: enc(kv{"type", "setFilters", "topic", "t", "filters", []any{}}),
			want: cmd("setFilters", func(c *Command) {
				c.Topic, c.HasTopic = "t", true
				c.Filters = FilterSpec{Kind: FiltersArray, Raw: []byte{0x90}}
			}),
		},
		{
			name: "filters are ignored by unsubscribe",
			give: enc(kv{"type", "unsubscribe", "topic", "t", "filters", []any{"a"}}),
			want: cmd("unsubscribe", func(c *Command) { c.Topic, c.HasTopic = "t", true }),
		},
		{
			name:    "unsubscribe topic must be a string",
			give:    enc(kv{"type", "unsubscribe", "topic", []any{}}),
			wantErr: "[unsubscribe] unsubscribe: topic must be a string",
		},
		{
			name:    "setFilters topic must be a string",
			give:    enc(kv{"type", "setFilters", "topic", kv{}}),
			wantErr: "[setFilters] setFilters: topic must be a string",
		},

		// publish (§3.1, §6.2, §6.3, §6.7, §6.9, OQ-14, OQ-17)
		{
			name: "publish with every option",
			give: enc(kv{"type", "publish", "topic", "t", "data", "x", "echo", false, "qos", 0, "retain", true, "filter", "admin", "msgRef", "1-a3f0"}),
			want: cmd("publish", func(c *Command) {
				c.Topic, c.HasTopic = "t", true
				c.Data, c.HasData = enc("x"), true
				c.Echo, c.QoS, c.Retain, c.Filter, c.MsgRef = false, 0, true, "admin", "1-a3f0"
			}),
		},
		{
			name: "publish with bin keys and values",
			give: enc(kv{bin("type"), bin("publish"), bin("topic"), bin("t"), bin("data"), bin("x"), bin("msgRef"), bin("r")}),
			want: cmd("publish", func(c *Command) {
				c.Topic, c.HasTopic = "t", true
				c.Data, c.HasData = enc(bin("x")), true
				c.MsgRef = "r"
			}),
		},
		{
			name:    "publish topic must be a string",
			give:    enc(kv{"type", "publish", "topic", 1.5, "data", 1}),
			wantErr: "[publish] publish: topic must be a string",
		},
		{
			name: "publish nil data",
			give: enc(kv{"type", "publish", "topic", "t", "data", nil}),
			want: cmd("publish", func(c *Command) {
				c.Topic, c.HasTopic = "t", true
				c.Data, c.HasData = []byte{0xc0}, true
			}),
		},
		{
			name: "publish without data",
			give: enc(kv{"type", "publish", "topic", "t"}),
			want: cmd("publish", func(c *Command) { c.Topic, c.HasTopic = "t", true }),
		},
		{
			name: "publish data with an ext value passes through",
			give: enc(kv{"type", "publish", "data", kv{"at", timestampExt}}),
			want: cmd("publish", func(c *Command) { c.Data, c.HasData = enc(kv{"at", timestampExt}), true }),
		},
		{
			name: "echo only literal false disables",
			give: enc(kv{"type", "publish", "echo", 0}),
			want: cmd("publish", nil),
		},
		{
			name: "echo nil keeps the default",
			give: enc(kv{"type", "publish", "echo", nil}),
			want: cmd("publish", nil),
		},
		{
			name: "retain 1 is not true",
			give: enc(kv{"type", "publish", "retain", 1}),
			want: cmd("publish", nil),
		},
		{
			name: "retain string is not true",
			give: enc(kv{"type", "publish", "retain", "yes"}),
			want: cmd("publish", nil),
		},
		{
			name: "msgRef empty",
			give: enc(kv{"type", "publish", "msgRef", ""}),
			want: cmd("publish", nil),
		},
		{
			name: "msgRef not a string",
			give: enc(kv{"type", "publish", "msgRef", 5}),
			want: cmd("publish", nil),
		},
		{
			name: "filter not a string",
			give: enc(kv{"type", "publish", "filter", 3}),
			want: cmd("publish", nil),
		},
		{
			name: "publish filters with a non-string element",
			give: enc(kv{"type", "publish", "filters", []any{"A", 1, bin("b")}}),
			want: cmd("publish", func(c *Command) { c.PubFilters, c.HasPubFilters = []string{"A", "", "b"}, true }),
		},
		{
			name: "publish filters not an array is ignored",
			give: enc(kv{"type", "publish", "filters", "a"}),
			want: cmd("publish", nil),
		},
		{
			name: "publish filters nil is ignored",
			give: enc(kv{"type", "publish", "filters", nil}),
			want: cmd("publish", nil),
		},
		{
			name: "publish filters empty array",
			give: enc(kv{"type", "publish", "filters", []any{}}),
			want: cmd("publish", func(c *Command) { c.HasPubFilters = true }),
		},

		// presence, lobbies, acks (§3.1)
		{
			name: "presence with roomId",
			give: enc(kv{"type", "presence", "roomId", "general", "data", kv{"name", "alice"}}),
			want: cmd("presence", func(c *Command) {
				c.RoomID, c.HasRoomID = "general", true
				c.Data, c.HasData = enc(kv{"name", "alice"}), true
			}),
		},
		{
			name:    "presence roomId must be a string",
			give:    enc(kv{"type", "presence", "roomId", 1, "data", nil}),
			wantErr: "[presence] presence: roomId must be a string",
		},
		{
			name: "presence ignores an ill-typed topic",
			give: enc(kv{"type", "presence", "topic", 5, "data", nil}),
			want: cmd("presence", func(c *Command) { c.Data, c.HasData = []byte{0xc0}, true }),
		},
		{
			name: "getPresence roomId nil",
			give: enc(kv{"type", "getPresence", "roomId", nil}),
			want: cmd("getPresence", nil),
		},
		{
			name:    "getPresence roomId must be a string",
			give:    enc(kv{"type", "getPresence", "roomId", false}),
			wantErr: "[getPresence] getPresence: roomId must be a string",
		},
		{
			name: "lobbySubscribe",
			give: enc(kv{"type", "lobbySubscribe", "lobbyId", "main"}),
			want: cmd("lobbySubscribe", func(c *Command) { c.LobbyID, c.HasLobbyID = "main", true }),
		},
		{
			name:    "lobbySubscribe lobbyId must be a string",
			give:    enc(kv{"type", "lobbySubscribe", "lobbyId", 1}),
			wantErr: "[lobbySubscribe] lobbySubscribe: lobbyId must be a string",
		},
		{
			name:    "lobbyUnsubscribe lobbyId must be a string",
			give:    enc(kv{"type", "lobbyUnsubscribe", "lobbyId", 1}),
			wantErr: "[lobbyUnsubscribe] lobbyUnsubscribe: lobbyId must be a string",
		},
		{
			name:    "getLobbyPresence lobbyId must be a string",
			give:    enc(kv{"type", "getLobbyPresence", "lobbyId", 1}),
			wantErr: "[getLobbyPresence] getLobbyPresence: lobbyId must be a string",
		},
		{
			name: "ack",
			give: enc(kv{"type", "ack", "msgId", "m1"}),
			want: cmd("ack", func(c *Command) { c.MsgID, c.HasMsgID = "m1", true }),
		},
		{
			name:    "ack msgId must be a string",
			give:    enc(kv{"type", "ack", "msgId", true}),
			wantErr: "[ack] ack: msgId must be a string",
		},
		{
			name: "batchAck",
			give: enc(kv{"type", "batchAck", "msgIds", []any{"m1", bin("m2")}}),
			want: cmd("batchAck", func(c *Command) { c.MsgIDs, c.HasMsgIDs = []string{"m1", "m2"}, true }),
		},
		{
			name: "batchAck empty msgIds",
			give: enc(kv{"type", "batchAck", "msgIds", []any{}}),
			want: cmd("batchAck", func(c *Command) { c.HasMsgIDs = true }),
		},
		{
			name: "batchAck nil msgIds",
			give: enc(kv{"type", "batchAck", "msgIds", nil}),
			want: cmd("batchAck", nil),
		},
		{
			name:    "batchAck msgIds must be an array",
			give:    enc(kv{"type", "batchAck", "msgIds", "m1"}),
			wantErr: "[batchAck] batchAck: msgIds must be an array of strings",
		},
		{
			name:    "batchAck msgIds must hold strings",
			give:    enc(kv{"type", "batchAck", "msgIds", []any{"m1", 2}}),
			wantErr: "[batchAck] batchAck: msgIds must be an array of strings",
		},

		// keys and type (§1.6, §3.1)
		{
			name: "duplicate keys: the last wins",
			give: enc(kv{"type", "publish", "topic", "a", "topic", "b", "type", "subscribe"}),
			want: cmd("subscribe", func(c *Command) { c.Topic, c.HasTopic = "b", true }),
		},
		{
			name: "a later valid duplicate replaces an ill-typed value",
			give: enc(kv{"type", "subscribe", "topic", 1, "topic", "b"}),
			want: cmd("subscribe", func(c *Command) { c.Topic, c.HasTopic = "b", true }),
		},
		{
			name: "unknown keys are skipped",
			give: enc(kv{"options", kv{"deep", []any{1, 2, kv{"x", nil}}}, "type", "unsubscribe", "id", 7, "topic", "t"}),
			want: cmd("unsubscribe", func(c *Command) { c.Topic, c.HasTopic = "t", true }),
		},
		{
			name: "unknown type is not an error",
			give: enc(kv{"type", "futureType", "topic", 5, "msgIds", 1}),
			want: cmd("futureType", nil),
		},
		{
			name: "absent type",
			give: enc(kv{"token", "t"}),
			want: cmd("", func(c *Command) { c.Token, c.HasToken, c.TokenIsString = "t", true, true }),
		},
		{
			name: "empty map",
			give: enc(kv{}),
			want: cmd("", nil),
		},
		{
			name: "type as bin",
			give: enc(kv{"type", bin("ack")}),
			want: cmd("ack", nil),
		},
		{
			name:    "type must be a string",
			give:    enc(kv{"type", 1}),
			wantErr: "type must be a string",
		},
		{
			name:    "type nil is not a string",
			give:    enc(kv{"type", nil}),
			wantErr: "type must be a string",
		},
		{
			name:    "int key",
			give:    enc(kv{1, "x", "type", "publish"}),
			wantErr: "[publish] map keys must be strings",
		},
		{
			name:    "nil key",
			give:    enc(kv{nil, "x"}),
			wantErr: "map keys must be strings",
		},
		{
			name:    "array key",
			give:    enc(kv{"type", "auth", []any{"a"}, "x"}),
			wantErr: "[auth] map keys must be strings",
		},

		// framing (§1.3)
		{name: "array is not a map", give: enc([]any{"type", "auth"}), wantErr: "ErrNotMap"},
		{name: "string is not a map", give: enc("auth"), wantErr: "ErrNotMap"},
		{name: "int is not a map", give: enc(1), wantErr: "ErrNotMap"},
		{name: "nil is not a map", give: []byte{0xc0}, wantErr: "ErrNotMap"},
		{name: "ext is not a map", give: []byte(timestampExt), wantErr: "ErrNotMap"},
		{name: "empty frame", give: []byte{}, wantErr: reasonTruncated},
		{name: "trailing nil", give: cat(enc(kv{"type", "auth"}), []byte{0xc0}), wantErr: "[auth] " + reasonTrailing},
		{name: "two maps", give: cat(enc(kv{"type", "auth"}), enc(kv{})), wantErr: "[auth] " + reasonTrailing},
		{name: "truncated map", give: []byte{0x81, 0xa4, 't', 'y', 'p', 'e'}, wantErr: reasonTruncated},
		{name: "truncated after the type keeps it", give: append([]byte{0x82}, cat(enc(kv{"type", "ack"})[1:], []byte{0xa5, 'm', 's', 'g'})...), wantErr: "[ack] " + reasonTruncated},
		{name: "truncated string value", give: []byte{0x81, 0xa1, 'a', 0xa3, 'x'}, wantErr: reasonTruncated},
		{name: "reserved byte at the top", give: []byte{0xc1}, wantErr: reasonReserved},
		{name: "reserved byte as a key", give: []byte{0x81, 0xc1, 0xc0}, wantErr: reasonReserved},
		{name: "reserved byte inside data", give: enc(kv{"type", "publish", "data", []any{1, raw{0xc1}}}), wantErr: "[publish] " + reasonReserved},
		{name: "reserved byte before the type", give: enc(kv{"data", raw{0xc1}, "type", "publish"}), wantErr: reasonReserved},
		{
			name:    "10000 nested arrays in data",
			give:    enc(kv{"type", "publish", "data", raw(nested(10000, []byte{0xc0}))}),
			wantErr: "[publish] data nesting deeper than 128",
		},
		{
			name:    "10000 nested maps",
			give:    cat(repeat([]byte{0x81, 0xa1, 'k'}, 10000), []byte{0xc0}),
			wantErr: "envelope nesting deeper than 32",
		},
		{
			name: "data nesting 32 levels, past the envelope bound",
			give: enc(kv{"type", "publish", "data", raw(nested(32, []byte{0xc0}))}),
			want: cmd("publish", func(c *Command) { c.Data, c.HasData = nested(32, []byte{0xc0}), true }),
		},
		{
			name:    "an unknown key nesting 32 levels",
			give:    enc(kv{"type", "publish", "extra", raw(nested(32, []byte{0xc0}))}),
			wantErr: "[publish] envelope nesting deeper than 32",
		},
		{name: "map32 of 2^32-1 entries and nothing else", give: []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, wantErr: reasonTruncated},
		{name: "array32 of 2^32-1 elements", give: enc(kv{"data", raw{0xdd, 0xff, 0xff, 0xff, 0xff, 0xc0}}), wantErr: reasonTruncated},
		{name: "str32 declaring 4 GiB", give: []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c'}, wantErr: reasonTruncated},
		{name: "str32 value declaring 4 GiB", give: enc(kv{"topic", raw{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}}), wantErr: reasonTruncated},
		{name: "bin32 declaring 4 GiB", give: enc(kv{"data", raw{0xc6, 0xff, 0xff, 0xff, 0xff}}), wantErr: reasonTruncated},
		{name: "ext32 declaring 4 GiB", give: enc(kv{"data", raw{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}}), wantErr: reasonTruncated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Command
			err := Decode(tt.give, &c)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("Decode(% x) error = %q, want %q", tt.give, got, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(c, tt.want) {
				t.Fatalf("Decode(% x) =\n%+v\nwant\n%+v", tt.give, c, tt.want)
			}
		})
	}
}

func TestDecodeErrNotMapIsUnwrapped(t *testing.T) {
	var c Command
	if err := Decode(enc([]any{}), &c); err != ErrNotMap {
		t.Fatalf("Decode(array) = %v, want ErrNotMap itself", err)
	}
}

func TestDecodeEveryPrefixIsTruncated(t *testing.T) {
	frame := quickstartPublish()
	for n := range len(frame) {
		var c Command
		err := Decode(frame[:n], &c)
		de, ok := err.(*DecodeError)
		if !ok || de.Reason != reasonTruncated {
			t.Fatalf("Decode(first %d of %d bytes) error = %v, want %q", n, len(frame), err, reasonTruncated)
		}
		// `type` comes first, so it is known once its value is complete.
		wantType := ""
		if n >= 14 {
			wantType = "publish"
		}
		if de.Type != wantType {
			t.Fatalf("Decode(first %d of %d bytes) error Type = %q, want %q", n, len(frame), de.Type, wantType)
		}
	}
}

func TestDecodeResetsAndReuses(t *testing.T) {
	var c Command
	first := enc(kv{"type", "subscribe", "topic", "t", "filters", []any{[]any{"a", "b"}, "c"}, "loadBalance", true})
	if err := Decode(first, &c); err != nil {
		t.Fatal(err)
	}
	if err := Decode(enc(kv{"type", "subscribe", "filters", []any{"x"}}), &c); err != nil {
		t.Fatal(err)
	}
	want := cmd("subscribe", func(c *Command) {
		c.Filters = FilterSpec{Kind: FiltersArray, Items: []FilterItem{{Values: []string{"x"}, Valid: true}}, Raw: enc([]any{"x"})}
	})
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("second Decode =\n%+v\nwant\n%+v", c, want)
	}
	// A failed decode leaves no field of the previous message behind.
	if err := Decode([]byte{0xc1}, &c); err == nil {
		t.Fatal("Decode(0xc1) succeeded")
	}
	if c.Type != "" || c.Filters.Kind != FiltersAbsent || len(c.Filters.Items) != 0 {
		t.Fatalf("Command after a failed Decode = %+v, want it reset", c)
	}
}

func TestDecodeStringsAreCopies(t *testing.T) {
	frame := enc(kv{"type", "publish", "topic", "abc", "filters", []any{"f"}, "msgRef", "r"})
	var c Command
	if err := Decode(frame, &c); err != nil {
		t.Fatal(err)
	}
	for i := range frame {
		frame[i] = 'X'
	}
	if c.Topic != "abc" || c.PubFilters[0] != "f" || c.MsgRef != "r" || c.Type != "publish" {
		t.Fatalf("strings changed with the input buffer: %+v", c)
	}
}

func TestDecodeLongFilterArraysAreCut(t *testing.T) {
	items := make([]any, 5000)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	var c Command
	if err := Decode(enc(kv{"type", "subscribe", "filters", items}), &c); err != nil {
		t.Fatal(err)
	}
	if got := len(c.Filters.Items); got != maxFilters+1 {
		t.Fatalf("len(Filters.Items) = %d, want %d", got, maxFilters+1)
	}
	if _, errString := c.Filters.Normalize(); errString != ErrTooManyFilters {
		t.Fatalf("Normalize error = %q, want %q", errString, ErrTooManyFilters)
	}
	if err := Decode(enc(kv{"type", "publish", "filters", items}), &c); err != nil {
		t.Fatal(err)
	}
	if got := len(c.PubFilters); got != maxFilters+1 {
		t.Fatalf("len(PubFilters) = %d, want %d", got, maxFilters+1)
	}
}
