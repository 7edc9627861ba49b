package server

import (
	"testing"
	"unsafe"

	"github.com/NoLagApp/kraken/pkg/session"
)

// TestReaderStateSize pins the sizes docs/ARCHITECTURE.md quotes for the
// reader state of an idle WebSocket connection ("Why this shape").
func TestReaderStateSize(t *testing.T) {
	if got := unsafe.Sizeof(connState{}); got != 64 {
		t.Errorf("connState is %d bytes, docs/ARCHITECTURE.md says 64", got)
	}
	if got := unsafe.Sizeof(session.State{}); got != 24 {
		t.Errorf("session.State is %d bytes, docs/ARCHITECTURE.md says 24", got)
	}
}
