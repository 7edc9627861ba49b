package hub

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// CloseSome closes up to k open connections across the workers, each with
// the close frame of the disconnect given, never one already closing nor
// one skip excludes, and says how many; once none is left it closes fewer.
func TestCloseSomeClosesUpToKOpenConnections(t *testing.T) {
	h := startHub(t, Config{Workers: 3, CloseTimeout: time.Minute, Tick: 10 * time.Millisecond})
	enc := &textEncoding{id: 1}
	const n = 10
	trs := make([]*testTransport, n)
	kept := newTestTransport(enc)
	for i := range trs {
		trs[i] = newTestTransport(enc)
		authedConn(h, trs[i])
	}
	keptConn := authedConn(h, kept)
	eventually(t, "registered", func() bool { return h.Stats().Connections == n+1 })
	skip := func(c *Conn) bool { return c == keptConn }
	bye := disconnect.New(disconnect.Shutdown)
	ctx := context.Background()
	seen := make([]string, n) // written empties its record
	closing := func() int {
		k := 0
		for i, tr := range trs {
			seen[i] += tr.written()
			if strings.Contains(seen[i], "<1 close 1012 server shutting down>") {
				k++
			}
		}
		return k
	}
	if got := h.CloseSome(ctx, 4, bye, skip); got != 4 {
		t.Fatalf("CloseSome(4) = %d", got)
	}
	eventually(t, "4 close frames", func() bool { return closing() == 4 })
	if got := h.CloseSome(ctx, 4, bye, skip); got != 4 {
		t.Fatalf("second CloseSome(4) = %d", got)
	}
	eventually(t, "8 close frames", func() bool { return closing() == 8 })
	if got := h.CloseSome(ctx, 4, bye, skip); got != 2 {
		t.Fatalf("third CloseSome(4) = %d, want the 2 left", got)
	}
	eventually(t, "10 close frames", func() bool { return closing() == n })
	if got := kept.written(); got != "" {
		t.Fatalf("the skipped connection was written %q", got)
	}
	if got := h.CloseSome(ctx, 4, bye, skip); got != 0 {
		t.Fatalf("CloseSome with none left = %d", got)
	}
}
