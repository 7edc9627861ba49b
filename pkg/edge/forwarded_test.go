package edge

import (
	"bytes"
	"net/netip"
	"testing"
)

func TestParseTrustedProxies(t *testing.T) {
	tp, err := ParseTrustedProxies(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8, ::ffff:198.51.100.0/120,")
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[string]bool{
		"10.1.2.3": true, "11.0.0.1": false, "192.0.2.7": true, "192.0.2.8": false,
		"fd00::1": true, "fe80::1": false, "198.51.100.9": true, "::ffff:10.0.0.1": true,
	} {
		if got := tp.Trusts(netip.MustParseAddr(a)); got != want {
			t.Errorf("%s: %v", a, got)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "10.0.0.1/8/8", "fe80::1%eth0", "1.2.3"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if tp, err := ParseTrustedProxies(""); tp != nil || err != nil {
		t.Fatal("empty list")
	}
}

func TestClientAddr(t *testing.T) {
	tp, _ := ParseTrustedProxies("10.0.0.0/8, 2001:db8:ffff::/48")
	proxy := netip.MustParseAddr("10.0.0.2")
	stranger := netip.MustParseAddr("198.51.100.9")
	b := func(v ...string) [][]byte {
		var out [][]byte
		for _, s := range v {
			out = append(out, []byte(s))
		}
		return out
	}
	for _, tc := range []struct {
		name           string
		peer           netip.Addr
		forwarded, xff [][]byte
		want           string
		ok             bool
	}{
		{"untrusted peer: forged header ignored", stranger, nil, b("203.0.113.5"), "198.51.100.9:0", false},
		{"untrusted peer: forged Forwarded ignored", stranger, b("for=203.0.113.5"), nil, "198.51.100.9:0", false},
		{"trusted peer, no header", proxy, nil, nil, "10.0.0.2:0", false},
		{"X-Forwarded-For", proxy, nil, b("203.0.113.5"), "203.0.113.5:0", true},
		{"X-Forwarded-For rightmost untrusted", proxy, nil, b("192.0.2.1, 203.0.113.5, 10.0.0.9"), "203.0.113.5:0", true},
		{"X-Forwarded-For over two headers", proxy, nil, b("192.0.2.1", "203.0.113.5, 10.0.0.9"), "203.0.113.5:0", true},
		{"X-Forwarded-For all trusted", proxy, nil, b("10.0.0.7, 10.0.0.9"), "10.0.0.7:0", true},
		{"X-Forwarded-For garbage stops at the proxy", proxy, nil, b("203.0.113.5, garbage, 10.0.0.9"), "10.0.0.9:0", true},
		{"X-Forwarded-For with port", proxy, nil, b("203.0.113.5:4711"), "203.0.113.5:4711", true},
		{"X-Forwarded-For mapped", proxy, nil, b("::ffff:203.0.113.5"), "203.0.113.5:0", true},
		{"Forwarded", proxy, b("for=192.0.2.43"), nil, "192.0.2.43:0", true},
		{"Forwarded over X-Forwarded-For", proxy, b("for=192.0.2.43"), b("203.0.113.5"), "192.0.2.43:0", true},
		{"Forwarded quoted IPv6 with port", proxy, b(`for="[2001:db8:cafe::17]:4711"`), nil, "[2001:db8:cafe::17]:4711", true},
		{"Forwarded quoted IPv6", proxy, b(`For="[2001:db8:cafe::17]"`), nil, "[2001:db8:cafe::17]:0", true},
		{"Forwarded pairs and elements", proxy, b(`for=192.0.2.60;proto=http;by=203.0.113.43, for="10.1.1.1";host="a,b;c"`), nil, "192.0.2.60:0", true},
		{"Forwarded trusted IPv6 hop", proxy, b(`for=192.0.2.60, for="[2001:db8:ffff::1]"`), nil, "192.0.2.60:0", true},
		{"Forwarded unknown", proxy, b("for=unknown"), nil, "10.0.0.2:0", true},
		{"Forwarded obfuscated behind a trusted hop", proxy, b(`for=_hidden, for=10.0.0.5`), nil, "10.0.0.5:0", true},
		{"Forwarded element without for", proxy, b("for=192.0.2.60, proto=https"), nil, "10.0.0.2:0", true},
		{"Forwarded escaped quote", proxy, b(`for="192.0.2.\61"`), nil, "192.0.2.61:0", true},
		{"Forwarded unterminated quote", proxy, b(`for="192.0.2.61`), nil, "10.0.0.2:0", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tp.ClientAddr(tc.peer, tc.forwarded, tc.xff)
			if got != netip.MustParseAddrPort(tc.want) || ok != tc.ok {
				t.Fatalf("%v %v, want %s %v", got, ok, tc.want, tc.ok)
			}
		})
	}
	if got, ok := TrustedProxies(nil).ClientAddr(proxy, nil, b("203.0.113.5")); ok || got.Addr() != proxy {
		t.Fatal("no trusted proxies: every header ignored")
	}
}

// FuzzForwarded: no panic; an untrusted peer keeps its address whatever the
// headers; the address found is the peer's or one the headers name.
func FuzzForwarded(f *testing.F) {
	f.Add([]byte(`for="[2001:db8:cafe::17]:4711";proto=https, for=10.0.0.1`), []byte("203.0.113.5, 10.0.0.9"))
	f.Add([]byte(`for="\"`), []byte(""))
	f.Add([]byte(""), []byte("garbage,,"))
	tp, _ := ParseTrustedProxies("10.0.0.0/8")
	peer := netip.MustParseAddr("10.0.0.2")
	stranger := netip.MustParseAddr("198.51.100.9")
	f.Fuzz(func(t *testing.T, fwd, xff []byte) {
		var fw [][]byte
		if len(fwd) > 0 {
			fw = [][]byte{fwd}
		}
		if got, ok := tp.ClientAddr(stranger, fw, [][]byte{xff}); ok || got.Addr() != stranger {
			t.Fatalf("untrusted peer readdressed to %v", got)
		}
		got, _ := tp.ClientAddr(peer, fw, [][]byte{xff})
		if !got.Addr().IsValid() || got.Addr().Zone() != "" || got.Addr().Is4In6() {
			t.Fatalf("address %v", got)
		}
		// The address is the peer's or written in a header (any case: an
		// IPv6 address is printed in lower case).
		if got.Addr() != peer && !bytes.Contains(bytes.ToLower(append(bytes.Clone(fwd), xff...)), []byte(got.Addr().String()[:1])) {
			t.Fatalf("%v named by no header", got)
		}
	})
}
