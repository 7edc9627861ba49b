package listener

import (
	"testing"
	"unsafe"
)

// An idle MQTT connection's state is 128 bytes, one 128-byte allocation,
// its pointer to a carrying WebSocket stream (conn.over) and its client
// identity (conn.clientKey) included: the acknowledgement the packet in
// hand decided is three small fields, not a slice, and a will, a
// persistent session and inbound QoS 2 state are behind one pointer
// (conn.x), nil for most connections.
func TestConnStateSize(t *testing.T) {
	if got := unsafe.Sizeof(conn{}); got != 128 {
		t.Errorf("conn is %d bytes, want 128", got)
	}
}
