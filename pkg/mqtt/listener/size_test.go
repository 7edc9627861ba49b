package listener

import (
	"testing"
	"unsafe"

	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
)

// An idle MQTT connection's state is at most 96 bytes, one allocation of
// the 96-byte size class (the next is 112), its client identity
// (conn.clientKey) included: the acknowledgement and the other per-packet
// decisions are one flags byte, not a slice or a bool each, and a will, a
// persistent session, inbound QoS 2 state and, for MQTT over WebSocket,
// the carrying stream are behind one pointer (conn.x), nil for most
// connections. Of it, the embedded session.State and reactor.Stream are
// those packages' (56 bytes now; they may shrink), and conn's own fields
// after them are 40 bytes, with no padding before them.
func TestConnStateSize(t *testing.T) {
	size := unsafe.Sizeof(conn{})
	if size > 96 {
		t.Errorf("conn is %d bytes, want at most 96", size)
	}
	embedded := unsafe.Sizeof(session.State{}) + unsafe.Sizeof(reactor.Stream{})
	if got := unsafe.Offsetof(conn{}.curID); got != embedded {
		t.Errorf("conn's own fields start at %d, want %d: padding after the embedded state", got, embedded)
	}
	if own := size - embedded; own != 40 {
		t.Errorf("conn's own fields are %d bytes, want 40", own)
	}
	if got := unsafe.Sizeof(extra{}); got > 32 {
		t.Errorf("extra is %d bytes, want at most 32 (one 32-byte allocation)", got)
	}
}
