package wire

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeJSON(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		want    Command
		wantErr string
	}{
		{
			name: "quickstart publish",
			give: `{"type":"publish","topic":"demo/general/messages","data":{"text":"hello from alice"},"qos":1,"echo":true}`,
			want: cmd("publish", func(c *Command) {
				c.Topic, c.HasTopic = "demo/general/messages", true
				c.Data, c.HasData = enc(kv{"text", "hello from alice"}), true
			}),
		},
		{
			name: "auth with whitespace",
			give: " \n{ \"type\" : \"auth\", \"token\": \"dev-token-bob\", \"protocolVersion\": 2 }\r\n",
			want: cmd("auth", func(c *Command) {
				c.Token, c.HasToken, c.TokenIsString = "dev-token-bob", true, true
				c.ProtocolVersion = 2
			}),
		},
		{
			name: "protocolVersion as a JSON float counts as 1",
			give: `{"type":"auth","protocolVersion":2.0}`,
			want: cmd("auth", nil),
		},
		{
			name: "numbers keep their kind",
			give: `{"type":"publish","data":[0,-1,127,128,-33,65536,9223372036854775807,18446744073709551615,1.5,-0.25,1e3,null,true,false,"s",{},[]]}`,
			want: cmd("publish", func(c *Command) {
				c.Data, c.HasData = enc([]any{0, -1, 127, uint64(128), -33, uint64(65536), uint64(math.MaxInt64), uint64(math.MaxUint64),
					1.5, -0.25, 1000.0, nil, true, false, "s", kv{}, []any{}}), true
			}),
		},
		{
			name: "large containers get 16-bit headers",
			give: `{"type":"publish","data":[` + strings.TrimSuffix(strings.Repeat(`"x",`, 20), ",") + `],"filters":["a"]}`,
			want: cmd("publish", func(c *Command) {
				c.Data, c.HasData = enc([]any{"x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x", "x"}), true
				c.PubFilters, c.HasPubFilters = []string{"a"}, true
			}),
		},
		{
			name: "key order and duplicates are kept",
			give: `{"type":"publish","data":{"b":1,"a":2,"b":3},"topic":"x","topic":"y"}`,
			want: cmd("publish", func(c *Command) {
				c.Topic, c.HasTopic = "y", true
				c.Data, c.HasData = enc(kv{"b", 1, "a", 2, "b", 3}), true
			}),
		},
		{
			name: "subscribe filters",
			give: `{"type":"subscribe","topic":"t","filters":["a",["B","c"]]}`,
			want: cmd("subscribe", func(c *Command) {
				c.Topic, c.HasTopic = "t", true
				c.Filters = FilterSpec{
					Kind:  FiltersArray,
					Items: []FilterItem{{Values: []string{"a"}, Valid: true}, {Values: []string{"B", "c"}, Group: true, Valid: true}},
					Raw:   enc([]any{"a", []any{"B", "c"}}),
				}
			}),
		},
		{name: "empty text", give: "", wantErr: "invalid json: empty text"},
		{name: "blank text", give: " \n\t", wantErr: "invalid json: empty text"},
		{name: "unterminated object", give: `{"type":"auth"`, wantErr: "invalid json: unexpected end of input"},
		{name: "missing value", give: `{"type":}`, wantErr: "invalid json: invalid character '}' looking for beginning of value"},
		{name: "bare word", give: `nope`, wantErr: "invalid json: invalid character 'o' in literal null (expecting 'u')"},
		{name: "non-string key", give: `{1:2}`, wantErr: "invalid json: invalid character '1'"},
		{name: "trailing value", give: `{} {}`, wantErr: "invalid json: trailing data after the value"},
		{name: "trailing garbage", give: `{}x`, wantErr: "invalid json: invalid character 'x' looking for beginning of value"},
		{name: "number out of range", give: `{"data":1e400}`, wantErr: "invalid json: number 1e400 out of range"},
		{name: "array is not a map", give: `["type","auth"]`, wantErr: "ErrNotMap"},
		{name: "string is not a map", give: `"auth"`, wantErr: "ErrNotMap"},
		{name: "field rules apply", give: `{"type":"subscribe","topic":5}`, wantErr: "[subscribe] subscribe: topic must be a string"},
		{name: "envelope nesting of 33", give: `{"extra":` + strings.Repeat("[", 32) + strings.Repeat("]", 32) + `}`, wantErr: "envelope nesting deeper than 32"},
		{name: "nesting of 10000", give: strings.Repeat("[", 10000), wantErr: "envelope nesting deeper than 32"},
		{name: "data nesting of 10000", give: `{"data":` + strings.Repeat("[", 10000), wantErr: "data nesting deeper than 128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Command
			_, err := DecodeJSON([]byte(tt.give), &c, nil)
			if got := errString(err); got != tt.wantErr {
				t.Fatalf("DecodeJSON(%q) error = %q, want %q", tt.give, got, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !reflect.DeepEqual(c, tt.want) {
				t.Fatalf("DecodeJSON(%q) =\n%+v\nwant\n%+v", tt.give, c, tt.want)
			}
		})
	}
}

func TestDecodeJSONNesting32IsAllowed(t *testing.T) {
	text := `{"type":"publish","data":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`
	var c Command
	if _, err := DecodeJSON([]byte(text), &c, nil); err != nil {
		t.Fatalf("DecodeJSON: %v", err)
	}
	if want := nested(30, []byte{0x90}); !bytes.Equal(c.Data, want) {
		t.Fatalf("Data = % x, want % x", c.Data, want)
	}
}

func TestDecodeJSONAppendsToScratch(t *testing.T) {
	scratch := append(make([]byte, 0, 256), "keep"...)
	var c Command
	out, err := DecodeJSON([]byte(`{"type":"presence","data":{"n":1}}`), &c, scratch)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out, []byte("keep")) {
		t.Fatalf("scratch prefix lost: %q", out)
	}
	if want := cat([]byte("keep"), enc(kv{"type", "presence", "data", kv{"n", 1}})); !bytes.Equal(out, want) {
		t.Fatalf("DecodeJSON returned % x, want % x", out, want)
	}
	if &out[0] != &scratch[:1][0] {
		t.Fatal("DecodeJSON did not reuse the scratch capacity")
	}
	if !bytes.Equal(c.Data, enc(kv{"n", 1})) {
		t.Fatalf("Data = % x", c.Data)
	}

	out, err = DecodeJSON([]byte(`{`), &c, scratch)
	if err == nil || !bytes.Equal(out, []byte("keep")) {
		t.Fatalf("DecodeJSON(invalid) = %q, %v; want the scratch unchanged and an error", out, err)
	}
}
