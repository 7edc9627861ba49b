package server

import (
	"time"

	"github.com/NoLagApp/kraken/pkg/session"
)

// connState is the reader-side state of one connection. It is owned by the
// connection's OnRequest, which netpoll never runs concurrently with itself.
// It is also the context netpoll hands back to OnRequest, so it implements
// context.Context (never done, no values) instead of embedding one, the
// connection's hub.Transport (transport.go) and its session.Sink (sink.go):
// an idle connection costs 96 bytes here.
type connState struct {
	session.State        // the hub record (Conn), rate and error windows, auth failures
	nc            socket // the socket; connState is the hub's Transport over it (transport.go)

	partial []byte // tail of a half-received request or frame; nil when idle
	frag    []byte // payload of the fragmented message in progress

	need    int32 // bytes the frame at the head of partial needs in total
	fragOp  byte  // opcode of the fragmented message in progress, 0 if none
	closing bool  // a close was decided: ignore the rest of the input
	wrote   bool  // replies were queued during this OnRequest
	msgDone bool  // a data message completed during this OnRequest
}

// Deadline implements context.Context: there is none.
func (*connState) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context: never done.
func (*connState) Done() <-chan struct{} { return nil }

// Err implements context.Context.
func (*connState) Err() error { return nil }

// Value implements context.Context: no values.
func (*connState) Value(any) any { return nil }
