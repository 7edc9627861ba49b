package server

import (
	"bytes"
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// Liveness under hostile peers.

// dialNonReader upgrades a connection whose receive buffer is set small
// before connecting, so that a peer that never reads fills it at once.
func dialNonReader(t *testing.T, s *Server) *testpeer.Peer {
	t.Helper()
	d := ws.Dialer{NetDial: func(ctx context.Context, network, addr string) (net.Conn, error) {
		nd := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			var err error
			_ = rc.Control(func(fd uintptr) {
				err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
			})
			return err
		}}
		return nd.DialContext(ctx, network, addr)
	}}
	conn, br, _, err := d.Dial(context.Background(), "ws://"+s.Addr().String()+"/ws")
	if err != nil {
		t.Fatal(err)
	}
	return testpeer.New(t, conn, br)
}

func TestHostilePingFloodFromANonReaderIsClosedAsASlowConsumer(t *testing.T) {
	const bound = 64 << 10
	// The input bound is put out of reach: a reader slowed down (race
	// detector, a loaded machine) otherwise lets 4 MiB of pings wait and
	// closes the flooder as input_overflow first, a close of its own test.
	s := start(t, func(c *testConfig) { c.Hub.OutboundMaxBytes = bound; c.MaxInputBacklog = 64 << 20 })
	bystander := authed(t, s, "dev-token-bob")
	subscribe(t, bystander, "demo/general/bystander")
	flooder := dialNonReader(t, s)
	flooder.Auth("dev-token-alice")

	// Pings of the largest control payload, a thousand per write, never
	// reading a pong.
	ping := compiled(ws.NewPingFrame(bytes.Repeat([]byte{'p'}, 125)))
	burst := bytes.Repeat(ping, 1000)
	// The close is decided when the queue passes the bound and counted
	// when the worker gets to it; the reader meanwhile drops the flooder's
	// pings, so writing stops at a generous bound and the count is waited
	// for.
	sent := 0
	for s.hub.Stats().SlowConsumers == 0 && sent < 200_000 {
		_ = flooder.Conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := flooder.Conn.Write(burst); err != nil {
			break // the server already closed the socket
		}
		sent += 1000
	}
	t.Logf("stopped writing after %d pings (%d KiB of pongs owed)", sent, sent*127>>10)
	waitFor(t, 10*time.Second, func() bool { return s.hub.Stats().SlowConsumers == 1 })
	expectClosedBy(t, flooder.Conn, flooder.Conn, 10*time.Second)

	// Everyone else is served as before.
	expectPong(t, bystander)
	bystander.Send("type", "publish", "topic", "demo/general/bystander", "data", "still here")
	bystander.ExpectFields("type", "message", "data", "still here")
}
