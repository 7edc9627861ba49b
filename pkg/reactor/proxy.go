package reactor

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/cloudwego/netpoll"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/sockio"
)

// Readdresser is a Handler told when a connection's client address
// becomes known from its PROXY protocol header (Config.ProxyProtocol):
// Readdressed runs on the connection's reader, once, when the header is
// complete and before Process sees a byte; from is the address the
// connection had until then (its socket's peer, the proxy), and the
// Stream's RemoteAddr is now the client's (unchanged for a LOCAL or
// UNKNOWN header). The transport re-applies its per-address limits there
// (node.Node.Readdress) and may close the connection (Stream.CloseNow).
type Readdresser[C Conn] interface {
	Readdressed(st C, from net.Addr)
}

// addrSocket is the Socket of a connection on a Loop whose connections
// may learn their client's address after the accept (Config.ProxyProtocol,
// Config.Readdress): RemoteAddr is that address once set, the socket's own
// peer until then. It is read by other goroutines (the hub's logs and
// metrics, hub.Conn.RemoteAddr), hence the atomic; the rest is the
// reader's.
type addrSocket struct {
	Socket
	addr      atomic.Pointer[net.TCPAddr] // the client's address; nil: the socket's own peer
	header    bool                        // a PROXY protocol header is still awaited
	readdress bool                        // Stream.Readdress was used
}

// RemoteAddr is the client's address once set (PROXY protocol header,
// Stream.Readdress), else the socket's peer.
func (a *addrSocket) RemoteAddr() net.Addr {
	if p := a.addr.Load(); p != nil {
		return p
	}
	return a.Socket.RemoteAddr()
}

// RemoteAddrPort is RemoteAddr as a netip.AddrPort (addrPorter): the
// client's address once set, else the socket's peer's, without allocating.
func (a *addrSocket) RemoteAddrPort() netip.AddrPort {
	if p := a.addr.Load(); p != nil {
		return p.AddrPort()
	}
	return addrPortOf(a.Socket)
}

// SetReadPaused passes the read pause on to netpoll's connection
// (sockio.SetReadPaused).
func (a *addrSocket) SetReadPaused(paused bool) error { return sockio.SetReadPaused(a.Socket, paused) }

// set makes ap the connection's client address and returns the one it
// had; a zero ap keeps it.
func (a *addrSocket) set(ap netip.AddrPort) (from net.Addr) {
	from = a.RemoteAddr()
	if ap.IsValid() {
		a.addr.Store(net.TCPAddrFromAddrPort(ap))
	}
	return from
}

// addrSocket returns the connection's addrSocket, under its TLS layer on
// a TLS listener; nil on a Loop that does not readdress.
func (s *Stream) addrSocket() *addrSocket {
	sock := s.sock
	if t, ok := sock.(*tlsSocket); ok {
		sock = t.Socket
	}
	a, _ := sock.(*addrSocket)
	return a
}

// AddressPending reports whether the connection's client address is not
// known yet: a PROXY protocol header is awaited (Config.ProxyProtocol).
// RemoteAddr is then the proxy's; the transport admits the connection on
// the node's bounds alone (node.Node.Admit) and the address's follow at
// Readdresser.Readdressed.
func (s *Stream) AddressPending() bool {
	a := s.addrSocket()
	return a != nil && a.header
}

// Readdress sets the connection's client address to ap, as a trusted
// proxy forwarded it (an X-Forwarded-For or Forwarded header, on a Loop
// with Config.Readdress), and returns the address it had (for
// node.Node.Readdress). ok is false, and nothing changes, when the Loop
// does not allow it or it was done already for this connection.
func (s *Stream) Readdress(ap netip.AddrPort) (from net.Addr, ok bool) {
	a := s.addrSocket()
	if a == nil || a.readdress || !ap.IsValid() {
		return nil, false
	}
	a.readdress = true
	return a.set(ap), true
}

// proxyHeader is the first step of a read on a Loop with
// Config.ProxyProtocol: until the connection's PROXY protocol header is
// complete it is taken from r (kept in the Stream's partial buffer while
// incomplete) and nothing reaches Process. Once it is, the client's
// address is set and the Handler told (Readdresser), and the bytes after
// it are left for the rest of the read: in r, or in the partial buffer
// when the header spanned reads. It reports whether the read goes on with
// them: false while the header is incomplete, when nothing follows it, and
// when the connection is closing (a malformed header, closed without an
// answer and counted, ProxyHeaderErrors; a refusal of the Handler).
func (l *Loop[C]) proxyHeader(st C, s *Stream, c *hub.Conn, r netpoll.Reader) bool {
	a := s.addrSocket()
	if a == nil || !a.header {
		return true
	}
	n := r.Len()
	var buf []byte
	if len(s.part()) == 0 {
		buf, _ = r.Peek(min(n, edge.MaxProxyHeader))
	} else {
		chunk, _ := r.Next(min(n, edge.MaxProxyHeader-len(s.part())))
		buf = append(s.part(), chunk...)
		s.setPart(buf)
	}
	used, src, err := edge.ParseProxyHeader(buf)
	switch {
	case errors.Is(err, edge.ErrProxyNeedMore):
		if len(s.part()) == 0 {
			s.setPart(append(make([]byte, 0, len(buf)), buf...))
			_ = r.Skip(len(buf))
		}
		_ = r.Release()
		return false
	case err != nil:
		l.proxyErrors.Add(1)
		l.logProxyError(c, err)
		s.setPart(nil)
		s.CloseNow(c, disconnect.WithText(disconnect.ProtocolError, "malformed PROXY protocol header"))
		_ = r.Skip(r.Len())
		_ = r.Release()
		return false
	}
	if len(s.part()) == 0 {
		_ = r.Skip(used)
	} else if rest := s.part()[used:]; len(rest) > 0 {
		s.setPart(append(s.part()[:0], rest...))
	} else {
		s.setPart(nil)
	}
	_ = r.Release()
	a.header = false
	from := a.set(src)
	if rd, ok := l.h.(Readdresser[C]); ok {
		rd.Readdressed(st, from)
	}
	if s.closing {
		s.setPart(nil)
		_ = r.Skip(r.Len())
		_ = r.Release()
		s.flush(c)
		return false
	}
	return r.Len() > 0 || len(s.part()) > 0
}

// ProxyHeaderErrors returns the connections closed for a malformed PROXY
// protocol header (Config.ProxyProtocol).
func (l *Loop[C]) ProxyHeaderErrors() uint64 { return l.proxyErrors.Load() }

// logProxyError logs a malformed PROXY protocol header at warn, at most
// once a second per Loop (a misconfigured proxy, or a client reaching the
// port directly, would send one per connection); the lines left out are
// counted in the next one (ProxyHeaderErrors counts them all).
func (l *Loop[C]) logProxyError(c *hub.Conn, err error) {
	now := time.Now().UnixNano()
	last := l.proxyLogAt.Load()
	if now-last < int64(time.Second) || !l.proxyLogAt.CompareAndSwap(last, now) {
		l.proxyLogSkipped.Add(1)
		return
	}
	l.log.Warn("malformed PROXY protocol header: is PROXY_PROTOCOL set only for a listener behind a proxy that always sends one?",
		zap.Uint64("conn_id", c.ID), zap.Stringer("remote_addr", c.RemoteAddr()), zap.Error(err),
		zap.Uint64("not_logged", l.proxyLogSkipped.Swap(0)))
}
