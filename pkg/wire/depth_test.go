package wire

import (
	"bytes"
	"strings"
	"testing"
)

// The two nesting bounds: MaxDepth for the envelope, MaxDataDepth for the
// value of a top-level `data` key, counted from that value.

func TestNestingReasonsNameTheBound(t *testing.T) {
	if want := "envelope nesting deeper than 32"; reasonEnvelopeTooDeep != want || MaxDepth != 32 {
		t.Fatalf("envelope reason %q, MaxDepth %d; the docs say %q", reasonEnvelopeTooDeep, MaxDepth, want)
	}
	if want := "data nesting deeper than 128"; reasonDataTooDeep != want || MaxDataDepth != 128 {
		t.Fatalf("data reason %q, MaxDataDepth %d; the docs say %q", reasonDataTooDeep, MaxDataDepth, want)
	}
}

func TestDecodeNestingBounds(t *testing.T) {
	arrays := func(depth int) []byte { return nested(depth, []byte{0xa1, 'x'}) }
	maps := func(depth int) []byte { return cat(repeat([]byte{0x81, 0xa1, 'k'}, depth), []byte{0xc0}) }
	// wide puts a three-element array at every level but the innermost, so
	// that every container stays open with values left when the stack moves
	// to the larger one.
	wide := func(depth int) []byte {
		return cat(repeat([]byte{0x93, 0x01, 0xa1, 'w'}, depth-1), []byte{0x90})
	}
	tests := []struct {
		name    string
		give    []byte
		data    []byte // the expected Data when the frame decodes
		wantErr string
	}{
		{name: "data nesting 60, maps and arrays", give: enc(kv{"type", "publish", "topic", "t", "data", raw(deepData(60))}), data: deepData(60)},
		{name: "data at the bound", give: enc(kv{"type", "publish", "data", raw(deepData(MaxDataDepth))}), data: deepData(MaxDataDepth)},
		{name: "data arrays at the bound", give: enc(kv{"type", "publish", "data", raw(arrays(MaxDataDepth))}), data: arrays(MaxDataDepth)},
		{name: "data maps at the bound", give: enc(kv{"type", "publish", "data", raw(maps(MaxDataDepth))}), data: maps(MaxDataDepth)},
		{name: "data wide at every level, at the bound", give: enc(kv{"type", "publish", "data", raw(wide(MaxDataDepth))}), data: wide(MaxDataDepth)},
		{name: "data one past the bound", give: enc(kv{"type", "publish", "data", raw(deepData(MaxDataDepth + 1))}), wantErr: "[publish] data nesting deeper than 128"},
		{name: "data arrays one past the bound", give: enc(kv{"type", "publish", "data", raw(arrays(MaxDataDepth + 1))}), wantErr: "[publish] data nesting deeper than 128"},
		{name: "data maps one past the bound", give: enc(kv{"type", "publish", "data", raw(maps(MaxDataDepth + 1))}), wantErr: "[publish] data nesting deeper than 128"},
		{name: "data wide one past the bound", give: enc(kv{"type", "publish", "data", raw(wide(MaxDataDepth + 1))}), wantErr: "[publish] data nesting deeper than 128"},
		{name: "data past the bound before the type", give: enc(kv{"data", raw(deepData(MaxDataDepth + 1)), "type", "publish"}), wantErr: "data nesting deeper than 128"},
		{
			name: "deep data inside arrays and maps, at the bound",
			give: enc(kv{"type", "publish", "data", []any{1, kv{"a", []any{"x", raw(deepData(MaxDataDepth - 3))}}, 2}}),
			data: enc([]any{1, kv{"a", []any{"x", raw(deepData(MaxDataDepth - 3))}}, 2}),
		},
		{
			name:    "deep data inside arrays and maps, past the bound",
			give:    enc(kv{"type", "publish", "data", []any{1, kv{"a", []any{"x", raw(deepData(MaxDataDepth - 2))}}, 2}}),
			wantErr: "[publish] data nesting deeper than 128",
		},
		{name: "presence data at the bound", give: enc(kv{"type", "presence", "roomId", "r", "data", raw(deepData(MaxDataDepth))}), data: deepData(MaxDataDepth)},
		{name: "presence data past the bound", give: enc(kv{"type", "presence", "roomId", "r", "data", raw(deepData(MaxDataDepth + 1))}), wantErr: "[presence] data nesting deeper than 128"},
		{name: "a bin data key is data", give: enc(kv{"type", "publish", bin("data"), raw(deepData(MaxDataDepth))}), data: deepData(MaxDataDepth)},
		{
			name:    "every data value is bounded, not only the last",
			give:    enc(kv{"type", "publish", "data", raw(deepData(MaxDataDepth + 1)), "data", 1}),
			wantErr: "[publish] data nesting deeper than 128",
		},

		{
			name: "data nesting 60 beside an envelope field at its bound",
			give: enc(kv{"type", "publish", "extra", raw(deepData(MaxDepth - 1)), "data", raw(deepData(60))}),
			data: deepData(60),
		},
		{name: "an unknown key one past the envelope bound", give: enc(kv{"type", "publish", "extra", raw(deepData(MaxDepth))}), wantErr: "[publish] envelope nesting deeper than 32"},
		{
			name:    "deep envelope inside arrays and maps",
			give:    enc(kv{"type", "subscribe", "extra", []any{1, kv{"a", raw(arrays(MaxDepth - 2))}}}),
			wantErr: "[subscribe] envelope nesting deeper than 32",
		},
		{
			name:    "a data key below the top level is envelope",
			give:    enc(kv{"type", "publish", "extra", kv{"data", raw(deepData(MaxDepth - 1))}}),
			wantErr: "[publish] envelope nesting deeper than 32",
		},
		{name: "filters past the envelope bound", give: enc(kv{"type", "subscribe", "topic", "t", "filters", raw(arrays(MaxDepth))}), wantErr: "[subscribe] envelope nesting deeper than 32"},
		{name: "msgIds past the envelope bound", give: enc(kv{"type", "batchAck", "msgIds", raw(arrays(MaxDepth))}), wantErr: "[batchAck] envelope nesting deeper than 32"},
		{name: "a deep map key", give: cat([]byte{0x82}, enc("type"), enc("ack"), arrays(MaxDepth), []byte{0xc0}), wantErr: "[ack] envelope nesting deeper than 32"},
		{name: "a top-level array at the bound", give: arrays(MaxDepth), wantErr: "ErrNotMap"},
		{name: "a top-level array past the bound", give: arrays(MaxDepth + 1), wantErr: "envelope nesting deeper than 32"},
		{name: "a top-level array holding deep data", give: enc([]any{kv{"data", raw(arrays(MaxDepth))}}), wantErr: "envelope nesting deeper than 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Command
			err := Decode(tt.give, &c)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("Decode error = %q, want %q", got, tt.wantErr)
			}
			if err == nil && (!c.HasData || !bytes.Equal(c.Data, tt.data)) {
				t.Fatalf("Data = % x, want % x", head(c.Data), head(tt.data))
			}
		})
	}
}

func TestDecodeDeepDataDoesNotAllocate(t *testing.T) {
	frame := enc(kv{"type", "publish", "extra", raw(deepData(MaxDepth - 1)), "data", raw(deepData(MaxDataDepth))})
	var c Command
	allocs := testing.AllocsPerRun(100, func() {
		if err := Decode(frame, &c); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Decode allocates %.0f times per run, want 0", allocs)
	}
}

func TestValidateAtTheDataBoundDoesNotAllocate(t *testing.T) {
	for _, give := range [][]byte{deepData(MaxDataDepth), cat(repeat([]byte{0x92, 0x01}, MaxDataDepth), []byte{0x01})} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := Validate(give, MaxDataDepth); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Fatalf("Validate(% x..., MaxDataDepth) allocates %.0f times per run, want 0", head(give), allocs)
		}
	}
}

// jsonDeep returns JSON text nesting depth levels, objects {"k": ...} and
// arrays taking turns around "leaf": the JSON form of deepData(depth).
func jsonDeep(depth int) string {
	var open, close strings.Builder
	for i := range depth {
		if i%2 == 0 {
			open.WriteString(`{"k":`)
		} else {
			open.WriteString(`[`)
		}
	}
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			close.WriteString(`}`)
		} else {
			close.WriteString(`]`)
		}
	}
	return open.String() + `"leaf"` + close.String()
}

func TestDecodeJSONNestingBounds(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		data    []byte
		wantErr string
	}{
		{name: "data nesting 60", give: `{"type":"publish","topic":"t","data":` + jsonDeep(60) + `}`, data: deepData(60)},
		{name: "data at the bound", give: `{"type":"publish","data":` + jsonDeep(MaxDataDepth) + `}`, data: deepData(MaxDataDepth)},
		{name: "data one past the bound", give: `{"type":"publish","data":` + jsonDeep(MaxDataDepth+1) + `}`, wantErr: "data nesting deeper than 128"},
		{name: "presence data at the bound", give: `{"type":"presence","roomId":"r","data":` + jsonDeep(MaxDataDepth) + `}`, data: deepData(MaxDataDepth)},
		{name: "an escaped data key is data", give: `{"type":"publish","d\u0061ta":` + jsonDeep(MaxDataDepth) + `}`, data: deepData(MaxDataDepth)},
		{
			name: "deep data inside arrays and maps, at the bound",
			give: `{"type":"publish","data":[1,{"a":["x",` + jsonDeep(MaxDataDepth-3) + `]},2]}`,
			data: enc([]any{1, kv{"a", []any{"x", raw(deepData(MaxDataDepth - 3))}}, 2}),
		},
		{
			name:    "deep data inside arrays and maps, past the bound",
			give:    `{"type":"publish","data":[1,{"a":["x",` + jsonDeep(MaxDataDepth-2) + `]},2]}`,
			wantErr: "data nesting deeper than 128",
		},
		{
			name:    "the bound applies to every data value",
			give:    `{"data":` + jsonDeep(MaxDataDepth+1) + `,"data":1}`,
			wantErr: "data nesting deeper than 128",
		},
		{
			name: "data nesting 60 beside an envelope field at its bound",
			give: `{"type":"publish","extra":` + jsonDeep(MaxDepth-1) + `,"data":` + jsonDeep(60) + `}`,
			data: deepData(60),
		},
		{
			name:    "the envelope bound applies again after data",
			give:    `{"type":"publish","data":` + jsonDeep(60) + `,"extra":` + jsonDeep(MaxDepth) + `}`,
			wantErr: "envelope nesting deeper than 32",
		},
		{name: "an unknown key one past the envelope bound", give: `{"type":"publish","extra":` + jsonDeep(MaxDepth) + `}`, wantErr: "envelope nesting deeper than 32"},
		{name: "a data string value is not a data key", give: `{"type":"data","extra":` + jsonDeep(MaxDepth) + `}`, wantErr: "envelope nesting deeper than 32"},
		{name: "a data key below the top level is envelope", give: `{"extra":{"data":` + jsonDeep(MaxDepth-1) + `}}`, wantErr: "envelope nesting deeper than 32"},
		{name: "a top-level array holding deep data", give: `[{"data":` + jsonDeep(MaxDepth) + `}]`, wantErr: "envelope nesting deeper than 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Command
			_, err := DecodeJSON([]byte(tt.give), &c, nil)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("DecodeJSON error = %q, want %q", got, tt.wantErr)
			}
			if err == nil && !bytes.Equal(c.Data, tt.data) {
				t.Fatalf("Data = % x, want % x", head(c.Data), head(tt.data))
			}
		})
	}
}
