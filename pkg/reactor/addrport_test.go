package reactor

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/cloudwego/netpoll"
)

// Stream.RemoteAddrPort is RemoteAddr as a netip.AddrPort, for a socket
// netpoll accepted (IPv4 and IPv6) without allocating, and through the
// wrappers: a PROXY protocol socket (its client's address once set) and a
// TLS socket.
func TestStreamRemoteAddrPort(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := netpoll.CreateListener("tcp", addr)
		if err != nil {
			t.Logf("listen %s: %v (skipped)", addr, err)
			continue
		}
		accepted := make(chan netpoll.Connection, 1)
		loop, err := netpoll.NewEventLoop(
			func(context.Context, netpoll.Connection) error { return nil },
			netpoll.WithOnPrepare(func(c netpoll.Connection) context.Context {
				accepted <- c
				return context.Background()
			}))
		if err != nil {
			t.Fatal(err)
		}
		go loop.Serve(ln)
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		var c netpoll.Connection
		select {
		case c = <-accepted:
		case <-time.After(5 * time.Second):
			t.Fatal("nothing accepted")
		}
		want := client.LocalAddr().(*net.TCPAddr).AddrPort()
		sock, ok := c.(Socket)
		if !ok {
			t.Fatalf("%T is not a Socket", c)
		}
		s := NewStream(sock)
		if got := s.RemoteAddrPort(); got != s.RemoteAddr().(*net.TCPAddr).AddrPort() || got.Port() != want.Port() || got.Addr().Unmap() != want.Addr().Unmap() {
			t.Fatalf("%s: RemoteAddrPort %v, RemoteAddr %v, the client's %v", addr, got, s.RemoteAddr(), want)
		}
		if n := testing.AllocsPerRun(100, func() { _ = s.RemoteAddrPort() }); n != 0 {
			t.Fatalf("%s: RemoteAddrPort allocates %v times", addr, n)
		}
		wrapped := NewStream(&tlsSocket{Socket: &addrSocket{Socket: sock}})
		if got := wrapped.RemoteAddrPort(); got != s.RemoteAddrPort() {
			t.Fatalf("%s: through the wrappers %v, want %v", addr, got, s.RemoteAddrPort())
		}
		client.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = loop.Shutdown(ctx)
		cancel()
	}

	// A PROXY protocol socket: the client's address once set.
	s := NewStream(&addrSocket{Socket: proxySocket{}})
	if got := s.RemoteAddrPort(); got != proxyPeer.AddrPort() {
		t.Fatalf("before Readdress: %v, want %v", got, proxyPeer)
	}
	ap := netipMust("[2001:db8::5]:7")
	if _, ok := s.Readdress(ap); !ok {
		t.Fatal("not readdressed")
	}
	if got := s.RemoteAddrPort(); got != ap {
		t.Fatalf("after Readdress: %v, want %v", got, ap)
	}
	// A socket whose RemoteAddr is not a *net.TCPAddr.
	none := NewStream(testSocket{})
	if got := none.RemoteAddrPort(); got.IsValid() {
		t.Fatalf("no address: %v", got)
	}
}
