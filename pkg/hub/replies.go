package hub

import (
	"runtime"
	"time"
)

// ReplyWait bounds how long WaitReplies waits; workers never block, so it
// is only a safety net.
const ReplyWait = 2 * time.Second

// WaitReplies waits, on the connection's reader, until no worker owes c a
// reply (ExpectReply), so the reader's own replies keep request order
// (protocol.md §3.3). The work is already queued on the workers, so this
// takes microseconds: it yields, then sleeps briefly, and gives up after
// ReplyWait or once c is closed.
func (c *Conn) WaitReplies() {
	var deadline time.Time
	for i := 0; c.PendingReplies() > 0; i++ {
		switch {
		case i < 64:
			runtime.Gosched()
		case i == 64:
			deadline = time.Now().Add(ReplyWait)
		case c.Closed() || time.Now().After(deadline):
			return
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
}
