package server

import (
	"time"

	"github.com/NoLagApp/kraken/pkg/hub"
)

// connState is the reader-side state of one connection. It is owned by the
// connection's OnRequest, which netpoll never runs concurrently with itself.
// It is also the context netpoll hands back to OnRequest, so it implements
// context.Context (never done, no values) instead of embedding one: an idle
// connection costs 96 bytes here.
type connState struct {
	c  *hub.Conn
	nc socket // the socket; connState is the hub's Transport over it (transport.go)

	partial []byte // tail of a half-received request or frame; nil when idle
	frag    []byte // payload of the fragmented message in progress

	sec         uint32 // wall-clock second (unix) of the rate and error windows
	need        int32  // bytes the frame at the head of partial needs in total
	rateN, errN uint32 // publishes / error frames in that second
	fragOp      byte   // opcode of the fragmented message in progress, 0 if none
	closing     bool   // a close was decided: ignore the rest of the input
	wrote       bool   // replies were queued during this OnRequest
	msgDone     bool   // a data message completed during this OnRequest
	failures    uint8  // failed auth attempts (OQ-65)
	logged      uint16 // refusal kinds already logged at info (stats.go logRefusal)
}

// window moves the rate and error windows to the wall-clock second sec
// (unix), emptying both when it is a new one.
func (st *connState) window(sec uint32) {
	if sec != st.sec {
		st.sec, st.rateN, st.errN = sec, 0, 0
	}
}

// Deadline implements context.Context: there is none.
func (*connState) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context: never done.
func (*connState) Done() <-chan struct{} { return nil }

// Err implements context.Context.
func (*connState) Err() error { return nil }

// Value implements context.Context: no values.
func (*connState) Value(any) any { return nil }
