package hub

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// TestEachLeavesNoGoroutineWhenWorkersDoNotRun: Hub.each gives up when its
// context ends (Shutdown's bound), and a worker that never runs its op
// (here the hub was never started) leaves no goroutine waiting for it.
func TestEachLeavesNoGoroutineWhenWorkersDoNotRun(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h := New(Config{Workers: 4})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	ran := false
	h.each(ctx, func(*worker) { ran = true })
	if ran || ctx.Err() == nil {
		t.Fatalf("each returned before its context ended (ran %v)", ran)
	}
}

// closingTransport is a transport whose peer is gone: at its CloseWrite
// (called under the Conn's write lock) it tells the hub the socket is
// closed, as a parked resumable session does when it expires.
type closingTransport struct {
	*testTransport
	h *Hub
	c *Conn
}

func (t *closingTransport) CloseWrite() error {
	_ = t.testTransport.CloseWrite()
	t.h.ClosedLater(t.c) // Closed here would take the write lock held by the caller
	return nil
}

// TestClosedLaterFromCloseWrite: a transport may report its socket gone
// from inside CloseWrite, under the Conn's write lock, with ClosedLater:
// the worker unregisters the connection (its subscriptions go) without a
// goroutine and without a deadlock.
func TestClosedLaterFromCloseWrite(t *testing.T) {
	h := startHub(t, Config{Workers: 2})
	tr := &closingTransport{testTransport: newTestTransport(&textEncoding{}), h: h}
	tr.c = authedConn(h, tr)
	subscribeAndWait(t, h, tr.c, tr.testTransport, SubSpec{Pattern: "a/b/c", Key: "k/a/b/c"})
	if n := h.Stats().Subscriptions; n != 1 {
		t.Fatalf("%d subscriptions, want 1", n)
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	h.Close(tr.c, disconnect.New(disconnect.Shutdown))
	eventually(t, "unregistered", func() bool { return h.Stats().Connections == 0 && h.Stats().Subscriptions == 0 })
	if cw, _ := tr.counts(); cw != 1 {
		t.Fatalf("CloseWrite called %d times, want 1", cw)
	}
}
