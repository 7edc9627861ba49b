package wire

import "testing"

func BenchmarkDecodePublish(b *testing.B) {
	frame := quickstartPublish()
	var c Command
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := Decode(frame, &c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	frame := quickstartPublish()
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if _, err := Validate(frame, MaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMessage(b *testing.B) {
	m := sampleMessage()
	buf := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendMessage(buf[:0], m)
	}
	b.SetBytes(int64(len(buf)))
}
