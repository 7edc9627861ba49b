package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"
)

// jsonLenErrorInputs are malformed values, one per error of AppendJSON.
var jsonLenErrorInputs = [][]byte{
	nil,
	{0xc1},
	{0x81, 0xa1, 'k', 0xc1},
	{0xa3, 'a'},
	{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'},
	{0xcb, 0x00},
	{0xc7, 0x05, 0x01, 0x00},
	{0xdf, 0xff, 0xff, 0xff, 0xff},
	{0x92, 0x01},
	{0x81, 0xa1, 'k'},
	{0x81, 0x92, 0x01},
	{0xc0, 0xc0},
	cat(enc(kv{"a", 1}), []byte{0x01}),
	deepData(MaxDataDepth + 1),
	nested(MaxDataDepth+1, []byte{0xc0}),
	cat([]byte{0x81}, nested(MaxDataDepth, []byte{0xc0}), []byte{0xc0}),
}

// jsonLenExtraCases are values whose length is easy to get wrong: every
// escape, digit counts at each power of ten, timestamps with each number of
// fractional digits, floats at the edges of their formats, and scalar keys.
func jsonLenExtraCases() [][]byte {
	cases := [][]byte{
		enc("\x00\x07\x08\x09\x0a\x0c\x0d\x1b\x1f \"\\/\x7f<>&"),
		enc("\xe2\x82"),            // a truncated rune
		enc("\xed\xa0\x80"),        // a UTF-16 surrogate, invalid in UTF-8
		enc("\xf4\x90\x80\x80"),    // above U+10FFFF
		enc("\xc0\xaf"),            // overlong
		enc(bin("\x00\"\\ ☃")),     // bin that is valid UTF-8, with escapes
		enc([]byte{0xe2, 0x82}),    // bin that is not valid UTF-8
		enc([]byte{0xff, 0x00, 1}), // base64 without padding
		enc(kv{[]byte{0xff}, 1}),   // a base64 key
		enc(kv{nil, nil, true, false, f32(0.5), f64(-1e300)}),
		ts96(maxRFC3339Unix, 999_999_999),
		ts96(minRFC3339Unix-1, 0),
		ts64(0, 1),
		ts64(1, 100),
		ts64(1<<34-1, 999_999_990),
		{0xd6, 0xff, 0xff, 0xff, 0xff, 0xff},                         // 32-bit timestamp, year 2106
		{0xd8, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, // fixext16 −1: not a timestamp
		f64(math.SmallestNonzeroFloat64), f64(math.MaxFloat64), f64(-math.MaxFloat64),
		f64(1e-6), f64(9.999999e-7), f64(1e20), f64(123456789012345678), f64(-0.000001234567890123),
		f32(math.SmallestNonzeroFloat32), f32(math.MaxFloat32), f32(1e-6), f32(9.99e-7), f32(1e21), f32(float32(math.NaN())),
	}
	for _, u := range []uint64{0, 1, 9, 10, 99, 100, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, math.MaxInt64, math.MaxUint64} {
		cases = append(cases, msgp.AppendUint64(nil, u), binary.BigEndian.AppendUint64([]byte{0xcf}, u), enc(kv{u, u}))
	}
	for p := uint64(1); p <= 1e19 && p != 0; p *= 10 {
		cases = append(cases, msgp.AppendUint64(nil, p-1), msgp.AppendUint64(nil, p), msgp.AppendUint64(nil, p+1))
		if p <= math.MaxInt64 {
			cases = append(cases, msgp.AppendInt64(nil, -int64(p)), msgp.AppendInt64(nil, -int64(p)+1), msgp.AppendInt64(nil, -int64(p)-1))
		}
	}
	for _, i := range []int64{-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64} {
		cases = append(cases, msgp.AppendInt64(nil, i), binary.BigEndian.AppendUint64([]byte{0xd3}, uint64(i)), enc(kv{i, i}))
	}
	for _, v := range []int64{int64(int8(-100)), int64(int16(-300)), int64(int32(-70000))} {
		cases = append(cases,
			[]byte{0xd0, byte(int8(v))}, // int8 even when the value fits a fixint
			binary.BigEndian.AppendUint16([]byte{0xd1}, uint16(int16(v))),
			binary.BigEndian.AppendUint32([]byte{0xd2}, uint32(int32(v))))
	}
	for digits := range 10 {
		nsec := uint32(0)
		if digits > 0 {
			nsec = 123456789 / uint32(math.Pow10(9-digits)) * uint32(math.Pow10(9-digits))
		}
		cases = append(cases, ts96(1_700_000_000, nsec))
	}
	return cases
}

// jsonCorpus returns every value the JSON tests of the package know: the
// AppendJSON cases, the fuzz seeds and their data, the values above, the
// error inputs, and the seed corpus of testdata/fuzz (msgpack frames of
// FuzzDecode as they are, JSON texts of FuzzDecodeJSON converted).
func jsonCorpus(t testing.TB) [][]byte {
	var out [][]byte
	for _, tt := range appendJSONCases {
		out = append(out, tt.give)
	}
	frames := fuzzSeeds()
	for _, name := range []string{"FuzzDecode", "FuzzDecodeJSON"} {
		for _, v := range readCorpus(t, name) {
			if name == "FuzzDecodeJSON" {
				if m, err := ConvertJSON(nil, v); err == nil {
					v = m
				}
			}
			frames = append(frames, v)
		}
	}
	for _, frame := range frames {
		out = append(out, frame)
		var c Command
		if Decode(frame, &c) == nil && c.Data != nil {
			out = append(out, c.Data)
		}
	}
	out = append(out, jsonLenExtraCases()...)
	out = append(out, jsonLenErrorInputs...)
	return append(out, cat([]byte{0x81}, nested(MaxDataDepth-1, []byte{0xc0}), []byte{0x01}))
}

// readCorpus returns the []byte inputs of testdata/fuzz/target.
func readCorpus(t testing.TB, target string) [][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no seed corpus for %s: %v", target, err)
	}
	var out [][]byte
	for _, p := range paths {
		text, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(text)), "\n")
		if len(lines) != 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") || !strings.HasSuffix(lines[1], ")") {
			t.Fatalf("%s: not a one-[]byte corpus file", p)
		}
		v, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out = append(out, []byte(v))
	}
	return out
}

// checkJSONLen fails t unless JSONLen(b) is len(AppendJSON(nil, b)) with an
// error of the same Reason.
func checkJSONLen(t *testing.T, b []byte) {
	t.Helper()
	js, wantErr := AppendJSON(nil, b)
	n, err := JSONLen(b)
	if n != len(js) || errString(err) != errString(wantErr) {
		t.Fatalf("JSONLen(% x) = %d, %v; AppendJSON gives %d bytes %q, %v", b, n, err, len(js), js, wantErr)
	}
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) || de.Type != "" {
			t.Fatalf("JSONLen(% x) error %T %v, want a *DecodeError like AppendJSON's", b, err, err)
		}
	}
}

func TestJSONLen(t *testing.T) {
	for _, tt := range appendJSONCases {
		t.Run(tt.name, func(t *testing.T) {
			if n, err := JSONLen(tt.give); err != nil || n != len(tt.want) {
				t.Fatalf("JSONLen(% x) = %d, %v; want %d (%s)", tt.give, n, err, len(tt.want), tt.want)
			}
		})
	}
	for i, b := range jsonCorpus(t) {
		t.Run("corpus/"+strconv.Itoa(i), func(t *testing.T) { checkJSONLen(t, b) })
	}
}

func TestJSONLenErrors(t *testing.T) {
	for _, b := range jsonLenErrorInputs {
		n, err := JSONLen(b)
		if err == nil || n != 0 {
			t.Fatalf("JSONLen(% x) = %d, %v; want 0 and an error", b, n, err)
		}
		checkJSONLen(t, b)
	}
}

func TestDecimalLen(t *testing.T) {
	check := func(u uint64) {
		if got, want := decimalLen(u), len(strconv.FormatUint(u, 10)); got != want {
			t.Fatalf("decimalLen(%d) = %d, want %d", u, got, want)
		}
	}
	for u := range uint64(100_000) {
		check(u)
	}
	for shift := range 64 {
		u := uint64(1) << shift
		check(u - 1)
		check(u)
		check(u + 1)
	}
	for p := uint64(10); p <= 1e19; p *= 10 {
		check(p - 1)
		check(p)
		check(p + 1)
		if p == 1e19 {
			break
		}
	}
	check(math.MaxUint64)
	for _, v := range []int64{0, -1, -9, -10, math.MinInt64, math.MinInt64 + 1, math.MaxInt64} {
		if got, want := signedLen(v), len(strconv.FormatInt(v, 10)); got != want {
			t.Fatalf("signedLen(%d) = %d, want %d", v, got, want)
		}
	}
}

// TestJSONLenAllocs checks that JSONLen does not allocate on well-formed
// input (an error is a new *DecodeError, as AppendJSON's).
func TestJSONLenAllocs(t *testing.T) {
	for _, give := range [][]byte{
		sampleMessage().Data,
		deepData(MaxDataDepth),
		enc(kv{"f", f64(math.Pi), "g", f32(-1e-7), "t", ts96(1, 5), "b", []byte{0xff}, "k", kv{[]any{1}, "\x00"}}),
	} {
		allocs := testing.AllocsPerRun(100, func() { _, _ = JSONLen(give) })
		if allocs != 0 {
			t.Fatalf("JSONLen(% x) allocates %v times per call, want 0", give, allocs)
		}
	}
}

func FuzzJSONLenMatchesAppendJSON(f *testing.F) {
	for _, b := range jsonCorpus(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkJSONLen(t, b)
		// AppendJSON onto a prefix adds exactly JSONLen bytes.
		n, err := JSONLen(b)
		got, _ := AppendJSON([]byte("prefix"), b)
		if err == nil && len(got) != len("prefix")+n || !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("AppendJSON(prefix, % x) = %q; JSONLen = %d, %v", b, got, n, err)
		}
	})
}

func BenchmarkJSONLen(b *testing.B) {
	for _, c := range jsonBenchCases() {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.give)))
			for b.Loop() {
				if _, err := JSONLen(c.give); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestMayEscape(t *testing.T) {
	escaped := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf }
	for c := range 256 {
		for at := range 8 {
			word := []byte("abcdefgh")
			word[at] = byte(c)
			if got := mayEscape(binary.LittleEndian.Uint64(word)); got != escaped(byte(c)) {
				t.Fatalf("mayEscape(%q) = %v", word, got)
			}
		}
	}
	// Every pair of the bytes around the edges, anywhere in the word.
	edges := []byte{0x00, 0x01, 0x1f, 0x20, 0x21, '"', '#', '[', '\\', ']', 0x7e, 0x7f, 0x80, 0xff}
	for _, c := range edges {
		for _, d := range edges {
			for at := range 7 {
				word := []byte("        ")
				word[at], word[at+1] = c, d
				if got := mayEscape(binary.LittleEndian.Uint64(word)); got != (escaped(c) || escaped(d)) {
					t.Fatalf("mayEscape(%q) = %v", word, got)
				}
			}
		}
	}
}
