package packet

import (
	"strings"
	"testing"
)

// benchTopic and benchPayload are a quickstart-sized publish.
const benchTopic = "demo/general/messages"

var benchPayload = []byte(strings.Repeat("x", 128))

func BenchmarkParsePublish(b *testing.B) {
	in := publish(0x02, benchTopic, 7, string(benchPayload))
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := Parse(in, 1<<20, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseSubscribe(b *testing.B) {
	in := subscribe(7, "demo/+/messages", 1, "demo/general/#", 0)
	var p Packet
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		if _, err := Parse(in, 1<<20, &p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendPublish(b *testing.B) {
	h := PublishHeader{Topic: benchTopic, QoS: 1}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendPublish(buf[:0], h, 7, benchPayload); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkAppendPublishHeader is the per-message part of a fan-out: the
// header is built once, then each QoS 1 subscriber adds two bytes.
func BenchmarkAppendPublishHeader(b *testing.B) {
	h := PublishHeader{Topic: benchTopic, QoS: 1}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendPublishHeader(buf[:0], h, len(benchPayload)); err != nil {
			b.Fatal(err)
		}
	}
}
