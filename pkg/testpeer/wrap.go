package testpeer

import (
	"bufio"
	"net"
	"testing"
)

// New wraps a connection whose WebSocket upgrade the test did itself (to
// shape the socket, or to pipeline bytes behind the request). br holds any
// bytes read past the handshake; nil means none. The connection is closed
// when the test ends.
func New(t testing.TB, conn net.Conn, br *bufio.Reader) *Peer {
	if br == nil {
		br = bufio.NewReader(conn)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &Peer{t: t, Conn: conn, br: br}
}
