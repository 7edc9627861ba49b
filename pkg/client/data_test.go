package client_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/client"
)

func TestFromJSONKeepsOrderAndTypes(t *testing.T) {
	d, err := client.FromJSON([]byte(`{"z":1,"a":-2,"f":1.5,"big":18446744073709551615,"s":"é","n":null,"l":[true,false,{}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := d.String(); got != `{"z":1,"a":-2,"f":1.5,"big":18446744073709551615,"s":"é","n":null,"l":[true,false,{}]}` {
		t.Fatalf("round trip %s", got)
	}
	v, err := d.Value()
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if _, ok := m["f"].(float64); !ok {
		t.Fatalf("f is %T", m["f"])
	}
	for _, bad := range []string{``, `{`, `{"a":1} 2`, `[1,]`, `nul`} {
		if _, err := client.FromJSON([]byte(bad)); err == nil {
			t.Errorf("FromJSON(%q) succeeded", bad)
		}
	}
}

func TestMarshal(t *testing.T) {
	type point struct {
		X    int       `json:"x"`
		Name string    `json:"name,omitempty"`
		At   time.Time `json:"at"`
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		in   any
		want string
	}{
		{nil, `null`},
		{"hi", `"hi"`},
		{42, `42`},
		{-1.25, `-1.25`},
		{true, `true`},
		{[]byte("raw"), `"raw"`},
		{map[string]any{"b": 1, "a": []int{1, 2}}, `{"a":[1,2],"b":1}`},
		{point{X: 1, At: at}, `{"x":1,"at":"2026-01-02T03:04:05Z"}`},
		{json.RawMessage(`{"k":"v"}`), `{"k":"v"}`},
		{client.Data{0x93, 0x01, 0x02, 0x03}, `[1,2,3]`},
	}
	for _, c := range cases {
		d, err := client.Marshal(c.in)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", c.in, err)
		}
		if got := d.String(); got != c.want {
			t.Errorf("Marshal(%#v) = %s, want %s", c.in, got, c.want)
		}
	}
	if _, err := client.Marshal(client.Data{0x92, 0x01}); err == nil {
		t.Error("truncated Data accepted")
	}
	if _, err := client.Marshal(client.Data{0x01, 0x02}); err == nil {
		t.Error("two values accepted")
	}
	if _, err := client.Marshal(make(chan int)); err == nil {
		t.Error("a channel was encoded")
	}
}

func TestDataDecode(t *testing.T) {
	d, _ := client.Marshal(map[string]any{"text": "hi", "n": 3, "tags": []string{"a"}})
	var s struct {
		Text string   `json:"text"`
		N    int      `json:"n"`
		Tags []string `json:"tags"`
	}
	if err := d.Decode(&s); err != nil || s.Text != "hi" || s.N != 3 || len(s.Tags) != 1 {
		t.Fatalf("%+v %v", s, err)
	}
	var raw client.Data
	if err := d.Decode(&raw); err != nil || string(raw) != string(d) {
		t.Fatal("raw copy")
	}
	var r msgp.Raw
	if err := d.Decode(&r); err != nil || string(r) != string(d) {
		t.Fatalf("msgp.Unmarshaler: %v", err)
	}
	var n int
	if err := d.Decode(&n); err == nil {
		t.Fatal("a map decoded into an int")
	}
	if err := d.Decode(nil); err == nil {
		t.Fatal("Decode(nil) succeeded")
	}
	// Values JSON cannot hold are rendered as well as possible.
	odd := msgp.AppendFloat64(nil, math.NaN())
	if got := client.Data(odd).String(); got != "null" {
		t.Errorf("NaN rendered as %s", got)
	}
	bin := msgp.AppendBytes(nil, []byte{0xff, 0x00})
	if got := client.Data(bin).String(); got != `"/wA="` {
		t.Errorf("binary rendered as %s", got)
	}
	intKeys := msgp.AppendInt(msgp.AppendMapHeader(nil, 1), 7)
	intKeys = msgp.AppendString(intKeys, "seven")
	if got := client.Data(intKeys).String(); got != `{"7":"seven"}` {
		t.Errorf("int keys rendered as %s", got)
	}
	if got := (client.Data{0xc1}).String(); got == "" || got[0] != '<' {
		t.Errorf("invalid msgpack rendered as %s", got)
	}
}

// TestDataRendersTimestampExtension: a MessagePack timestamp (extension -1,
// what a JavaScript Date encodes to) renders as an RFC 3339 string.
func TestDataRendersTimestampExtension(t *testing.T) {
	d := client.Data{0xd6, 0xff, 0x60, 0x00, 0x00, 0x00} // 32-bit seconds 0x60000000
	js, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if want := `"2021-01-14T08:25:36Z"`; string(js) != want {
		t.Fatalf("rendered %s, want %s", js, want)
	}
}
