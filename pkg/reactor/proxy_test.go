package reactor

import (
	"net"
	"net/netip"
	"sync/atomic"
	"testing"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// readdressHandler is testHandler that is a Readdresser: it records the
// address the connection had and had then, and refuses the client address
// refuse.
type readdressHandler struct {
	testHandler
	calls  int
	from   net.Addr
	now    net.Addr
	refuse string
}

func (h *readdressHandler) Readdressed(st *testConn, from net.Addr) {
	h.calls++
	h.from, h.now = from, st.RemoteAddr()
	if h.now != nil && h.now.String() == h.refuse {
		st.Disconnect(disconnect.New(disconnect.EdgeLimit))
	}
}

// proxySocket is a testSocket whose peer is the proxy, 10.0.0.1:40000.
type proxySocket struct{ testSocket }

var proxyPeer = &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 40000}

func (proxySocket) RemoteAddr() net.Addr { return proxyPeer }

// proxyLoop returns a Loop of testFraming with Config.ProxyProtocol and a
// connection opened on it as onPrepare opens it.
func proxyLoop(t *testing.T) (*Loop[*testConn], *readdressHandler, *testConn) {
	t.Helper()
	l, h := testLoop(t, hub.Config{}, 1<<20)
	rh := &readdressHandler{testHandler: testHandler{h}}
	l.h, l.cfg.ProxyProtocol = rh, true
	st := l.h.Open(&addrSocket{Socket: proxySocket{testSocket{new(atomic.Bool)}}, header: true})
	t.Cleanup(func() { h.Closed(st.c) })
	if !st.AddressPending() {
		t.Fatal("address not pending before the header")
	}
	return l, rh, st
}

const proxyV1 = "PROXY TCP4 203.0.113.9 10.0.0.2 51234 8080\r\n"

// The header is consumed before Process sees a byte, whether it comes in
// one read with frames after it or a byte at a time; the address is the
// header's, Readdressed is told once with the proxy's.
func TestProxyHeaderComesBeforeProcess(t *testing.T) {
	frames := testFrames(testFrame('m', 10), testFrame('m', 5))
	for _, tc := range []struct {
		name  string
		reads [][]byte
	}{
		{"one read", [][]byte{append([]byte(proxyV1), frames...)}},
		{"a byte at a time", func() (out [][]byte) {
			for _, b := range append([]byte(proxyV1), frames...) {
				out = append(out, []byte{b})
			}
			return out
		}()},
		{"header split, frames with its end", [][]byte{[]byte(proxyV1[:20]), append([]byte(proxyV1[20:]), frames...)}},
		{"header alone, then frames", [][]byte{[]byte(proxyV1), frames}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, rh, st := proxyLoop(t)
			for i, b := range tc.reads {
				feed(l, st, b)
				if i < len(tc.reads)-1 && rh.calls == 0 && st.frames != 0 {
					t.Fatal("a frame processed before the header was complete")
				}
			}
			if st.frames != 2 || st.Closing() || len(st.part()) != 0 {
				t.Fatalf("%d frames, closing %v, %d bytes kept", st.frames, st.Closing(), len(st.part()))
			}
			if rh.calls != 1 || rh.from != proxyPeer || rh.now.String() != "203.0.113.9:51234" ||
				st.RemoteAddr().String() != "203.0.113.9:51234" || st.c.RemoteAddr().String() != "203.0.113.9:51234" {
				t.Fatalf("Readdressed %d times, from %v to %v; RemoteAddr %v", rh.calls, rh.from, rh.now, st.RemoteAddr())
			}
			if st.AddressPending() {
				t.Fatal("still pending")
			}
		})
	}
}

// A LOCAL or UNKNOWN header keeps the socket's address, and Readdressed
// is told all the same (the address's limits apply then).
func TestProxyHeaderUnknownKeepsTheSocketsAddress(t *testing.T) {
	l, rh, st := proxyLoop(t)
	feed(l, st, append([]byte("PROXY UNKNOWN\r\n"), testFrame('m', 10)...))
	if rh.calls != 1 || st.RemoteAddr() != proxyPeer || st.frames != 1 {
		t.Fatalf("Readdressed %d, address %v, %d frames", rh.calls, st.RemoteAddr(), st.frames)
	}
}

// Bytes that are not a header close the connection without processing
// anything, counted; so does a refusal at Readdressed.
func TestMalformedProxyHeaderCloses(t *testing.T) {
	l, rh, st := proxyLoop(t)
	feed(l, st, append([]byte("GET / HTTP/1.1\r\n\r\n"), testFrame('m', 10)...))
	if !st.Closing() || st.frames != 0 || rh.calls != 0 || l.ProxyHeaderErrors() != 1 || st.partial != nil {
		t.Fatalf("closing %v, %d frames, Readdressed %d, errors %d", st.Closing(), st.frames, rh.calls, l.ProxyHeaderErrors())
	}
	if st.c.CloseReason() != disconnect.ProtocolError {
		t.Fatalf("close reason %v", st.c.CloseReason())
	}

	l, rh, st = proxyLoop(t)
	rh.refuse = "203.0.113.9:51234"
	feed(l, st, append([]byte(proxyV1), testFrame('m', 10)...))
	if !st.Closing() || st.frames != 0 || rh.calls != 1 || l.ProxyHeaderErrors() != 0 {
		t.Fatalf("refused: closing %v, %d frames, errors %d", st.Closing(), st.frames, l.ProxyHeaderErrors())
	}
}

// Readdress (a trusted proxy's forwarding header) sets the address once,
// only on a socket that allows it.
func TestStreamReaddress(t *testing.T) {
	s := NewStream(&addrSocket{Socket: proxySocket{}})
	if s.AddressPending() {
		t.Fatal("pending without PROXY protocol")
	}
	ap := netipMust("[2001:db8::5]:0")
	if from, ok := s.Readdress(ap); !ok || from != proxyPeer || s.RemoteAddr().String() != "[2001:db8::5]:0" {
		t.Fatalf("%v %v %v", from, ok, s.RemoteAddr())
	}
	if _, ok := s.Readdress(netipMust("192.0.2.1:0")); ok {
		t.Fatal("readdressed twice")
	}
	plain := NewStream(proxySocket{})
	if _, ok := plain.Readdress(ap); ok || plain.RemoteAddr() != proxyPeer {
		t.Fatal("readdressed a plain socket")
	}
}

// Once the header is read, a read of complete frames on a PROXY protocol
// connection allocates nothing either.
func TestReadAfterProxyHeaderAllocatesNothing(t *testing.T) {
	l, _, st := proxyLoop(t)
	feed(l, st, []byte(proxyV1))
	data := testFrames(testFrame('m', 40), testFrame('p', 3))
	r := &testReader{}
	if n := testing.AllocsPerRun(100, func() { r.fill(data); l.read(st, true, r) }); n != 0 {
		t.Fatalf("%.1f allocations per read", n)
	}
}

func netipMust(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }
