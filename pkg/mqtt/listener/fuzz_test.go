package listener

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/packet"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
)

// fuzzAuth accepts the token "t" with a grant on a/#.
type fuzzAuth struct{}

func (fuzzAuth) Validate(_ context.Context, token string) (*auth.Grant, error) {
	if token != "t" {
		return nil, auth.ErrDenied
	}
	return &auth.Grant{ActorTokenID: "f", ProjectID: "p", Rules: acl.Rules{{Pattern: "a/#", Topic: "a",
		Permission: acl.PermPubSub, AppID: "app"}}}, nil
}

func (fuzzAuth) Revalidate(context.Context, string) (*auth.Grant, error) { return nil, auth.ErrDenied }

// pairSocket is one end of a socketpair, as conn's socket.
type pairSocket struct{ fd int }

func (s pairSocket) Fd() int            { return s.fd }
func (pairSocket) RemoteAddr() net.Addr { return &net.TCPAddr{} }
func (s pairSocket) Close() error       { return nil }

var (
	fuzzOnce  sync.Once
	fuzzLst   *Listener
	fuzzNode  *node.Node // shut down after every test has run (TestMain)
	fuzzSetup error
)

// socketPair returns one end of a new socketpair, both closed when t
// ends.
func socketPair(t *testing.T) pairSocket {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = unix.Close(fds[0]); _ = unix.Close(fds[1]) })
	return pairSocket{fds[0]}
}

// fuzzListener makes the fuzz tests' listener, once, on a node of its own
// (shut down in TestMain).
func fuzzListener(tb testing.TB) {
	fuzzOnce.Do(func() {
		n, err := node.New(node.Config{Hub: hub.Config{Workers: 1},
			Session: session.Config{Auth: fuzzAuth{}, RateLimit: 1 << 20}})
		if err != nil {
			fuzzSetup = err
			return
		}
		n.Hub().Start()
		fuzzNode = n
		fuzzLst, fuzzSetup = New(n, Config{})
	})
	if fuzzSetup != nil {
		tb.Fatal(fuzzSetup)
	}
}

// FuzzProcess feeds arbitrary bytes, after an optional valid CONNECT (with
// a will on a/w and client identifier "c"), to the packet handling of two
// connections in turn (the session protocol and hub behind them), so the
// second's CONNECT takes the first over; then both end, publishing the
// wills they still hold and parking a Clean Session 0 one's session. The
// seeds walk the session states: QoS 2 both
// ways (PUBLISH, its retransmission with DUP, PUBREL; PUBREC and PUBCOMP
// for the server's own), QoS 1 and 2 subscriptions, DISCONNECT. Nothing may
// panic, and a refused packet leaves the connection closing.
func FuzzProcess(f *testing.F) {
	connect := []byte{0x10, 0x1c, 0, 4, 'M', 'Q', 'T', 'T', 4, 0xce, 0, 30, 0, 1, 'c',
		0, 3, 'a', '/', 'w', 0, 2, 'b', 'y', 0, 1, 'u', 0, 1, 't'}
	var cp packet.Packet
	if n, err := packet.Parse(connect, packet.MaxPacketSize, &cp); n != len(connect) || err != nil || !cp.Connect.Will {
		f.Fatalf("the CONNECT seed parses as %d of %d bytes, %v, will %v", n, len(connect), err, cp.Connect.Will)
	}
	for _, seed := range [][]byte{
		{0x82, 0x08, 0, 1, 0, 3, 'a', '/', '#', 2},
		{0x3c, 0x08, 0, 3, 'a', '/', 'b', 0, 6, 'y'},
		{0x34, 0x08, 0, 3, 'a', '/', 'b', 0, 6, 'y', 0x3c, 0x08, 0, 3, 'a', '/', 'b', 0, 6, 'y', 0x62, 0x02, 0, 6},
		{0x82, 0x08, 0, 1, 0, 3, 'a', '/', '#', 2, 0x34, 0x08, 0, 3, 'a', '/', 'b', 0, 7, 'z',
			0x50, 0x02, 0, 1, 0x70, 0x02, 0, 1},
		// Clean Session 0 (flags 0xcc): the second connection takes over
		// the first and waits for its session.
		{0x10, 0x1c, 0, 4, 'M', 'Q', 'T', 'T', 4, 0xcc, 0, 30, 0, 1, 'c',
			0, 3, 'a', '/', 'w', 0, 2, 'b', 'y', 0, 1, 'u', 0, 1, 't', 0x82, 0x08, 0, 1, 0, 3, 'a', '/', '#', 1},
		{0x50, 0x02, 0, 9},
		{0x70, 0x02, 0, 9},
		{},
		{0xc0, 0x00},
		{0x82, 0x0a, 0, 1, 0, 3, 'a', '/', '#', 1, 0, 1},
		{0xa2, 0x07, 0, 2, 0, 3, 'a', '/', '#'},
		{0x32, 0x08, 0, 3, 'a', '/', 'b', 0, 5, 'x'},
		{0x33, 0x06, 0, 3, 'a', '/', 'b', 0},
		{0x34, 0x08, 0, 3, 'a', '/', 'b', 0, 6, 'y'},
		{0x62, 0x02, 0, 6},
		{0x40, 0x02, 0, 1},
		{0xe0, 0x00},
		connect,
	} {
		f.Add(true, seed)
		f.Add(false, seed)
	}
	fuzzListener(f)
	f.Fuzz(func(t *testing.T, withConnect bool, data []byte) {
		sock := socketPair(t)
		l := fuzzLst
		buf := data
		if withConnect {
			buf = append(append([]byte(nil), connect...), data...)
		}
		first := fuzzConn(t, l, sock, buf)
		answered(first)
		second := fuzzConn(t, l, sock, buf) // takes the first over
		for _, st := range []*conn{first, second} {
			l.hub.Closed(st.Conn) // the first's session goes to the second, which may wait for it
			handler{l}.Closed(st)
		}
		answered(second)
	})
}

// answered waits (2 s at most) until the workers have answered what st's
// reader handed them, and flushes it.
func answered(st *conn) {
	for deadline := time.Now().Add(2 * time.Second); st.Conn.PendingReplies() > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Microsecond)
	}
	st.Conn.Flush()
}

// fuzzConn runs buf through a new connection on sock and checks what it
// leaves.
func fuzzConn(t *testing.T, l *Listener, sock pairSocket, buf []byte) *conn {
	st := &conn{Stream: reactor.NewStream(sock)}
	st.Conn = l.hub.Register(st)
	st.Conn.SetPhase(hub.PhaseOpen)
	used, _ := l.process(st, buf)
	if used > len(buf) {
		t.Fatalf("used %d of %d bytes", used, len(buf))
	}
	if used < len(buf) && !st.Closing() { // what is left must be a packet still arriving
		var p packet.Packet
		if n, err := packet.Parse(buf[used:], l.cfg.MaxPacketSize, &p); n != 0 || err != nil {
			t.Fatalf("left %d bytes that parse as %d, %v without closing", len(buf)-used, n, err)
		}
	}
	return st
}

// FuzzWebSocketMessages feeds arbitrary bytes, after an optional valid
// CONNECT, to an MQTT-over-WebSocket connection, cut into binary messages
// at arbitrary points: nothing may panic, and what a connection still open
// keeps between messages is the start of one packet, within the packet
// bound.
func FuzzWebSocketMessages(f *testing.F) {
	connect := []byte{0x10, 0x13, 0, 4, 'M', 'Q', 'T', 'T', 4, 0xc2, 0, 30, 0, 1, 'c', 0, 1, 'u', 0, 1, 't'}
	for _, seed := range [][]byte{
		{},
		{0xc0, 0x00, 0xc0, 0x00},
		{0x82, 0x0a, 0, 1, 0, 3, 'a', '/', '#', 1, 0, 1},
		{0x32, 0x08, 0, 3, 'a', '/', 'b', 0, 5, 'x', 0xc0, 0x00},
		{0x30, 0xff, 0xff, 0xff, 0x7f},
		{0xe0, 0x00},
	} {
		f.Add(true, seed, []byte{1, 3})
		f.Add(false, seed, []byte{0, 7})
	}
	fuzzListener(f)
	f.Fuzz(func(t *testing.T, withConnect bool, data, cuts []byte) {
		sock := socketPair(t)
		l := fuzzLst
		over := reactor.NewStream(sock)
		c := l.hub.Register(&conn{Stream: reactor.NewStream(sock)})
		defer l.hub.Closed(c)
		if !l.WebSocket().Open(c, &over) {
			t.Fatal("Open refused a connection in its handshake")
		}
		st := c.Transport().(*wsConn)
		buf := data
		if withConnect {
			buf = append(append([]byte(nil), connect...), data...)
		}
		for _, cut := range cuts {
			at := min(int(cut), len(buf))
			st.Message(buf[:at])
			buf = buf[at:]
		}
		st.Message(buf)
		if len(st.pending) > l.cfg.MaxPacketSize {
			t.Fatalf("kept %d bytes, over the packet bound", len(st.pending))
		}
		if len(st.pending) > 0 && !st.Closing() {
			var p packet.Packet
			if n, err := packet.Parse(st.pending, l.cfg.MaxPacketSize, &p); n != 0 || err != nil {
				t.Fatalf("kept %d bytes that parse as %d, %v without closing", len(st.pending), n, err)
			}
		}
		for deadline := time.Now().Add(2 * time.Second); c.PendingReplies() > 0 && time.Now().Before(deadline); {
			time.Sleep(50 * time.Microsecond)
		}
		c.Flush()
	})
}
