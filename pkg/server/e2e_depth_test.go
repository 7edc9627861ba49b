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

// Nesting bounds over real sockets: `data` may nest wire.MaxDataDepth levels
// counted from itself and arrives byte for byte; deeper data, or an envelope
// deeper than wire.MaxDepth, gets bad_request and the connection stays open.

// deepMixedData returns msgpack data nesting depth levels, taking turns
// between a one-entry map {"k": ...}, an array [i, ...] and a two-entry map
// {"n": i, "child": ...}, around the string "leaf".
func deepMixedData(depth int) []byte {
	var b []byte
	for i := range depth {
		switch i % 3 {
		case 0:
			b = msgp.AppendString(msgp.AppendMapHeader(b, 1), "k")
		case 1:
			b = msgp.AppendInt(msgp.AppendArrayHeader(b, 2), i)
		default:
			b = msgp.AppendMapHeader(b, 2)
			b = msgp.AppendInt(msgp.AppendString(b, "n"), i)
			b = msgp.AppendString(b, "child")
		}
	}
	return msgp.AppendString(b, "leaf")
}

// deepJSON returns JSON text nesting depth levels, objects and arrays taking
// turns around "leaf".
func deepJSON(depth int) string {
	var open, end strings.Builder
	for i := range depth {
		if i%2 == 0 {
			open.WriteString(`{"k":`)
		} else {
			open.WriteString(`[1,`)
		}
	}
	for i := depth - 1; i >= 0; i-- {
		if i%2 == 0 {
			end.WriteString(`}`)
		} else {
			end.WriteString(`]`)
		}
	}
	return open.String() + `"leaf"` + end.String()
}

func TestPublishDeepDataArrivesByteForByte(t *testing.T) {
	for _, depth := range []int{60, wire.MaxDataDepth} {
		t.Run(itoa(depth), func(t *testing.T) {
			s := start(t, nil)
			bob := authed(t, s, "dev-token-bob")
			subscribe(t, bob, "demo/general/deep")
			alice := authed(t, s, "dev-token-alice")
			data := deepMixedData(depth)
			alice.Send("type", "publish", "topic", "demo/general/deep", "data", testpeer.Raw(data), "msgRef", "deep")
			alice.ExpectFields("type", "published", "msgRef", "deep")
			f := bob.ExpectFields("type", "message", "topic", "demo/general/deep")
			if got := rawField(t, f.Payload, "data"); !bytes.Equal(got, data) {
				t.Fatalf("data = % x, want the %d-level bytes sent % x", got, depth, data)
			}
		})
	}
}

func TestPublishDeepJSONDataArrives(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/deep")
	alice := authed(t, s, "dev-token-alice")
	data := deepJSON(60)
	alice.SendFrame(ws.NewTextFrame([]byte(`{"type":"publish","topic":"demo/general/deep","data":` + data + `,"msgRef":"json"}`)))
	alice.ExpectFields("type", "published", "msgRef", "json")
	// What the broker must forward: the msgpack form of the JSON data.
	converted, err := wire.ConvertJSON(nil, []byte(`{"data":`+data+`}`))
	if err != nil {
		t.Fatal(err)
	}
	want := rawField(t, converted, "data")
	f := bob.ExpectFields("type", "message", "topic", "demo/general/deep")
	if got := rawField(t, f.Payload, "data"); !bytes.Equal(got, want) {
		t.Fatalf("data = % x, want % x", got, want)
	}
}

func TestPublishDataPastTheDepthBoundGetsBadRequest(t *testing.T) {
	s := start(t, nil)
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/deep")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/deep",
		"data", testpeer.Raw(deepMixedData(wire.MaxDataDepth+1)), "msgRef", "too-deep")
	alice.ExpectFields("type", "error", "error", "bad_request", "detail", "data nesting deeper than 128")
	// The connection stays open: the next publish goes through, and it is
	// the first message bob gets.
	alice.Send("type", "publish", "topic", "demo/general/deep", "data", "after", "msgRef", "after")
	alice.ExpectFields("type", "published", "msgRef", "after")
	bob.ExpectFields("type", "message", "topic", "demo/general/deep", "data", "after")
}

func TestDeepEnvelopeGetsBadRequest(t *testing.T) {
	s := start(t, nil)
	alice := authed(t, s, "dev-token-alice")
	// 60-level data is fine; an unknown key nesting 32 levels under the
	// top-level map is not.
	alice.Send("type", "publish", "topic", "demo/general/deep", "data", testpeer.Raw(deepMixedData(60)),
		"extra", testpeer.Raw(deepMixedData(wire.MaxDepth)))
	alice.ExpectFields("type", "error", "error", "bad_request", "detail", "envelope nesting deeper than 32")
	alice.Send("type", "publish", "topic", "demo/general/deep", "data", 1, "msgRef", "after")
	alice.ExpectFields("type", "published", "msgRef", "after")
}
