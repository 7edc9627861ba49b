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

// BenchmarkDecodeDeepData decodes a publish whose data nests MaxDataDepth
// levels, the path that moves the validation stack to its larger array.
func BenchmarkDecodeDeepData(b *testing.B) {
	frame := enc(kv{"type", "publish", "topic", "demo/general/deep", "data", raw(deepData(MaxDataDepth))})
	var c Command
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	for b.Loop() {
		if err := Decode(frame, &c); err != nil {
			b.Fatal(err)
		}
	}
}
