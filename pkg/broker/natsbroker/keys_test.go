package natsbroker

import (
	"regexp"
	"testing"

	"github.com/NoLagApp/kraken/pkg/broker"
)

var kvKeyAlphabet = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

func TestStateKeysRoundTrip(t *testing.T) {
	tests := []struct{ kind, node, item string }{
		{kindNode, "a", ""},
		{kindNode, "host-1_x9f3", ""},
		{kindPresence, "node.1", "conn:1/2.3 é*>"},
		{kindPresence, "a", "="},
		{kindPresence, "a", "=41"},
		{kindConns, "n", ""},
		{kindConns, "n", "org/é \x00\xff"},
	}
	for _, tt := range tests {
		key := stateKey(tt.kind, tt.node, tt.item)
		if !kvKeyAlphabet.MatchString(key) {
			t.Errorf("stateKey(%q, %q, %q) = %q, outside the KV key alphabet", tt.kind, tt.node, tt.item, key)
		}
		kind, node, item, err := parseStateKey(key)
		if err != nil || kind != tt.kind || node != tt.node || item != tt.item {
			t.Errorf("parseStateKey(%q) = %q, %q, %q, %v; want %q, %q, %q", key, kind, node, item, err, tt.kind, tt.node, tt.item)
		}
	}
}

func TestMalformedStateKeys(t *testing.T) {
	for _, key := range []string{"", "x.a", "n", "n.a.b", "p.a", "p..b", "p.a.=4", "p.a.=zz", "c.a.b.c", "p.=.b"} {
		if _, _, _, err := parseStateKey(key); err == nil {
			t.Errorf("parseStateKey(%q) accepted", key)
		}
	}
}

func FuzzStateKey(f *testing.F) {
	for _, s := range []string{"", "a", "=", "é.*>", "\x00"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, node, item string) {
		if node == "" {
			return
		}
		key := stateKey(kindPresence, node, item)
		if !kvKeyAlphabet.MatchString(key) {
			t.Fatalf("key %q outside the KV alphabet", key)
		}
		_, n, i, err := parseStateKey(key)
		if err != nil || n != node || i != item {
			t.Fatalf("round trip of %q, %q gave %q, %q, %v", node, item, n, i, err)
		}
	})
}

func TestPresenceCodec(t *testing.T) {
	want := []byte{0x00, 0xff, 0xc1}
	p, err := decodePresence("n", "i", encodePresence(&presenceFixture))
	if err != nil || p.RoomID != "r" || p.RoomSlug != "s" || p.ActorTokenID != "t" || string(p.Data) != string(want) || p.JoinedAt != 7 || p.Node != "n" || p.ID != "i" {
		t.Fatalf("decoded %+v, %v", p, err)
	}
	if _, err := decodePresence("n", "i", []byte{0x91, 0x01}); err == nil {
		t.Fatal("a short presence decoded")
	}
}

var presenceFixture = broker.Presence{RoomID: "r", RoomSlug: "s", ActorTokenID: "t", Data: []byte{0x00, 0xff, 0xc1}, JoinedAt: 7}
