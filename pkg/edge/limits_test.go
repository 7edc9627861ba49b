package edge

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	addrA = netip.MustParseAddr("192.0.2.1")
	addrB = netip.MustParseAddr("192.0.2.2")
)

// Each bound refuses the connection that would pass it, while another
// address is still admitted; a refused connection counts until it closes;
// authenticating and closing give the room back.
func TestLimiterBounds(t *testing.T) {
	l := NewLimiter(Limits{MaxConnections: 5, MaxPerAddress: 3, MaxPending: 4, MaxPendingPerAddress: 2})
	if r := l.Admit(addrA); r != Admitted {
		t.Fatal(r)
	}
	if r := l.Admit(addrA); r != Admitted {
		t.Fatal(r)
	}
	if r := l.Admit(addrA); r != TooManyPendingFromAddress {
		t.Fatalf("third pending from one address: %v", r)
	}
	if r := l.Admit(addrB); r != Admitted {
		t.Fatalf("another address: %v", r)
	}
	l.Closed(addrA, true) // the refused one leaves
	l.Authenticated(addrA)
	l.Authenticated(addrA)
	if r := l.Admit(addrA); r != Admitted {
		t.Fatalf("a third connection from one address, the others authenticated: %v", r)
	}
	l.Authenticated(addrA)
	if r := l.Admit(addrA); r != TooManyFromAddress {
		t.Fatalf("a fourth connection from one address: %v", r)
	}
	l.Closed(addrA, true)
	l.Authenticated(addrB)
	for range 1 {
		if r := l.Admit(netip.MustParseAddr("192.0.2.9")); r != Admitted {
			t.Fatal(r)
		}
	}
	if r := l.Admit(netip.MustParseAddr("192.0.2.10")); r != TooManyConnections {
		t.Fatalf("the sixth connection: %v", r)
	}
	if got := l.Refused(); got[TooManyPendingFromAddress] != 1 || got[TooManyFromAddress] != 1 || got[TooManyConnections] != 1 {
		t.Fatalf("refused %v", got)
	}
	if TooManyFromAddress.Text() != "too many connections from your address (MAX_CONNECTIONS_PER_ADDRESS)" ||
		!TooManyFromAddress.PerAddress() || TooManyConnections.PerAddress() {
		t.Fatal("refusal texts")
	}
	if NewLimiter(Limits{}) != nil || (*Limiter)(nil).Admit(addrA) != Admitted {
		t.Fatal("no bounds: nil, admits everything")
	}
}

// Under the race detector, connections admitted, authenticated and closed
// from many goroutines leave every count at zero and no address behind.
func TestLimiterConcurrent(t *testing.T) {
	l := NewLimiter(Limits{MaxConnections: 1000})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			a := netip.AddrFrom4([4]byte{10, 0, 0, byte(g % 4)})
			for i := range 500 {
				l.Admit(a)
				auth := i%2 == 0
				if auth {
					l.Authenticated(a)
				}
				l.Closed(a, !auth)
			}
		})
	}
	wg.Wait()
	if total, pending := l.counts(); total != 0 || pending != 0 || len(l.addrs) != 0 {
		t.Fatalf("after everything closed: total %d pending %d, %d addresses", total, pending, len(l.addrs))
	}
}

func TestAddrOf(t *testing.T) {
	if got := AddrOf(&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.1"), Port: 5}); got != addrA {
		t.Fatalf("mapped: %v", got)
	}
	if got := AddrOf(&net.UnixAddr{Name: "x"}); got.IsValid() {
		t.Fatalf("unix: %v", got)
	}
}

// The accept rate: a burst is admitted, the next is refused (rate, 429)
// while another address is admitted, a token comes back after 1/rate
// seconds; an address with no connection is forgotten once its bucket is
// full again, and not before.
func TestLimiterAcceptRate(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(Limits{AcceptRate: 2, AcceptBurst: 3})
	l.now = func() time.Time { return now }
	for i := range 3 {
		if r := l.Admit(addrA); r != Admitted {
			t.Fatalf("connection %d of the burst: %v", i, r)
		}
	}
	if r := l.Admit(addrA); r != TooFastFromAddress {
		t.Fatalf("past the burst: %v", r)
	}
	if r := l.Admit(addrB); r != Admitted {
		t.Fatalf("another address: %v", r)
	}
	now = now.Add(499 * time.Millisecond)
	if r := l.Admit(addrA); r != TooFastFromAddress {
		t.Fatalf("before a token came back: %v", r)
	}
	now = now.Add(2 * time.Millisecond)
	if r := l.Admit(addrA); r != Admitted {
		t.Fatalf("after 1/rate seconds: %v", r)
	}
	for range 6 {
		l.Closed(addrA, true)
	}
	l.Closed(addrB, true)
	if got := l.tracked(); got != 1 {
		t.Fatalf("right after the closes %d addresses kept, want A's alone (B's bucket is full)", got)
	}
	now = now.Add(1400 * time.Millisecond) // not 3/2 s after A's last close
	l.Closed(netip.Addr{}, false)          // any call sweeps
	if got := l.tracked(); got != 1 {
		t.Fatalf("%d addresses kept before A's bucket refilled", got)
	}
	now = now.Add(200 * time.Millisecond)
	if r := l.Admit(addrB); r != Admitted { // sweeps A, keeps B
		t.Fatal(r)
	}
	if got := l.tracked(); got != 1 {
		t.Fatalf("%d addresses kept after A's bucket refilled, want B alone", got)
	}
	if got := l.Refused(); got[TooFastFromAddress] != 2 {
		t.Fatalf("refused %v", got)
	}
	if !TooFastFromAddress.PerAddress() || TooFastFromAddress.String() != "rate" ||
		TooFastFromAddress.Text() != "too many new connections from your address (MAX_ACCEPT_RATE_PER_ADDRESS)" {
		t.Fatal("rate refusal")
	}
}

// Many addresses connecting once each: the map holds no more than those
// within the last burst/rate seconds.
func TestLimiterForgetsIdleAddresses(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(Limits{AcceptRate: 1, AcceptBurst: 1})
	l.now = func() time.Time { return now }
	for i := range 10000 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		l.Admit(a)
		l.Closed(a, true)
		now = now.Add(time.Millisecond)
	}
	if got := l.tracked(); got > 1001 {
		t.Fatalf("%d addresses kept", got)
	}
	if len(l.idle)-l.idleHead > 1001 {
		t.Fatalf("%d queued", len(l.idle)-l.idleHead)
	}
}

// Behind a PROXY protocol listener: the node bounds at accept, the address
// bounds on the real address once known; the count moves from the proxy's
// address to the client's, so two clients behind one proxy each get their
// own bound.
func TestLimiterReaddress(t *testing.T) {
	proxy := netip.MustParseAddr("10.0.0.1")
	l := NewLimiter(Limits{MaxConnections: 10, MaxPerAddress: 1})
	for range 2 {
		if r := l.AdmitDeferred(proxy); r != Admitted {
			t.Fatalf("deferred admit checks the proxy's address: %v", r)
		}
	}
	if r := l.Readdress(proxy, addrA, true); r != Admitted {
		t.Fatal(r)
	}
	if r := l.Readdress(proxy, addrB, true); r != Admitted {
		t.Fatalf("a second client behind the proxy: %v", r)
	}
	l.AdmitDeferred(proxy)
	if r := l.Readdress(proxy, addrA, true); r != TooManyFromAddress {
		t.Fatalf("a second connection from A: %v", r)
	}
	l.AdmitDeferred(proxy)
	if r := l.Readdress(proxy, proxy, true); r != Admitted { // a LOCAL header keeps the proxy's address
		t.Fatal(r)
	}
	if l.addrs[proxy].open != 1 || l.addrs[addrA].open != 2 || l.addrs[addrB].open != 1 {
		t.Fatal("counts not moved")
	}
	l.Authenticated(addrB)
	l.Closed(addrA, true)
	l.Closed(addrA, true)
	l.Closed(addrB, false)
	l.Closed(proxy, true)
	if total, pending := l.counts(); total != 0 || pending != 0 || l.tracked() != 0 {
		t.Fatalf("after the closes: total %d pending %d, %d addresses", total, pending, l.tracked())
	}
}

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST:9469": true, "127.0.0.1": true, "127.0.0.2:80": true, "[::1]:9469": true, "::1": true,
		"0.0.0.0:9469": false, "10.0.0.7": false, "evil.example:9469": false, "": false, "[::]:9469": false,
	} {
		if got := LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestAddrOfPortIsAddrOf: the address an accepted connection gives as a
// netip.AddrPort counts against the same limits as the one it gives as a
// *net.TCPAddr, and asking for it allocates nothing.
func TestAddrOfPortIsAddrOf(t *testing.T) {
	for _, s := range []string{"192.0.2.1", "::ffff:192.0.2.1", "2001:db8::1", "fe80::1%eth0", "::1", "127.0.0.1"} {
		ta := &net.TCPAddr{IP: net.ParseIP(strings.SplitN(s, "%", 2)[0]), Port: 5}
		if i := strings.IndexByte(s, '%'); i >= 0 {
			ta.Zone = s[i+1:]
		}
		if got, want := AddrOfPort(ta.AddrPort()), AddrOf(ta); got != want {
			t.Errorf("%s: AddrOfPort gives %v, AddrOf %v", s, got, want)
		}
	}
	if got := AddrOfPort(netip.AddrPort{}); got.IsValid() {
		t.Errorf("the zero AddrPort gives %v, want the zero Addr", got)
	}
	ap := netip.MustParseAddrPort("[::ffff:192.0.2.1]:5")
	if n := testing.AllocsPerRun(100, func() { _ = AddrOfPort(ap) }); n != 0 {
		t.Errorf("AddrOfPort allocates %v times", n)
	}
}
