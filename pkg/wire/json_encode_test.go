package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"
)

// ts96 is a 96-bit MessagePack timestamp (ext −1, 12 bytes).
func ts96(sec int64, nsec uint32) raw {
	b := []byte{0xc7, 12, 0xff}
	b = binary.BigEndian.AppendUint32(b, nsec)
	return raw(binary.BigEndian.AppendUint64(b, uint64(sec)))
}

// ts64 is a 64-bit MessagePack timestamp (fixext8 −1).
func ts64(sec uint64, nsec uint64) raw {
	return raw(binary.BigEndian.AppendUint64([]byte{0xd7, 0xff}, nsec<<34|sec))
}

// f32 and f64 are explicit float encodings.
func f32(f float32) raw { return raw(msgp.AppendFloat32(nil, f)) }
func f64(f float64) raw { return raw(msgp.AppendFloat64(nil, f)) }

var appendJSONCases = []struct {
	name string
	give []byte
	want string
}{
	{name: "nil", give: []byte{0xc0}, want: `null`},
	{name: "true", give: []byte{0xc3}, want: `true`},
	{name: "false", give: []byte{0xc2}, want: `false`},
	{name: "positive fixint", give: []byte{0x7f}, want: `127`},
	{name: "negative fixint", give: []byte{0xe0}, want: `-32`},
	{name: "uint8", give: []byte{0xcc, 0xc8}, want: `200`},
	{name: "uint16", give: []byte{0xcd, 0x12, 0x34}, want: `4660`},
	{name: "uint32", give: []byte{0xce, 0xff, 0xff, 0xff, 0xff}, want: `4294967295`},
	{name: "uint64 max", give: []byte{0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, want: `18446744073709551615`},
	{name: "int8", give: []byte{0xd0, 0x9c}, want: `-100`},
	{name: "int16", give: []byte{0xd1, 0xff, 0x00}, want: `-256`},
	{name: "int32", give: []byte{0xd2, 0x80, 0x00, 0x00, 0x00}, want: `-2147483648`},
	{name: "int64 min", give: []byte{0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0}, want: `-9223372036854775808`},
	{name: "float32 shortest", give: f32(0.1), want: `0.1`},
	{name: "float64", give: f64(0.1), want: `0.1`},
	{name: "integral float", give: f64(1), want: `1`},
	{name: "negative zero", give: f64(math.Copysign(0, -1)), want: `-0`},
	{name: "large float", give: f64(1e21), want: `1e+21`},
	{name: "small float", give: f64(1e-7), want: `1e-7`},
	{name: "float32 exponent", give: f32(1e-7), want: `1e-7`},
	{name: "NaN", give: f64(math.NaN()), want: `null`},
	{name: "+Inf", give: f64(math.Inf(1)), want: `null`},
	{name: "-Inf float32", give: f32(float32(math.Inf(-1))), want: `null`},
	{name: "str", give: enc("hello"), want: `"hello"`},
	{name: "empty str", give: enc(""), want: `""`},
	{name: "str8", give: enc(string(bytes.Repeat([]byte{'a'}, 40))), want: `"` + string(bytes.Repeat([]byte{'a'}, 40)) + `"`},
	{name: "str escapes", give: enc("a\"b\\c\n\r\t\b\f\x01\x1f"), want: `"a\"b\\c\n\r\t\b\f\u0001\u001f"`},
	{name: "str no HTML escaping", give: enc("<a>&</a>"), want: `"<a>&</a>"`},
	{name: "str unicode", give: enc("héllo ☃ 🦑"), want: `"héllo ☃ 🦑"`},
	{name: "str invalid UTF-8", give: enc("a\xffb\xc3"), want: `"a\ufffdb\ufffd"`},
	{name: "bin UTF-8", give: enc(bin("text ☃")), want: `"text ☃"`},
	{name: "bin binary", give: enc([]byte{0xff, 0x00}), want: `"/wA="`},
	{name: "bin empty", give: enc([]byte{}), want: `""`},
	{name: "timestamp 32", give: msgpTime(), want: `"2023-09-12T06:06:56Z"`},
	{name: "timestamp 64 with nanoseconds", give: ts64(1_700_000_000, 500_000_000), want: `"2023-11-14T22:13:20.5Z"`},
	{name: "timestamp 96 before 1970", give: ts96(-1, 0), want: `"1969-12-31T23:59:59Z"`},
	{name: "timestamp 96 year 0", give: ts96(minRFC3339Unix, 0), want: `"0000-01-01T00:00:00Z"`},
	{name: "timestamp 96 past year 9999", give: ts96(maxRFC3339Unix+1, 0), want: `"` + base64.StdEncoding.EncodeToString(ts96(maxRFC3339Unix+1, 0)[3:]) + `"`},
	{name: "timestamp nanoseconds too large", give: ts64(1, 1_000_000_000), want: `"` + base64.StdEncoding.EncodeToString(ts64(1, 1_000_000_000)[2:]) + `"`},
	{name: "ext -1 of another length", give: []byte{0xc7, 3, 0xff, 1, 2, 3}, want: `"AQID"`},
	{name: "other ext", give: []byte{0xd5, 0x05, 0x01, 0x02}, want: `"AQI="`},
	{name: "ext16 empty payload", give: []byte{0xc8, 0x00, 0x00, 0x07}, want: `""`},
	{name: "empty array", give: enc([]any{}), want: `[]`},
	{name: "empty map", give: enc(kv{}), want: `{}`},
	{name: "array", give: enc([]any{1, "a", nil, []any{}, kv{}}), want: `[1,"a",null,[],{}]`},
	{name: "quickstart data", give: enc(kv{"text", "hello from alice"}), want: `{"text":"hello from alice"}`},
	{name: "nested", give: enc(kv{"a", 1, "b", []any{true, kv{"c", []any{nil}}}, "d", "e"}), want: `{"a":1,"b":[true,{"c":[null]}],"d":"e"}`},
	{name: "key order kept", give: enc(kv{"z", 1, "a", 2}), want: `{"z":1,"a":2}`},
	{name: "duplicate keys kept", give: enc(kv{"a", 1, "a", 2}), want: `{"a":1,"a":2}`},
	{
		name: "scalar keys",
		give: enc(kv{1, "x", -2, "y", f64(1.5), "z", true, 1, nil, 2, bin("k"), 3, []byte{0xff}, 4, msgpTime(), 5, uint64(math.MaxUint64), 6}),
		want: `{"1":"x","-2":"y","1.5":"z","true":1,"null":2,"k":3,"/w==":4,"2023-09-12T06:06:56Z":5,"18446744073709551615":6}`,
	},
	{name: "NaN key", give: enc(kv{f64(math.NaN()), 1}), want: `{"null":1}`},
	{name: "array key", give: enc(kv{[]any{1, 2}, "v"}), want: `{"kgEC":"v"}`},
	{name: "map key", give: enc(kv{kv{"a", "\""}, "v"}), want: `{"gaFhoSI=":"v"}`},
	{name: "map16 and array16", give: cat([]byte{0xde, 0x00, 0x01, 0xa1, 'k', 0xdc, 0x00, 0x02}, []byte{0x01, 0x02}), want: `{"k":[1,2]}`},
	{name: "deep at the bound", give: deepData(MaxDataDepth), want: deepJSON(MaxDataDepth)},
}

// deepJSON is the JSON of deepData(depth).
func deepJSON(depth int) string {
	var open, closing []byte
	for i := range depth {
		if i%2 == 0 {
			open = append(open, `{"k":`...)
			closing = append([]byte{'}'}, closing...)
		} else {
			open = append(open, '[')
			closing = append([]byte{']'}, closing...)
		}
	}
	return string(open) + `"leaf"` + string(closing)
}

func TestAppendJSON(t *testing.T) {
	for _, tt := range appendJSONCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendJSON([]byte("prefix:"), tt.give)
			if err != nil {
				t.Fatalf("AppendJSON(% x) = %v", tt.give, err)
			}
			if string(got) != "prefix:"+tt.want {
				t.Fatalf("AppendJSON(% x)\n got %s\nwant prefix:%s", tt.give, got, tt.want)
			}
			if !json.Valid(got[len("prefix:"):]) {
				t.Fatalf("AppendJSON(% x) = %s: not valid JSON", tt.give, got)
			}
			checkAgainstReference(t, tt.give, got[len("prefix:"):])
		})
	}
}

func TestAppendJSONErrors(t *testing.T) {
	tests := []struct {
		name string
		give []byte
		want string
	}{
		{name: "empty", give: nil, want: reasonTruncated},
		{name: "reserved byte", give: []byte{0xc1}, want: reasonReserved},
		{name: "reserved byte in a map", give: []byte{0x81, 0xa1, 'k', 0xc1}, want: reasonReserved},
		{name: "truncated str", give: []byte{0xa3, 'a'}, want: reasonTruncated},
		{name: "truncated str32 length", give: []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, want: reasonTruncated},
		{name: "truncated float", give: []byte{0xcb, 0x00}, want: reasonTruncated},
		{name: "truncated ext", give: []byte{0xc7, 0x05, 0x01, 0x00}, want: reasonTruncated},
		{name: "map count beyond the input", give: []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, want: reasonTruncated},
		{name: "array missing an element", give: []byte{0x92, 0x01}, want: reasonTruncated},
		{name: "map missing a value", give: []byte{0x81, 0xa1, 'k'}, want: reasonTruncated},
		{name: "truncated container key", give: []byte{0x81, 0x92, 0x01}, want: reasonTruncated},
		{name: "trailing nil", give: []byte{0xc0, 0xc0}, want: reasonJSONTrailing},
		{name: "trailing after a map", give: cat(enc(kv{"a", 1}), []byte{0x01}), want: reasonJSONTrailing},
		{name: "too deep", give: deepData(MaxDataDepth + 1), want: reasonDataTooDeep},
		{name: "arrays too deep", give: nested(MaxDataDepth+1, []byte{0xc0}), want: reasonDataTooDeep},
		// The key is an array at level 2 holding MaxDataDepth-1 more levels.
		{name: "container key too deep", give: cat([]byte{0x81}, nested(MaxDataDepth, []byte{0xc0}), []byte{0xc0}), want: reasonDataTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("keep")
			got, err := AppendJSON(dst, tt.give)
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason != tt.want {
				t.Fatalf("AppendJSON(% x) error = %v, want reason %q", tt.give, err, tt.want)
			}
			if string(got) != "keep" {
				t.Fatalf("AppendJSON(% x) = %q on error, want dst unchanged", tt.give, got)
			}
		})
	}
}

// TestAppendJSONContainerKeyAtTheBound checks that a container key may nest
// exactly as deep as the bound allows.
func TestAppendJSONContainerKeyAtTheBound(t *testing.T) {
	key := nested(MaxDataDepth-1, []byte{0xc0}) // levels 2..MaxDataDepth
	give := cat([]byte{0x81}, key, []byte{0x01})
	got, err := AppendJSON(nil, give)
	if err != nil {
		t.Fatalf("AppendJSON = %v", err)
	}
	want := `{"` + base64.StdEncoding.EncodeToString(key) + `":1}`
	if string(got) != want {
		t.Fatalf("AppendJSON = %s, want %s", got, want)
	}
}

// TestAppendJSONDecodedData checks that every `data` Decode accepts renders.
func TestAppendJSONDecodedData(t *testing.T) {
	for _, frame := range fuzzSeeds() {
		var c Command
		if Decode(frame, &c) != nil || c.Data == nil {
			continue
		}
		if out, err := AppendJSON(nil, c.Data); err != nil || !json.Valid(out) {
			t.Fatalf("data % x of an accepted frame: AppendJSON = %s, %v", c.Data, out, err)
		}
	}
}

func TestAppendJSONAllocs(t *testing.T) {
	give := sampleMessage().Data
	dst := make([]byte, 0, 256)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = AppendJSON(dst[:0], give); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("AppendJSON allocates %v times per call with a large enough dst, want 0", allocs)
	}
}

func FuzzAppendJSON(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	for _, tt := range appendJSONCases {
		f.Add(tt.give)
	}
	f.Add(cat([]byte{0x81}, nested(MaxDataDepth, []byte{0xc0}), []byte{0xc0}))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := AppendJSON([]byte{'x'}, b)
		n, verr := Validate(b, MaxDataDepth)
		wellFormed := verr == nil && n == len(b)
		if wellFormed != (err == nil) {
			t.Fatalf("AppendJSON(% x) error = %v, but Validate = %d, %v for %d bytes", b, err, n, verr, len(b))
		}
		if len(got) == 0 || got[0] != 'x' {
			t.Fatalf("AppendJSON(% x) lost dst: %q", b, got)
		}
		if err != nil {
			if len(got) != 1 {
				t.Fatalf("AppendJSON(% x) = %q with error %v, want dst unchanged", b, got, err)
			}
			return
		}
		js := got[1:]
		if !json.Valid(js) || !utf8.Valid(js) {
			t.Fatalf("AppendJSON(% x) = %q: not valid UTF-8 JSON", b, js)
		}
		checkAgainstReference(t, b, js)
	})
}

// jsonBenchCases are the inputs of BenchmarkAppendJSON and BenchmarkJSONLen.
func jsonBenchCases() []struct {
	name string
	give []byte
} {
	return []struct {
		name string
		give []byte
	}{
		{name: "quickstart", give: enc(kv{"text", "hello from alice"})},
		{name: "message", give: sampleMessage().Data},
		{name: "mixed", give: enc(kv{
			"id", 12345, "user", kv{"name", "Ålice \"A\"", "tags", []any{"a", "b", "c"}},
			"score", 0.75, "blob", []byte{0xff, 0xfe, 0x00, 0x01}, "at", msgpTime(), 7, nil,
		})},
		{name: "deep", give: deepData(MaxDataDepth)},
		{name: "text_4KiB", give: enc(string(bytes.Repeat([]byte("lorem ipsum "), 341)))},
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	for _, c := range jsonBenchCases() {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, 8192)
			b.ReportAllocs()
			b.SetBytes(int64(len(c.give)))
			for b.Loop() {
				var err error
				if dst, err = AppendJSON(dst[:0], c.give); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// checkAgainstReference compares the JSON token stream of got with the one
// of the recursive reference rendering of b.
func checkAgainstReference(t *testing.T, b, got []byte) {
	t.Helper()
	var ref bytes.Buffer
	rest, err := refJSON(&ref, b)
	if err != nil || len(rest) != 0 {
		t.Fatalf("reference rendering of % x failed: %v (%d bytes left)", b, err, len(rest))
	}
	gotTokens, err := tokens(got)
	if err != nil {
		t.Fatalf("AppendJSON(% x) = %s: %v", b, got, err)
	}
	wantTokens, err := tokens(ref.Bytes())
	if err != nil {
		t.Fatalf("reference of % x = %s: %v", b, ref.Bytes(), err)
	}
	if !slices.Equal(gotTokens, wantTokens) {
		t.Fatalf("AppendJSON(% x)\n got %s\nwant %s (reference)", b, got, ref.Bytes())
	}
}

// tokens returns the JSON tokens of js, each rendered with %T:%v.
func tokens(js []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var out []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch v := tok.(type) {
		case json.Delim:
			out = append(out, "delim:"+v.String())
		case string:
			out = append(out, "string:"+v)
		case json.Number:
			out = append(out, "number:"+v.String())
		case bool:
			out = append(out, "bool:"+strconv.FormatBool(v))
		case nil:
			out = append(out, "null")
		}
	}
}

// refJSON renders the msgpack value at the start of b by recursion with the
// msgp reader and encoding/json, following the rules documented on
// AppendJSON. It is the reference for tests only.
func refJSON(w *bytes.Buffer, b []byte) ([]byte, error) {
	marshal := func(v any) {
		js, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		w.Write(js)
	}
	switch msgp.NextType(b) {
	case msgp.MapType:
		n, rest, err := msgp.ReadMapHeaderBytes(b)
		if err != nil {
			return b, err
		}
		w.WriteByte('{')
		for i := range n {
			if i > 0 {
				w.WriteByte(',')
			}
			if rest, err = refKey(w, rest); err != nil {
				return rest, err
			}
			w.WriteByte(':')
			if rest, err = refJSON(w, rest); err != nil {
				return rest, err
			}
		}
		w.WriteByte('}')
		return rest, nil
	case msgp.ArrayType:
		n, rest, err := msgp.ReadArrayHeaderBytes(b)
		if err != nil {
			return b, err
		}
		w.WriteByte('[')
		for i := range n {
			if i > 0 {
				w.WriteByte(',')
			}
			if rest, err = refJSON(w, rest); err != nil {
				return rest, err
			}
		}
		w.WriteByte(']')
		return rest, nil
	case msgp.StrType:
		s, rest, err := msgp.ReadStringZC(b)
		marshal(string(s))
		return rest, err
	case msgp.BinType:
		s, rest, err := msgp.ReadBytesZC(b)
		if utf8.Valid(s) {
			marshal(string(s))
		} else {
			marshal(s) // encoding/json writes []byte as standard base64
		}
		return rest, err
	case msgp.IntType:
		i, rest, err := msgp.ReadInt64Bytes(b)
		marshal(i)
		return rest, err
	case msgp.UintType:
		u, rest, err := msgp.ReadUint64Bytes(b)
		marshal(u)
		return rest, err
	case msgp.Float32Type:
		f, rest, err := msgp.ReadFloat32Bytes(b)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			w.WriteString("null")
		} else {
			marshal(f)
		}
		return rest, err
	case msgp.Float64Type:
		f, rest, err := msgp.ReadFloat64Bytes(b)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			w.WriteString("null")
		} else {
			marshal(f)
		}
		return rest, err
	case msgp.BoolType:
		v, rest, err := msgp.ReadBoolBytes(b)
		marshal(v)
		return rest, err
	case msgp.NilType:
		rest, err := msgp.ReadNilBytes(b)
		w.WriteString("null")
		return rest, err
	}
	typ, payload, rest, err := refExt(b)
	if err != nil {
		return b, err
	}
	if typ == -1 {
		if sec, nsec, ok := refTimestamp(payload); ok {
			marshal(refTime(sec, nsec))
			return rest, nil
		}
	}
	marshal(payload)
	return rest, nil
}

// refKey renders a map key: a string as it is, a container as the base64 of
// its raw bytes, anything else as its rendering inside a string.
func refKey(w *bytes.Buffer, b []byte) ([]byte, error) {
	switch msgp.NextType(b) {
	case msgp.MapType, msgp.ArrayType:
		rest, err := msgp.Skip(b)
		if err != nil {
			return rest, err
		}
		js, _ := json.Marshal(b[:len(b)-len(rest)])
		w.Write(js)
		return rest, nil
	}
	var inner bytes.Buffer
	rest, err := refJSON(&inner, b)
	if err != nil {
		return rest, err
	}
	if inner.Len() > 0 && inner.Bytes()[0] == '"' {
		w.Write(inner.Bytes())
		return rest, nil
	}
	js, _ := json.Marshal(inner.String())
	w.Write(js)
	return rest, nil
}

// refExt splits the ext value at the start of b.
func refExt(b []byte) (typ int8, payload, rest []byte, err error) {
	if len(b) < 2 {
		return 0, nil, b, msgp.ErrShortBytes
	}
	var n, hdr int
	switch b[0] {
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		n, hdr = 1<<(b[0]-0xd4), 2
	case 0xc7:
		n, hdr = int(b[1]), 3
	case 0xc8:
		if len(b) < 4 {
			return 0, nil, b, msgp.ErrShortBytes
		}
		n, hdr = int(binary.BigEndian.Uint16(b[1:])), 4
	case 0xc9:
		if len(b) < 6 {
			return 0, nil, b, msgp.ErrShortBytes
		}
		n, hdr = int(binary.BigEndian.Uint32(b[1:])), 6
	default:
		return 0, nil, b, errors.New("not an ext")
	}
	if len(b) < hdr || len(b)-hdr < n {
		return 0, nil, b, msgp.ErrShortBytes
	}
	return int8(b[hdr-1]), b[hdr : hdr+n], b[hdr+n:], nil
}

// refTime renders a timestamp as RFC 3339 in UTC.
func refTime(sec int64, nsec uint32) string {
	return time.Unix(sec, int64(nsec)).UTC().Format(time.RFC3339Nano)
}

// refTimestamp decodes a timestamp payload, independently of timestamp.
func refTimestamp(p []byte) (sec int64, nsec uint32, ok bool) {
	switch len(p) {
	case 4:
		sec = int64(binary.BigEndian.Uint32(p))
	case 8:
		v := binary.BigEndian.Uint64(p)
		sec, nsec = int64(v&0x3_ffff_ffff), uint32(v>>34)
	case 12:
		nsec, sec = binary.BigEndian.Uint32(p), int64(binary.BigEndian.Uint64(p[4:]))
	default:
		return 0, 0, false
	}
	if nsec >= 1e9 || sec < -62167219200 || sec > 253402300799 {
		return 0, 0, false
	}
	return sec, nsec, true
}
