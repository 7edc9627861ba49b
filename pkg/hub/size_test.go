package hub

import (
	"testing"
	"unsafe"
)

// TestConnSize pins the sizes docs/ARCHITECTURE.md quotes for what an idle
// connection costs in the hub ("Why this shape"): a change that grows
// them must update the page (and be measured, bench/RESULTS.md). Conn is
// 160 bytes and a plain sub 64, both exactly a size class; Session is 45
// bytes of fields in the 48-byte class (without LimitOrg it would fit 32).
func TestConnSize(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"hub.Conn", unsafe.Sizeof(Conn{}), 160},
		{"hub.Session", unsafe.Sizeof(Session{}), 48},
		{"a subscription (sub)", unsafe.Sizeof(sub{}), 64},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d bytes, docs/ARCHITECTURE.md says %d", c.what, c.got, c.want)
		}
	}
}
