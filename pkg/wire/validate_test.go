package wire

import (
	"testing"

	"github.com/tinylib/msgp/msgp"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		give     []byte
		maxDepth int
		want     int
		wantErr  string
	}{
		{name: "positive fixint", give: []byte{0x7f}, want: 1},
		{name: "negative fixint", give: []byte{0xe0}, want: 1},
		{name: "nil false true", give: []byte{0xc2, 0xc3}, want: 1},
		{name: "fixstr", give: []byte{0xa3, 'a', 'b', 'c', 0xc0}, want: 4},
		{name: "str8", give: enc(string(make([]byte, 200))), want: 202},
		{name: "str16", give: enc(string(make([]byte, 300))), want: 303},
		{name: "str32", give: cat([]byte{0xdb, 0, 0, 0, 2}, []byte("hi")), want: 7},
		{name: "bin8", give: []byte{0xc4, 1, 9}, want: 3},
		{name: "bin16", give: []byte{0xc5, 0, 1, 9}, want: 4},
		{name: "bin32", give: []byte{0xc6, 0, 0, 0, 1, 9}, want: 6},
		{name: "uint8 uint16 uint32 uint64", give: enc([]any{raw{0xcc, 1}, raw{0xcd, 0, 1}, raw{0xce, 0, 0, 0, 1}, uint64(1 << 63)}), want: 1 + 2 + 3 + 5 + 9},
		{name: "int8 int16 int32 int64", give: enc([]any{raw{0xd0, 1}, raw{0xd1, 0, 1}, raw{0xd2, 0, 0, 0, 1}, int64(-1 << 62)}), want: 1 + 2 + 3 + 5 + 9},
		{name: "float32 float64", give: enc([]any{float32(1.5), 1.1}), want: 1 + 5 + 9},
		{name: "fixext 1 2 4 8 16", give: cat([]byte{0x95}, []byte{0xd4, 1, 0}, []byte{0xd5, 1, 0, 0}, []byte{0xd6, 1, 0, 0, 0, 0}, []byte{0xd7, 1}, make([]byte, 8), []byte{0xd8, 1}, make([]byte, 16)), want: 1 + 3 + 4 + 6 + 10 + 18},
		{name: "ext8 ext16 ext32", give: cat([]byte{0x93}, []byte{0xc7, 1, 5, 0}, []byte{0xc8, 0, 1, 5, 0}, []byte{0xc9, 0, 0, 0, 1, 5, 0}), want: 1 + 4 + 5 + 7},
		{name: "timestamp ext", give: enc(msgpTime()), want: len(enc(msgpTime()))},
		{name: "empty containers", give: []byte{0x92, 0x80, 0x90}, want: 3},
		{name: "array16 and map16", give: []byte{0xdc, 0, 1, 0xde, 0, 1, 0xa0, 0xc0}, want: 8},
		{name: "array32 and map32", give: []byte{0xdd, 0, 0, 0, 1, 0xdf, 0, 0, 0, 1, 0xa0, 0xc0}, want: 12},
		{name: "only the first value", give: []byte{0x91, 0x01, 0x02, 0x03}, want: 2},
		{name: "nested maps", give: enc(kv{"a", kv{"b", []any{1, kv{}}}, "c", "d"}), want: len(enc(kv{"a", kv{"b", []any{1, kv{}}}, "c", "d"}))},

		{name: "empty input", give: nil, wantErr: reasonTruncated},
		{name: "reserved byte", give: []byte{0xc1}, wantErr: reasonReserved},
		{name: "reserved byte deep", give: nested(5, []byte{0xc1}), wantErr: reasonReserved},
		{name: "truncated fixstr", give: []byte{0xa3, 'a'}, wantErr: reasonTruncated},
		{name: "truncated str8 header", give: []byte{0xd9}, wantErr: reasonTruncated},
		{name: "truncated str16 header", give: []byte{0xda, 0}, wantErr: reasonTruncated},
		{name: "truncated ext8 type", give: []byte{0xc7, 1}, wantErr: reasonTruncated},
		{name: "truncated ext16 payload", give: []byte{0xc8, 0, 2, 1, 0}, wantErr: reasonTruncated},
		{name: "truncated fixext16", give: []byte{0xd8, 1, 0}, wantErr: reasonTruncated},
		{name: "truncated uint64", give: []byte{0xcf, 0, 0}, wantErr: reasonTruncated},
		{name: "truncated float32", give: []byte{0xca, 0}, wantErr: reasonTruncated},
		{name: "truncated array16 header", give: []byte{0xdc, 0}, wantErr: reasonTruncated},
		{name: "truncated map32 header", give: []byte{0xdf, 0, 0}, wantErr: reasonTruncated},
		{name: "array missing elements", give: []byte{0x93, 0x01, 0x02}, wantErr: reasonTruncated},
		{name: "map missing a value", give: []byte{0x81, 0xa1, 'k'}, wantErr: reasonTruncated},
		{name: "map32 declaring 2^32-1 entries", give: []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, wantErr: reasonTruncated},
		{name: "array32 declaring 2^32-1 elements", give: cat([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, make([]byte, 64)), wantErr: reasonTruncated},
		{name: "map16 count above the bytes left", give: cat([]byte{0xde, 0x00, 0x10}, make([]byte, 31)), wantErr: reasonTruncated},
		{name: "str32 declaring 4 GiB", give: []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, wantErr: reasonTruncated},
		{name: "bin32 declaring 4 GiB", give: []byte{0xc6, 0xff, 0xff, 0xff, 0xff}, wantErr: reasonTruncated},
		{name: "ext32 declaring 4 GiB", give: []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 1}, wantErr: reasonTruncated},

		{name: "depth 32 allowed", give: nested(32, []byte{1}), want: 33},
		{name: "depth 33 refused", give: nested(33, []byte{1}), wantErr: "nesting deeper than 32"},
		{name: "empty container counts as a level", give: nested(32, []byte{0x90}), wantErr: "nesting deeper than 32"},
		{name: "10000 levels refused", give: nested(10000, []byte{1}), wantErr: "nesting deeper than 32"},
		{name: "10000 levels allowed by a larger bound", give: nested(10000, []byte{1}), maxDepth: 10001, want: 10001},
		{name: "custom bound", give: nested(3, []byte{1}), maxDepth: 2, wantErr: "nesting deeper than 2"},
		{name: "bound zero refuses any container", give: []byte{0x90}, maxDepth: -1, wantErr: "nesting deeper than -1"},
		{name: "bound zero allows scalars", give: []byte{0x01}, maxDepth: -1, want: 1},
		{name: "wide then deep", give: cat([]byte{0x93, 0x01, 0x02}, nested(31, []byte{0x03})), want: 3 + 32},
		{name: "depth 128 allowed by the data bound", give: nested(128, []byte{1}), maxDepth: MaxDataDepth, want: 129},
		{name: "depth 129 refused by the data bound", give: nested(129, []byte{1}), maxDepth: MaxDataDepth, wantErr: "nesting deeper than 128"},
		{name: "depth 33 allowed by a bound of 33", give: nested(33, []byte{1}), maxDepth: 33, want: 34},
		{name: "depth 34 refused by a bound of 33", give: nested(34, []byte{1}), maxDepth: 33, wantErr: "nesting deeper than 33"},
		{name: "depth 200 allowed past the data bound", give: nested(200, []byte{1}), maxDepth: 200, want: 201},
		{name: "open values on every level across both stacks", give: cat(repeat([]byte{0x92, 0x01}, 150), []byte{0x01}), maxDepth: 150, want: 301},
		{name: "truncated past the small stack", give: nested(60, []byte{0x92, 0x01}), maxDepth: MaxDataDepth, wantErr: reasonTruncated},
		{name: "reserved byte past the small stack", give: nested(60, []byte{0xc1}), maxDepth: MaxDataDepth, wantErr: reasonReserved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			maxDepth := tt.maxDepth
			if maxDepth == 0 {
				maxDepth = MaxDepth
			}
			got, err := Validate(tt.give, maxDepth)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("Validate(% x) error = %q, want %q", head(tt.give), gotErr, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("Validate(% x) = %d, want %d", head(tt.give), got, tt.want)
			}
			if err == nil {
				rest, skipErr := msgp.Skip(tt.give)
				if skipErr != nil || len(tt.give)-len(rest) != got {
					t.Fatalf("msgp.Skip disagrees: %d bytes, %v", len(tt.give)-len(rest), skipErr)
				}
			}
		})
	}
}

func TestValidateDoesNotAllocate(t *testing.T) {
	frame := enc(kv{"type", "publish", "data", raw(nested(29, enc(kv{"a", []any{1, 2, "x"}})))})
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Validate(frame, MaxDepth); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Validate allocates %.0f times per run, want 0", allocs)
	}
}

// head returns at most the first 16 bytes of b, for failure messages.
func head(b []byte) []byte { return b[:min(len(b), 16)] }

// msgpTime returns a timestamp ext value, as a JS Date encodes.
func msgpTime() raw { return raw{0xd6, 0xff, 0x65, 0x00, 0x00, 0x00} }
