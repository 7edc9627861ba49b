package edge

import (
	"bytes"
	"fmt"
	"net/netip"
	"strings"
)

// TrustedProxies is the networks of the proxies whose forwarding headers
// are believed (TRUSTED_PROXIES, docs/SECURITY.md): a request from a peer
// in none of them keeps the peer's address, whatever it claims. The zero
// value trusts nobody.
type TrustedProxies []netip.Prefix

// ParseTrustedProxies parses a comma-separated list of networks in CIDR
// notation ("10.0.0.0/8", "fd00::/8") or single addresses ("192.0.2.7",
// taken as a /32 or /128). Spaces around entries are ignored and an empty
// list gives nil (nobody trusted). The error names the first entry that is
// neither. IPv4-mapped IPv6 networks are kept as IPv4 ones, since client
// addresses are compared unmapped (AddrOf).
func ParseTrustedProxies(list string) (TrustedProxies, error) {
	return parseList(list, "trusted proxy", parseTrustedProxy)
}

// parseTrustedProxy parses one entry of ParseTrustedProxies.
func parseTrustedProxy(raw string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(raw, "/") {
		var err error
		if p, err = netip.ParsePrefix(raw); err != nil {
			return p, fmt.Errorf("not a CIDR network: %w", err)
		}
	} else {
		a, err := netip.ParseAddr(raw)
		if err != nil || a.Zone() != "" {
			return p, fmt.Errorf("not an address (without zone) or a CIDR network")
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// Trusts reports whether a, a client address (AddrOf), is in one of the
// trusted networks.
func (t TrustedProxies) Trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range t {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddr returns the address of the client behind peer, the address a
// request came from (after the PROXY protocol, if any), from its
// forwarding headers: forwarded are the values of its Forwarded headers
// (RFC 7239), in order, and xForwardedFor those of its X-Forwarded-For
// headers, read only when there is no Forwarded header. ok is false, and
// the address peer, when peer is not trusted (the headers may be forged),
// or no header names a hop.
//
// The hops are walked from the right, the one the nearest proxy added,
// past every trusted address: the client is the rightmost address that is
// not a trusted proxy (RFC 7239 §7.5 on forged values). A hop that is not
// an address (RFC 7239's "unknown", an obfuscated identifier "_x", garbage)
// stops the walk: the client is then the trusted proxy that added it, the
// last address passed. When every hop is trusted, the leftmost one is the
// client. A port given with a hop ("192.0.2.43:47011", the quoted
// "[2001:db8::1]:4711" of RFC 7239 §6) is returned too; 0 when none.
func (t TrustedProxies) ClientAddr(peer netip.Addr, forwarded, xForwardedFor [][]byte) (client netip.AddrPort, ok bool) {
	peer = peer.Unmap()
	if !t.Trusts(peer) {
		return netip.AddrPortFrom(peer, 0), false
	}
	var hops [][]byte
	if len(forwarded) > 0 {
		for _, v := range forwarded {
			hops = appendForwardedFor(hops, v)
		}
	} else {
		for _, v := range xForwardedFor {
			for _, h := range bytes.Split(v, []byte(",")) {
				hops = append(hops, bytes.TrimSpace(h))
			}
		}
	}
	last := netip.AddrPortFrom(peer, 0)
	for i := len(hops) - 1; i >= 0; i-- {
		a, good := parseNode(hops[i])
		if !good {
			break
		}
		last = a
		if !t.Trusts(a.Addr()) {
			break
		}
	}
	return last, len(hops) > 0
}

// appendForwardedFor appends to hops the for= value of each element of v,
// a Forwarded header's value (RFC 7239 §4: elements separated by commas,
// pairs by semicolons, a value a token or a quoted string), unquoted, and
// nil for an element without one. Separators inside a quoted string do not
// count.
func appendForwardedFor(hops [][]byte, v []byte) [][]byte {
	var forValue []byte
	start, quoted, escaped := 0, false, false
	endPair := func(pair []byte) {
		k, val, found := bytes.Cut(bytes.TrimSpace(pair), []byte("="))
		if found && bytes.EqualFold(bytes.TrimSpace(k), []byte("for")) {
			forValue = unquote(bytes.TrimSpace(val))
		}
	}
	for i := 0; i <= len(v); i++ {
		if i < len(v) {
			c := v[i]
			switch {
			case escaped:
				escaped = false
				continue
			case quoted && c == '\\':
				escaped = true
				continue
			case c == '"':
				quoted = !quoted
				continue
			case quoted || c != ';' && c != ',':
				continue
			}
		}
		endPair(v[start:i])
		start = i + 1
		if i == len(v) || v[i] == ',' {
			if i < len(v) || len(bytes.TrimSpace(v)) > 0 {
				hops = append(hops, forValue)
			}
			forValue = nil
		}
	}
	return hops
}

// unquote returns the content of a quoted string (RFC 9110 §5.6.4, a
// backslash escaping the next byte), or v itself when it is a token.
func unquote(v []byte) []byte {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	v = v[1 : len(v)-1]
	if bytes.IndexByte(v, '\\') < 0 {
		return v
	}
	out := make([]byte, 0, len(v))
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		out = append(out, v[i])
	}
	return out
}

// parseNode parses a hop: an IPv4 address, an IPv6 address (bracketed or
// not), either with a port (RFC 7239 §6: "192.0.2.43:47011",
// "[2001:db8:cafe::17]:4711"), the address unmapped and without zone; ok is
// false for anything else ("unknown", "_hidden", a port that is not a
// number, an empty value).
func parseNode(v []byte) (netip.AddrPort, bool) {
	s := string(v)
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return netip.AddrPortFrom(a.Unmap(), 0), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil && ap.Addr().Zone() == "" {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
	}
	if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() && a.Zone() == "" {
			return netip.AddrPortFrom(a.Unmap(), 0), true
		}
	}
	return netip.AddrPort{}, false
}
