package edge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/pires/go-proxyproto"
)

// v2Header builds a version 2 header with the library's own encoder: cmd
// PROXY or LOCAL, src and dst TCP addresses, and tlvs appended.
func v2Header(t testing.TB, cmd proxyproto.ProtocolVersionAndCommand, src, dst string, tlvs []proxyproto.TLV) []byte {
	t.Helper()
	h := proxyproto.HeaderProxyFromAddrs(2, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(src)),
		net.TCPAddrFromAddrPort(netip.MustParseAddrPort(dst)))
	h.Command = cmd
	if tlvs != nil {
		if err := h.SetTLVs(tlvs); err != nil {
			t.Fatal(err)
		}
	}
	b, err := h.Format()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseProxyHeader(t *testing.T) {
	const after = "GET /ws HTTP/1.1\r\n"
	v4 := v2Header(t, proxyproto.PROXY, "203.0.113.7:51000", "10.0.0.1:8080", nil)
	v6 := v2Header(t, proxyproto.PROXY, "[2001:db8::7]:4711", "[2001:db8::1]:8080", nil)
	local := v2Header(t, proxyproto.LOCAL, "203.0.113.7:51000", "10.0.0.1:8080", nil)
	tlv := v2Header(t, proxyproto.PROXY, "203.0.113.8:1234", "10.0.0.1:8080",
		[]proxyproto.TLV{{Type: proxyproto.PP2_TYPE_AUTHORITY, Value: []byte("example.com")},
			{Type: proxyproto.PP2_TYPE_NOOP, Value: make([]byte, 300)}})
	badVersion := bytes.Clone(v4)
	badVersion[12] = 0x11
	badCommand := bytes.Clone(v4)
	badCommand[12] = 0x2F
	shortLength := bytes.Clone(v4)
	binary.BigEndian.PutUint16(shortLength[14:], 4) // an IPv4 block is 12 bytes
	for _, tc := range []struct {
		name string
		in   string
		used int
		src  string // "" for the zero AddrPort
		err  error
	}{
		{"v1 TCP4", "PROXY TCP4 198.51.100.22 203.0.113.1 35646 80\r\n" + after, 47, "198.51.100.22:35646", nil},
		{"v1 TCP6", "PROXY TCP6 2001:db8::22 2001:db8::1 35646 80\r\n" + after, 46, "[2001:db8::22]:35646", nil},
		{"v1 UNKNOWN", "PROXY UNKNOWN\r\n" + after, 15, "", nil},
		{"v1 UNKNOWN with addresses", "PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n", 35, "", nil},
		{"v1 longest", "PROXY UNKNOWN ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n", 107, "", nil},
		{"v2 IPv4", string(v4) + after, len(v4), "203.0.113.7:51000", nil},
		{"v2 IPv6", string(v6), len(v6), "[2001:db8::7]:4711", nil},
		{"v2 LOCAL", string(local) + after, len(local), "", nil},
		{"v2 TLVs skipped", string(tlv) + after, len(tlv), "203.0.113.8:1234", nil},
		{"empty", "", 0, "", ErrProxyNeedMore},
		{"v1 signature truncated", "PROX", 0, "", ErrProxyNeedMore},
		{"v1 line truncated", "PROXY TCP4 198.51.100.22 203.0", 0, "", ErrProxyNeedMore},
		{"v2 signature truncated", string(v4[:7]), 0, "", ErrProxyNeedMore},
		{"v2 fixed part truncated", string(v4[:15]), 0, "", ErrProxyNeedMore},
		{"v2 addresses truncated", string(v4[:20]), 0, "", ErrProxyNeedMore},
		{"v2 TLVs truncated", string(tlv[:len(tlv)-1]), 0, "", ErrProxyNeedMore},
		{"HTTP request", after, 0, "", ErrProxyHeader},
		{"garbage", "\x16\x03\x01", 0, "", ErrProxyHeader},
		{"v1 without space", "PROXYTCP4", 0, "", ErrProxyHeader},
		{"v1 oversized", "PROXY UNKNOWN " + string(bytes.Repeat([]byte("f"), 100)), 0, "", ErrProxyHeader},
		{"v1 oversized line", "PROXY UNKNOWN " + string(bytes.Repeat([]byte("f"), 100)) + "\r\n", 0, "", ErrProxyHeader},
		{"v1 LF without CR", "PROXY TCP4 198.51.100.22 203.0.113.1 35646 80\n", 0, "", ErrProxyHeader},
		{"v1 bad protocol", "PROXY UDP4 198.51.100.22 203.0.113.1 35646 80\r\n", 0, "", ErrProxyHeader},
		{"v1 bad address", "PROXY TCP4 198.51.100.300 203.0.113.1 35646 80\r\n", 0, "", ErrProxyHeader},
		{"v1 IPv6 in TCP4", "PROXY TCP4 2001:db8::22 203.0.113.1 35646 80\r\n", 0, "", ErrProxyHeader},
		{"v1 bad port", "PROXY TCP4 198.51.100.22 203.0.113.1 65536 80\r\n", 0, "", ErrProxyHeader},
		{"v1 missing field", "PROXY TCP4 198.51.100.22 203.0.113.1 35646\r\n", 0, "", ErrProxyHeader},
		{"v2 version 1", string(badVersion), 0, "", ErrProxyHeader},
		{"v2 unknown command", string(badCommand), 0, "", ErrProxyHeader},
		{"v2 length under the address block", string(shortLength), 0, "", ErrProxyHeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			used, src, err := ParseProxyHeader([]byte(tc.in))
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if used != tc.used {
				t.Errorf("used %d, want %d", used, tc.used)
			}
			var want netip.AddrPort
			if tc.src != "" {
				want = netip.MustParseAddrPort(tc.src)
			}
			if src != want {
				t.Errorf("source %v, want %v", src, want)
			}
		})
	}
}

// Every prefix of a valid header is "need more", never an error, so a
// header arriving one byte at a time is read whole.
func TestProxyHeaderPrefixesNeedMore(t *testing.T) {
	for _, h := range [][]byte{
		[]byte("PROXY TCP4 198.51.100.22 203.0.113.1 35646 80\r\n"),
		v2Header(t, proxyproto.PROXY, "[2001:db8::7]:4711", "[2001:db8::1]:8080", nil),
	} {
		for i := range len(h) {
			if _, _, err := ParseProxyHeader(h[:i]); err != ErrProxyNeedMore {
				t.Fatalf("%q: %v", h[:i], err)
			}
		}
		if n, _, err := ParseProxyHeader(h); err != nil || n != len(h) {
			t.Fatalf("%q: %d %v", h, n, err)
		}
	}
}

// FuzzProxyHeader: no panic; "need more" only for a prefix that may still
// become a header (within the bounds); a header's length within buf and
// the bounds; a parsed header parses the same from a longer buffer.
func FuzzProxyHeader(f *testing.F) {
	f.Add([]byte("PROXY TCP4 198.51.100.22 203.0.113.1 35646 80\r\nGET"))
	f.Add([]byte("PROXY TCP6 2001:db8::22 2001:db8::1 35646 80\r\n"))
	f.Add([]byte("PROXY UNKNOWN\r\n"))
	f.Add(v2Header(f, proxyproto.PROXY, "203.0.113.7:51000", "10.0.0.1:8080", nil))
	f.Add(v2Header(f, proxyproto.LOCAL, "[2001:db8::7]:4711", "[2001:db8::1]:8080", nil))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		used, src, err := ParseProxyHeader(b)
		switch {
		case err == ErrProxyNeedMore:
			if len(b) >= MaxProxyHeader {
				t.Fatalf("need more after %d bytes", len(b))
			}
		case err != nil:
			if !errors.Is(err, ErrProxyHeader) || used != 0 || src.IsValid() {
				t.Fatalf("%d %v %v", used, src, err)
			}
		default:
			if used <= 0 || used > len(b) || used > MaxProxyHeader {
				t.Fatalf("used %d of %d", used, len(b))
			}
			used2, src2, err2 := ParseProxyHeader(append(bytes.Clone(b), "trailing"...))
			if used2 != used || src2 != src || err2 != nil {
				t.Fatalf("with trailing bytes: %d %v %v", used2, src2, err2)
			}
		}
	})
}
