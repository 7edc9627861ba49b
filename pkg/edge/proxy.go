package edge

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/pires/go-proxyproto"
)

// The bounds of a PROXY protocol header (the PROXY protocol specification
// by HAProxy, haproxy.org/download/3.0/doc/proxy-protocol.txt): a version 1
// line is at most 107 bytes, CRLF included (§2.1); a version 2 header is
// 16 bytes and the length its bytes 15–16 declare, at most 65,535 (§2.2).
const (
	MaxProxyV1     = 107
	MaxProxyHeader = 16 + 65535
)

// ErrProxyNeedMore is ParseProxyHeader's answer to bytes that are the
// start of a header still incomplete: call it again once more have come.
var ErrProxyNeedMore = errors.New("edge: PROXY protocol header incomplete")

// ErrProxyHeader is the error ParseProxyHeader wraps for bytes that are not
// a PROXY protocol header (no signature, a line over 107 bytes, a field the
// specification does not allow).
var ErrProxyHeader = errors.New("edge: malformed PROXY protocol header")

var (
	proxyV1Sig = []byte("PROXY ")
	proxyV2Sig = []byte("\r\n\r\n\x00\r\nQUIT\n")
)

// ProxyHeaderLen frames a PROXY protocol header, version 1 or 2, at the
// start of buf without waiting for more: it returns the header's length
// once it is all in buf, ErrProxyNeedMore while buf is a prefix of one, and
// an error wrapping ErrProxyHeader as soon as buf cannot be the start of
// one (the spec's signatures; a version 1 line without its CRLF in its
// first 107 bytes; a version 2 header of another version than 2). The
// header's fields are not checked (ParseProxyHeader does).
func ProxyHeaderLen(buf []byte) (int, error) {
	switch {
	case hasPrefixOf(buf, proxyV1Sig):
		if len(buf) < len(proxyV1Sig) {
			return 0, ErrProxyNeedMore
		}
		i := bytes.IndexByte(buf[:min(len(buf), MaxProxyV1)], '\n')
		switch {
		case i >= 0:
			return i + 1, nil
		case len(buf) >= MaxProxyV1:
			return 0, fmt.Errorf("%w: version 1 line longer than %d bytes", ErrProxyHeader, MaxProxyV1)
		}
		return 0, ErrProxyNeedMore
	case hasPrefixOf(buf, proxyV2Sig):
		if len(buf) < 16 {
			return 0, ErrProxyNeedMore
		}
		if buf[12]>>4 != 2 {
			return 0, fmt.Errorf("%w: version %d", ErrProxyHeader, buf[12]>>4)
		}
		n := 16 + int(binary.BigEndian.Uint16(buf[14:16]))
		if len(buf) < n {
			return 0, ErrProxyNeedMore
		}
		return n, nil
	}
	return 0, fmt.Errorf("%w: no signature", ErrProxyHeader)
}

// hasPrefixOf reports whether buf and sig agree on their common length:
// buf is sig's start, or starts with sig.
func hasPrefixOf(buf, sig []byte) bool {
	n := min(len(buf), len(sig))
	return bytes.Equal(buf[:n], sig[:n])
}

// ParseProxyHeader reads the PROXY protocol header, version 1 or 2, at the
// start of buf, the first bytes a proxy sends on a connection: used is its
// length in bytes (what follows is the client's), src the client's address
// and port. src is the zero AddrPort when the header gives no client
// address to use: a version 1 "UNKNOWN", a version 2 LOCAL command (the
// proxy's own connection, a health check), or an address family other than
// TCP over IPv4 or IPv6; the socket's own address stands then. An
// IPv4-mapped IPv6 address is returned as IPv4. The error is
// ErrProxyNeedMore while the header is incomplete (ProxyHeaderLen), and
// wraps ErrProxyHeader for a malformed one. The fields are parsed by
// github.com/pires/go-proxyproto once the whole header is framed here, so
// nothing waits for bytes. It never reads past the header.
func ParseProxyHeader(buf []byte) (used int, src netip.AddrPort, err error) {
	n, err := ProxyHeaderLen(buf)
	if err != nil {
		return 0, netip.AddrPort{}, err
	}
	h, err := proxyproto.Read(bufio.NewReaderSize(bytes.NewReader(buf[:n]), n))
	if err != nil {
		return 0, netip.AddrPort{}, fmt.Errorf("%w: %w", ErrProxyHeader, err)
	}
	if h.Command.IsLocal() {
		return n, netip.AddrPort{}, nil
	}
	s, _, ok := h.TCPAddrs()
	if !ok {
		return n, netip.AddrPort{}, nil
	}
	ap := s.AddrPort()
	if !ap.Addr().IsValid() {
		return 0, netip.AddrPort{}, fmt.Errorf("%w: source address", ErrProxyHeader)
	}
	return n, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}
