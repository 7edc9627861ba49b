package edge

import (
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
	// AcceptRate bounds the new connections of one client address, per
	// second (MAX_ACCEPT_RATE_PER_ADDRESS), with AcceptBurst of them at
	// once (MAX_ACCEPT_BURST_PER_ADDRESS; 0 is AcceptRate): a token bucket
	// per address holding AcceptBurst tokens, refilled at AcceptRate per
	// second, one taken by each connection admitted.
	AcceptRate, AcceptBurst int
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
	TooFastFromAddress

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
	TooFastFromAddress:        {"rate", "too many new connections from your address", "MAX_ACCEPT_RATE_PER_ADDRESS"},
}

// String returns the refusal's label, the reason label of
// kraken_connections_refused_total: connections, address, pending,
// pending_address, rate.
func (r Refusal) String() string { return refusals[r].label }

// Text is the reason a refused client is told, naming the setting, e.g.
// "too many connections from your address (MAX_CONNECTIONS_PER_ADDRESS)".
func (r Refusal) Text() string { return refusals[r].text + " (" + refusals[r].setting + ")" }

// PerAddress reports whether r is a bound of one address (answered 429
// Too Many Requests) rather than of the node (503 Service Unavailable).
func (r Refusal) PerAddress() bool {
	return r == TooManyFromAddress || r == TooManyPendingFromAddress || r == TooFastFromAddress
}

// Limiter applies Limits. Admit at accept (AdmitDeferred on a listener
// that learns the client's address later, from a PROXY protocol header,
// then Readdress), Authenticated when a connection authenticates, Closed
// when it ends; each takes one mutex for a few map operations
// (connections are accepted and closed far less often than messages
// move). An address is kept in the map while it has a connection open or,
// with AcceptRate, until its bucket has refilled: the map holds at most
// the open connections' addresses and those that connected within the
// last AcceptBurst/AcceptRate seconds. No goroutine, no timer. Safe for
// concurrent use; a nil Limiter admits everything.
type Limiter struct {
	lim Limits
	now func() time.Time // time.Now; tests replace it

	mu             sync.Mutex
	total, pending int
	addrs          map[netip.Addr]*addrCount
	idle           []idleAddr // addresses left with no connection and a bucket not full, by time
	idleHead       int        // idle[:idleHead] are done with

	refused [numRefusals]atomic.Uint64
}

// addrCount is what the Limiter keeps of one address: its connections
// open and pending, and its accept bucket (tokens at the time at, in
// nanoseconds; refilled lazily when next looked at).
type addrCount struct {
	open, pending int32
	tokens        float64
	at            int64
}

// idleAddr is an address whose last connection closed at the time at.
type idleAddr struct {
	addr netip.Addr
	at   int64
}

// NewLimiter returns a Limiter for lim, nil when lim bounds nothing.
func NewLimiter(lim Limits) *Limiter {
	if lim == (Limits{}) {
		return nil
	}
	if lim.AcceptRate > 0 && lim.AcceptBurst <= 0 {
		lim.AcceptBurst = lim.AcceptRate
	}
	return &Limiter{lim: lim, now: time.Now, addrs: make(map[netip.Addr]*addrCount)}
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

// AddrOfPort is AddrOf for a netip.AddrPort (hub.Conn.RemoteAddrPort,
// reactor.Stream.RemoteAddrPort): the address unmapped and without a zone,
// the zero Addr for the zero AddrPort. It allocates nothing.
func AddrOfPort(ap netip.AddrPort) netip.Addr {
	if !ap.IsValid() {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

// LoopbackHost reports whether host, a host name or address with or
// without a port (a Host header, a listener's address), names the
// loopback interface: "localhost", 127.0.0.0/8, ::1.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Admit counts a connection just accepted from addr, pending, and reports
// whether one of the bounds was already reached: the connection then
// counts all the same, until Closed, and its transport answers the refusal
// and closes it. The node-wide bounds are checked before the per-address
// ones, and the accept rate before the counts of the address.
func (l *Limiter) Admit(addr netip.Addr) Refusal { return l.admit(addr, true) }

// AdmitDeferred is Admit for a connection whose client address is not
// known yet (a PROXY protocol header is awaited, its socket's peer is the
// proxy): it is counted under addr, the socket's, but only the node-wide
// bounds are checked; Readdress checks the address's once it is known.
func (l *Limiter) AdmitDeferred(addr netip.Addr) Refusal { return l.admit(addr, false) }

func (l *Limiter) admit(addr netip.Addr, perAddress bool) Refusal {
	if l == nil {
		return Admitted
	}
	l.mu.Lock()
	now := l.now().UnixNano()
	l.forgetIdle(now)
	r := Admitted
	switch {
	case l.lim.MaxConnections > 0 && l.total >= l.lim.MaxConnections:
		r = TooManyConnections
	case l.lim.MaxPending > 0 && l.pending >= l.lim.MaxPending:
		r = TooManyPending
	}
	a := l.entry(addr, now)
	if r == Admitted && perAddress {
		r = l.checkAddress(a, now)
	}
	l.add(a, true)
	l.mu.Unlock()
	return l.note(r)
}

// entry returns addr's counts, made with a full bucket if it has none.
// Called with l.mu held.
func (l *Limiter) entry(addr netip.Addr, now int64) *addrCount {
	a := l.addrs[addr]
	if a == nil {
		a = &addrCount{tokens: float64(l.lim.AcceptBurst), at: now}
		l.addrs[addr] = a
	}
	return a
}

// add counts one more connection from a, pending or not. Called with l.mu
// held.
func (l *Limiter) add(a *addrCount, pending bool) {
	l.total++
	a.open++
	if pending {
		l.pending++
		a.pending++
	}
}

// note counts r when it is a refusal, and returns it.
func (l *Limiter) note(r Refusal) Refusal {
	if r != Admitted {
		l.refused[r].Add(1)
	}
	return r
}

// checkAddress checks a's bounds for one more connection at now, taking a
// token from its bucket when it is admitted. Called with l.mu held.
func (l *Limiter) checkAddress(a *addrCount, now int64) Refusal {
	switch {
	case l.lim.AcceptRate > 0 && !a.take(l.lim, now):
		return TooFastFromAddress
	case l.lim.MaxPerAddress > 0 && int(a.open) >= l.lim.MaxPerAddress:
		return TooManyFromAddress
	case l.lim.MaxPendingPerAddress > 0 && int(a.pending) >= l.lim.MaxPendingPerAddress:
		return TooManyPendingFromAddress
	}
	return Admitted
}

// refill adds the tokens earned since a.at, up to the burst.
func (a *addrCount) refill(lim Limits, now int64) {
	if now > a.at {
		a.tokens = min(float64(lim.AcceptBurst), a.tokens+float64(now-a.at)*float64(lim.AcceptRate)/1e9)
		a.at = now
	}
}

// take takes a token from a's bucket, and reports false when none is left.
func (a *addrCount) take(lim Limits, now int64) bool {
	a.refill(lim, now)
	if a.tokens < 1 {
		return false
	}
	a.tokens--
	return true
}

// Readdress moves a connection counted under from (Admit, AdmitDeferred)
// to to, its client's address now known (a PROXY protocol header, a
// trusted proxy's forwarding header; from and to may be equal), and checks
// to's bounds as Admit does: the accept rate and the counts of to before
// this connection. pending says it has not authenticated. Refused, it is
// counted under to all the same, until Closed, and its transport answers
// the refusal and closes it.
func (l *Limiter) Readdress(from, to netip.Addr, pending bool) Refusal {
	if l == nil {
		return Admitted
	}
	l.mu.Lock()
	now := l.now().UnixNano()
	l.release(from, pending, now)
	a := l.entry(to, now)
	r := l.checkAddress(a, now)
	l.add(a, pending)
	l.mu.Unlock()
	return l.note(r)
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
	now := l.now().UnixNano()
	l.release(addr, pending, now)
	l.forgetIdle(now)
	l.mu.Unlock()
}

// release uncounts a connection from addr; an address left with none is
// forgotten, or, while its bucket is not full, queued to be (forgetIdle).
// Called with l.mu held.
func (l *Limiter) release(addr netip.Addr, pending bool, now int64) {
	a := l.addrs[addr]
	if a == nil {
		return
	}
	l.total--
	a.open--
	if pending && a.pending > 0 {
		a.pending--
		l.pending--
	}
	if a.open > 0 || l.forgetRested(addr, a, now) {
		return
	}
	l.idle = append(l.idle, idleAddr{addr, now})
}

// forgetRested forgets addr, whose counts are a and which has no
// connection, once its bucket is full again, and reports whether it did.
// Called with l.mu held.
func (l *Limiter) forgetRested(addr netip.Addr, a *addrCount, now int64) bool {
	if a.refill(l.lim, now); a.tokens < float64(l.lim.AcceptBurst) {
		return false
	}
	delete(l.addrs, addr)
	return true
}

// forgetIdle forgets the queued addresses whose bucket has refilled since
// they were left without a connection (AcceptBurst/AcceptRate seconds at
// most) and still have none; the queue is in the order they were left in.
// Called with l.mu held.
func (l *Limiter) forgetIdle(now int64) {
	if len(l.idle) == l.idleHead {
		return
	}
	window := int64(float64(l.lim.AcceptBurst) / float64(l.lim.AcceptRate) * 1e9)
	for l.idleHead < len(l.idle) && now-l.idle[l.idleHead].at >= window {
		e := l.idle[l.idleHead]
		l.idle[l.idleHead] = idleAddr{}
		l.idleHead++
		if a := l.addrs[e.addr]; a != nil && a.open <= 0 {
			l.forgetRested(e.addr, a, now)
		}
	}
	if l.idleHead == len(l.idle) {
		l.idle, l.idleHead = l.idle[:0], 0
	} else if l.idleHead > len(l.idle)/2 {
		l.idle, l.idleHead = append(l.idle[:0], l.idle[l.idleHead:]...), 0
	}
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

// tracked returns the addresses the limiter holds now.
func (l *Limiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.addrs)
}
