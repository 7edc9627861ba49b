package edge

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// Limits bound the connections of a node at its edge, before the session
// protocol (docs/SECURITY.md says which attack each one stops). A zero
// field is no bound. Every connection a listener accepts counts, on every
// transport (a plain HTTP request too), until it closes; a connection is
// pending from its accept until it authenticates.
type Limits struct {
	// MaxConnections bounds the node's connections (MAX_CONNECTIONS).
	MaxConnections int
	// MaxPerAddress bounds the connections of one client address
	// (MAX_CONNECTIONS_PER_ADDRESS). Behind a proxy every client has the
	// proxy's address: leave it off there.
	MaxPerAddress int
	// MaxPending bounds the connections not authenticated yet
	// (MAX_PENDING_CONNECTIONS), and MaxPendingPerAddress those of one
	// client address (MAX_PENDING_PER_ADDRESS).
	MaxPending, MaxPendingPerAddress int
}

// Refusal is why Limiter.Admit refused a connection, Admitted (0) when it
// did not.
type Refusal uint8

// The refusals, by the bound that was reached.
const (
	Admitted Refusal = iota
	TooManyConnections
	TooManyFromAddress
	TooManyPending
	TooManyPendingFromAddress

	numRefusals
)

// NumRefusals is one more than the largest Refusal.
const NumRefusals = int(numRefusals)

var refusals = [numRefusals]struct{ label, text, setting string }{
	Admitted:                  {"admitted", "", ""},
	TooManyConnections:        {"connections", "too many connections on this node", "MAX_CONNECTIONS"},
	TooManyFromAddress:        {"address", "too many connections from your address", "MAX_CONNECTIONS_PER_ADDRESS"},
	TooManyPending:            {"pending", "too many connections waiting to authenticate on this node", "MAX_PENDING_CONNECTIONS"},
	TooManyPendingFromAddress: {"pending_address", "too many connections waiting to authenticate from your address", "MAX_PENDING_PER_ADDRESS"},
}

// String returns the refusal's label, the reason label of
// kraken_connections_refused_total: connections, address, pending,
// pending_address.
func (r Refusal) String() string { return refusals[r].label }

// Text is the reason a refused client is told, naming the setting, e.g.
// "too many connections from your address (MAX_CONNECTIONS_PER_ADDRESS)".
func (r Refusal) Text() string { return refusals[r].text + " (" + refusals[r].setting + ")" }

// PerAddress reports whether r is a bound of one address (answered 429
// Too Many Requests) rather than of the node (503 Service Unavailable).
func (r Refusal) PerAddress() bool { return r == TooManyFromAddress || r == TooManyPendingFromAddress }

// Limiter applies Limits. Admit at accept, Authenticated when a connection
// authenticates, Closed when it ends; each takes one mutex for a few
// map operations (connections are accepted and closed far less often than
// messages move). Safe for concurrent use; a nil Limiter admits everything.
type Limiter struct {
	lim Limits

	mu             sync.Mutex
	total, pending int
	addrs          map[netip.Addr]*addrCount

	refused [numRefusals]atomic.Uint64
}

type addrCount struct{ open, pending int32 }

// NewLimiter returns a Limiter for lim, nil when lim bounds nothing.
func NewLimiter(lim Limits) *Limiter {
	if lim == (Limits{}) {
		return nil
	}
	return &Limiter{lim: lim, addrs: make(map[netip.Addr]*addrCount)}
}

// AddrOf is the client address of a connection's peer address (its IP,
// without port or IPv6 zone; an IPv4-mapped IPv6 address as IPv4), the zero
// Addr for one that is not an IP address.
func AddrOf(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok {
			return ip.Unmap().WithZone("")
		}
	}
	return netip.Addr{}
}

// Admit counts a connection just accepted from addr, pending, and reports
// whether one of the bounds was already reached: the connection then
// counts all the same, until Closed, and its transport answers the refusal
// and closes it. The node-wide bounds are checked before the per-address
// ones.
func (l *Limiter) Admit(addr netip.Addr) Refusal {
	if l == nil {
		return Admitted
	}
	l.mu.Lock()
	a := l.addrs[addr]
	if a == nil {
		a = &addrCount{}
		l.addrs[addr] = a
	}
	r := Admitted
	switch {
	case l.lim.MaxConnections > 0 && l.total >= l.lim.MaxConnections:
		r = TooManyConnections
	case l.lim.MaxPending > 0 && l.pending >= l.lim.MaxPending:
		r = TooManyPending
	case l.lim.MaxPerAddress > 0 && int(a.open) >= l.lim.MaxPerAddress:
		r = TooManyFromAddress
	case l.lim.MaxPendingPerAddress > 0 && int(a.pending) >= l.lim.MaxPendingPerAddress:
		r = TooManyPendingFromAddress
	}
	l.total++
	l.pending++
	a.open++
	a.pending++
	l.mu.Unlock()
	if r != Admitted {
		l.refused[r].Add(1)
	}
	return r
}

// Authenticated moves a connection from addr, admitted and pending, out of
// the pending counts.
func (l *Limiter) Authenticated(addr netip.Addr) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if a := l.addrs[addr]; a != nil && a.pending > 0 {
		a.pending--
		l.pending--
	}
	l.mu.Unlock()
}

// Closed uncounts a connection from addr that ended; pending says it had
// not authenticated.
func (l *Limiter) Closed(addr netip.Addr, pending bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if a := l.addrs[addr]; a != nil {
		l.total--
		a.open--
		if pending && a.pending > 0 {
			a.pending--
			l.pending--
		}
		if a.open <= 0 {
			delete(l.addrs, addr)
		}
	}
	l.mu.Unlock()
}

// Refused returns the connections refused so far, by Refusal.
func (l *Limiter) Refused() (out [NumRefusals]uint64) {
	if l == nil {
		return out
	}
	for i := range out {
		out[i] = l.refused[i].Load()
	}
	return out
}

// counts returns the connections counted now, and those pending.
func (l *Limiter) counts() (total, pending int) {
	if l == nil {
		return 0, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, l.pending
}
