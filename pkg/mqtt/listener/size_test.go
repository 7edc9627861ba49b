package listener

import (
	"testing"
	"unsafe"
)

// An idle MQTT connection's state is 104 bytes, one 112-byte allocation,
// its pointer to a carrying WebSocket stream (conn.over) included: the
// acknowledgement the packet in hand decided is three small fields, not a
// slice.
func TestConnStateSize(t *testing.T) {
	if got := unsafe.Sizeof(conn{}); got != 104 {
		t.Errorf("conn is %d bytes, want 104", got)
	}
}
