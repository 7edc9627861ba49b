package edge

import (
	"net"
	"net/netip"
	"sync"
	"testing"
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
