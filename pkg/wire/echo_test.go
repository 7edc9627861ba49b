package wire

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/NoLagApp/kraken/pkg/topic"
)

func TestEcho(t *testing.T) {
	if MaxEcho != topic.MaxTopicBytes {
		t.Fatalf("MaxEcho = %d, topic.MaxTopicBytes = %d: a valid topic must be echoed whole", MaxEcho, topic.MaxTopicBytes)
	}
	long := "demo/" + strings.Repeat("é", 600) // 1205 bytes
	for _, tt := range []struct{ name, in, want string }{
		{"valid, short", "demo/general/x", "demo/general/x"},
		{"valid, exactly MaxEcho", strings.Repeat("x", MaxEcho), strings.Repeat("x", MaxEcho)},
		{"a valid U+FFFD stays", "a/\uFFFD", "a/\uFFFD"},
		{"invalid bytes", "demo/\xff\xfe/x", "demo/\uFFFD\uFFFD/x"},
		{"a cut sequence", "demo/\xe2\x82", "demo/\uFFFD\uFFFD"},
		{"over MaxEcho", strings.Repeat("x", 5000), strings.Repeat("x", MaxEcho-3) + "…"},
		{"over MaxEcho, cut at a character", long, long[:1021] + "…"},
	} {
		got := Echo(tt.in)
		if got != tt.want {
			t.Errorf("%s: Echo = %q (%d bytes), want %q", tt.name, got[:min(len(got), 40)], len(got), tt.want[:min(len(tt.want), 40)])
		}
		if !utf8.ValidString(got) || len(got) > MaxEcho {
			t.Errorf("%s: %d bytes, valid UTF-8 %v", tt.name, len(got), utf8.ValidString(got))
		}
	}
	// Invalid bytes that expand past MaxEcho are cut too.
	if got := Echo(strings.Repeat("\xff", 600)); len(got) > MaxEcho || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("600 invalid bytes: %d bytes %q…", len(got), got[:9])
	}
}
