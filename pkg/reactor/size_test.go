package reactor

import (
	"testing"
	"unsafe"
)

// TestStreamSize pins the size docs/ARCHITECTURE.md quotes for the
// reactor's part of an idle connection's reader state ("Why this shape").
func TestStreamSize(t *testing.T) {
	if got := unsafe.Sizeof(Stream{}); got != 32 {
		t.Errorf("Stream is %d bytes, docs/ARCHITECTURE.md says 32", got)
	}
}
