package session

import (
	"testing"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// TestAllowAllConnectionsShareOneGrant: under AUTH_ALLOW_ALL two
// connections of one token hold one *auth.Grant, before and after a
// revalidation, so an idle connection's grant costs it nothing of its
// own (docs/ARCHITECTURE.md "Why this shape"; bench/memprofile's grant
// row).
func TestAllowAllConnectionsShareOneGrant(t *testing.T) {
	p := newProtocolWith(t, Config{Auth: static.AllowAll{}})
	a, b := p.authed(t), p.authed(t)
	ga, gb := grantOf(a.Conn.Session()), grantOf(b.Conn.Session())
	if ga != gb {
		t.Fatalf("two connections of one token hold two grants (%p, %p)", ga, gb)
	}
	p.revalidate(nil)
	p.revalidate([]*hub.Conn{a.Conn, b.Conn})
	settle(p, a.Conn)
	settle(p, b.Conn)
	if g := grantOf(a.Conn.Session()); g != ga || grantOf(b.Conn.Session()) != ga {
		t.Fatalf("after a revalidation: grants %p and %p, want the one grant %p", g, grantOf(b.Conn.Session()), ga)
	}
}
