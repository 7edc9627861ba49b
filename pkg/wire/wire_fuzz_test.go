package wire

import (
	"encoding/json"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// fuzzSeeds are msgpack inputs shared by the fuzz targets.
func fuzzSeeds() [][]byte {
	return [][]byte{
		quickstartPublish(),
		enc(kv{"type", "auth", "token", "dev-token-alice", "protocolVersion", 2, "reconnect", true}),
		enc(kv{"type", "subscribe", "topic", "t", "qos", 1, "loadBalance", true, "loadBalanceGroup", "g", "filters", []any{"a", []any{"B", "c"}, 1}}),
		enc(kv{"type", "setFilters", "topic", "t", "filters", nil}),
		enc(kv{"type", "publish", "topic", "t", "data", nil, "filters", []any{"A", 2}, "msgRef", "r"}),
		enc(kv{bin("type"), bin("batchAck"), bin("msgIds"), []any{"a", bin("b")}}),
		enc(kv{"type", "presence", "roomId", "general", "data", kv{"at", msgpTime()}}),
		enc(kv{1, 2, "type", "ack"}),
		enc(kv{"type", "publish", "data", raw(nested(40, []byte{0xc0}))}),
		{0xdf, 0xff, 0xff, 0xff, 0xff},
		{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
		{0x81, 0xc1, 0xc0},
		cat(enc(kv{"type", "auth"}), []byte{0xc0}),
		{0xc7, 0x01, 0x05, 0x00},
		{},
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Command
		if err := Decode(b, &c); err != nil {
			return
		}
		if n, err := Validate(b, MaxDepth); err != nil || n != len(b) {
			t.Fatalf("Decode accepted % x but Validate = %d, %v", b, n, err)
		}
		for _, v := range [][]byte{c.Data, c.Filters.Raw} {
			if v == nil {
				continue
			}
			if n, err := Validate(v, MaxDepth); err != nil || n != len(v) {
				t.Fatalf("aliased value % x is not exactly one value: %d, %v", v, n, err)
			}
		}
		if c.HasData != (c.Data != nil) {
			t.Fatalf("HasData = %v with Data % x", c.HasData, c.Data)
		}
		if c.QoS < 0 || c.QoS > 2 || c.ProtocolVersion < 1 {
			t.Fatalf("out of range defaults: qos %d, protocolVersion %d", c.QoS, c.ProtocolVersion)
		}
		if len(c.Filters.Items) > maxFilters+1 || len(c.PubFilters) > maxFilters+1 {
			t.Fatalf("filter arrays not cut: %d items, %d publish filters", len(c.Filters.Items), len(c.PubFilters))
		}
		c.Filters.Normalize()
		PublishFilter(&c)
	})
}

func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s, MaxDepth)
	}
	f.Add([]byte{0x91, 0x91, 0x90}, 2)
	f.Fuzz(func(t *testing.T, b []byte, maxDepth int) {
		maxDepth %= 2 * MaxDepth
		n, err := Validate(b, maxDepth)
		if err != nil {
			if n != 0 {
				t.Fatalf("Validate failed with n = %d", n)
			}
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("Validate error %T, want *DecodeError", err)
			}
			return
		}
		if n < 1 || n > len(b) {
			t.Fatalf("Validate(% x) = %d, outside 1..%d", b, n, len(b))
		}
		// msgp's own (recursive) skipper must agree on the length.
		rest, skipErr := msgp.Skip(b)
		if skipErr != nil || len(b)-len(rest) != n {
			t.Fatalf("Validate(% x) = %d but msgp.Skip read %d, %v", b, n, len(b)-len(rest), skipErr)
		}
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"type":"publish","topic":"demo/general/messages","data":{"text":"hello from alice"},"qos":1,"echo":true}`,
		`{"type":"subscribe","topic":"t","filters":["a",["B","c"]],"loadBalanceGroup":null}`,
		`{"type":"auth","token":"x","protocolVersion":2.5}`,
		`{"data":[1,-1,1.5e300,18446744073709551615,"s",true,null,{"a":[]}]}`,
		`[[[[]]]]`, `{`, ``, `{} {}`, `"x"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		var c Command
		out, err := DecodeJSON(text, &c, nil)
		if err == nil && !json.Valid(text) {
			t.Fatalf("DecodeJSON accepted invalid JSON %q", text)
		}
		if err != nil {
			if _, isDecodeErr := err.(*DecodeError); !isDecodeErr && err != ErrNotMap {
				t.Fatalf("DecodeJSON error %T %v", err, err)
			}
			return
		}
		if n, verr := Validate(out, MaxDepth); verr != nil || n != len(out) {
			t.Fatalf("DecodeJSON(%q) produced % x: %d, %v", text, out, n, verr)
		}
	})
}
