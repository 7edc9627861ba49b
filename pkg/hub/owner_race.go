//go:build race

package hub

import (
	"bytes"
	"runtime"
	"strconv"
)

// In race-detector builds, the methods that only a connection's worker
// may call (the "Call it only from Hub.Run" ones: HoldDeliveries,
// ReleaseDeliveries, Subscriptions, Subscribed, DropSubscription, Adopt,
// StartTap, WriteFrame, Answer) check that they run on that worker's
// goroutine and panic otherwise, so a test that breaks the single-writer
// rule fails even where the race detector would need an unlucky schedule.

// goid returns the calling goroutine's id (from its stack header,
// "goroutine N [...]"); race builds only.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseInt(string(b), 10, 64)
	return id
}

// owner records that the calling goroutine runs w (worker.run).
func (w *worker) owner() { w.gid.Store(goid()) }

// mustOwn panics unless the calling goroutine runs w; a worker that has
// not started (a benchmark driving it by hand) owns nothing yet.
func (w *worker) mustOwn(what string) {
	if gid := w.gid.Load(); gid != 0 && gid != goid() {
		panic("hub: " + what + " called off its connection's worker (the single-writer rule, docs/ARCHITECTURE.md)")
	}
}
