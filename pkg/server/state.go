package server

import (
	"context"

	"github.com/cloudwego/netpoll"

	"github.com/NoLagApp/kraken/pkg/hub"
)

// connState is the reader-side state of one connection. It is owned by the
// connection's OnRequest, which netpoll never runs concurrently with itself.
type connState struct {
	context.Context
	c  *hub.Conn
	nc netpoll.Connection

	partial []byte // tail of a half-received request or frame; nil when idle
	need    int    // bytes the frame at the head of partial needs in total

	fragOp   byte   // opcode of the fragmented message in progress, 0 if none
	frag     []byte // its payload so far
	closing  bool   // a close was decided: ignore the rest of the input
	wrote    bool   // replies were queued during this OnRequest
	failures int    // failed auth attempts (OQ-65)

	rateSec, errSec int64 // wall-clock second of the rate and error windows
	rateN, errN     int   // publishes / error frames in that second
}
