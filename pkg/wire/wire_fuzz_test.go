package wire

import (
	"encoding/json"
	"strings"
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
		enc(kv{"type", "publish", "data", raw(deepData(MaxDataDepth))}),
		enc(kv{"type", "presence", "roomId", "r", "data", raw(deepData(MaxDataDepth + 1))}),
		enc(kv{"type", "subscribe", "extra", raw(deepData(MaxDepth))}),
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
		decodeErr := Decode(b, &c)
		// The recursive reference: nesting is refused exactly when a bound
		// is exceeded, whenever the frame is otherwise well-formed.
		envelope, data, rest, refErr := frameDepths(b)
		withinBounds := envelope <= MaxDepth && data <= MaxDataDepth
		if reason := errString(decodeErr); refErr == nil && withinBounds &&
			(strings.HasSuffix(reason, reasonEnvelopeTooDeep) || strings.HasSuffix(reason, reasonDataTooDeep)) {
			t.Fatalf("Decode(% x) = %q, but the envelope nests %d and data %d", b, reason, envelope, data)
		}
		if decodeErr != nil {
			return
		}
		if refErr != nil || len(rest) != 0 || !withinBounds {
			t.Fatalf("Decode accepted % x: reference %v, %d bytes left, envelope %d, data %d", b, refErr, len(rest), envelope, data)
		}
		if n, err := Validate(b, 1+MaxDataDepth); err != nil || n != len(b) {
			t.Fatalf("Decode accepted % x but Validate = %d, %v", b, n, err)
		}
		for _, v := range []struct {
			raw      []byte
			maxDepth int
		}{{c.Data, MaxDataDepth}, {c.Filters.Raw, MaxDepth - 1}} {
			if v.raw == nil {
				continue
			}
			if n, err := Validate(v.raw, v.maxDepth); err != nil || n != len(v.raw) {
				t.Fatalf("aliased value % x is not exactly one value: %d, %v", v.raw, n, err)
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
	f.Add(deepData(MaxDataDepth), MaxDataDepth)
	f.Add(nested(MaxDataDepth+1, []byte{0x01}), MaxDataDepth)
	f.Add(nested(MaxDataDepth+10, []byte{0x01}), MaxDataDepth+20)
	f.Fuzz(func(t *testing.T, b []byte, maxDepth int) {
		// Bounds up to twice MaxDataDepth exercise every stack: the small
		// one, the MaxDataDepth one and growth past it.
		maxDepth %= 2 * MaxDataDepth
		n, err := Validate(b, maxDepth)
		depth, _, refErr := depthOf(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("Validate failed with n = %d", n)
			}
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("Validate error %T, want *DecodeError", err)
			}
			if refErr == nil && depth <= max(maxDepth, 0) && strings.HasPrefix(errString(err), "nesting deeper") {
				t.Fatalf("Validate(% x, %d) = %v, but the value nests %d", b, maxDepth, err, depth)
			}
			return
		}
		if refErr != nil || depth > max(maxDepth, 0) {
			t.Fatalf("Validate(% x, %d) accepted a value nesting %d (reference error %v)", b, maxDepth, depth, refErr)
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
		`{"type":"publish","data":` + strings.Repeat(`{"a":[`, MaxDataDepth/2) + `"leaf"` + strings.Repeat(`]}`, MaxDataDepth/2) + `}`,
		`{"type":"publish","data":` + strings.Repeat(`[`, MaxDataDepth+1) + strings.Repeat(`]`, MaxDataDepth+1) + `}`,
		`{"extra":` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth) + `}`,
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
			// The JSON bounds are Decode's: what converts never nests too
			// deep for Decode.
			reason := errString(err)
			tooDeep := strings.HasSuffix(reason, reasonEnvelopeTooDeep) || strings.HasSuffix(reason, reasonDataTooDeep)
			if _, convErr := ConvertJSON(nil, text); tooDeep && convErr == nil {
				t.Fatalf("DecodeJSON(%q): converted, then Decode refused it: %q", text, reason)
			}
			return
		}
		if n, verr := Validate(out, 1+MaxDataDepth); verr != nil || n != len(out) {
			t.Fatalf("DecodeJSON(%q) produced % x: %d, %v", text, out, n, verr)
		}
		if envelope, data, _, refErr := frameDepths(out); refErr != nil || envelope > MaxDepth || data > MaxDataDepth {
			t.Fatalf("DecodeJSON(%q) accepted envelope nesting %d, data %d (%v)", text, envelope, data, refErr)
		}
	})
}
