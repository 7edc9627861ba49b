package server

import (
	"context"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/cloudwego/netpoll"
)

// readChunk is the most input one onRequest call takes; netpoll calls again
// while input remains, so a large backlog is worked through in bounded
// steps and the backlog check below runs between them.
const readChunk = 256 << 10

// onRequest consumes what netpoll has buffered for the connection, up to
// readChunk bytes. It never waits for more bytes (see the package doc).
//
// netpoll keeps reading a socket into memory whatever its handler does, so
// a client sending faster than its frames can be processed would grow that
// buffer without bound. While the hub's workers are behind, the socket is
// not read any more after this call (hub.Hub.HoldInput: TCP slows the
// client down) until they catch up; otherwise a connection whose
// unprocessed input passes Config.MaxInputBacklog is closed with 1008
// input_overflow.
//
// Liveness counts whole frames: only a call that completes a frame (or, in
// the handshake, a request) moves the idle deadline, and a frame or
// fragmented message still in progress is timed from its first byte
// (hub.Conn.SetFrameStart), so a client trickling a frame byte by byte is
// closed with 1008 frame_timeout.
//
// Once a close is decided the rest of the input is discarded here until
// the peer closes its side or the hub releases the socket.
func (s *Server) onRequest(ctx context.Context, nc netpoll.Connection) error {
	st, _ := ctx.(*connState)
	r := nc.Reader()
	n := r.Len()
	if st == nil || st.Conn == nil || st.closing || st.Conn.Closing() {
		_ = r.Skip(n)
		_ = r.Release()
		return nil
	}
	// What netpoll reads at once when a paused socket is resumed is the
	// pause's doing, not the client's: it is worked through, not closed.
	// Up to 4 × the bound, while it lasts.
	if backlog := n; backlog > s.cfg.MaxInputBacklog && (!st.Conn.InputHeld() || backlog > 4*s.cfg.MaxInputBacklog) && !s.hub.HoldInput(st.Conn) {
		st.Disconnect(disconnect.New(disconnect.InputOverflow))
		_ = r.Skip(n)
		_ = r.Release()
		st.partial, st.wrote = nil, false
		return nil
	}
	n = min(n, readChunk)
	s.obs.bytesIn.Add(uint64(n))
	now := time.Now().UnixNano()
	var buf []byte
	fromPartial := len(st.partial) > 0
	if fromPartial {
		chunk, _ := r.Next(n)
		st.partial = append(st.partial, chunk...)
		buf = st.partial
	} else {
		buf, _ = r.Peek(n)
	}
	st.msgDone = false
	used, complete := s.process(st, buf)
	rest := buf[used:]
	if complete {
		st.Conn.Touch(now)
	}
	s.trackFrame(st, len(rest) > 0, now)
	switch {
	case st.closing:
		st.partial = nil
	case fromPartial && len(rest) == 0:
		st.partial = nil
	case fromPartial && cap(st.partial) > partialKeep && cap(st.partial) > 2*max(int(st.need), len(rest)):
		// Do not keep a large buffer for a small remainder.
		st.partial = append(make([]byte, 0, partialCap(len(rest), int(st.need))), rest...)
	case fromPartial:
		st.partial = append(st.partial[:0], rest...)
	case len(rest) > 0:
		st.partial = append(make([]byte, 0, partialCap(len(rest), int(st.need))), rest...)
	}
	if !fromPartial {
		_ = r.Skip(n)
	}
	_ = r.Release()
	if st.wrote {
		st.wrote = false
		st.Conn.Flush()
	}
	s.hub.HoldInput(st.Conn) // while the workers are behind, read no more of it
	if st.Conn.InputHeld() && r.Len() == 0 && !s.hub.InputPaused(st.Conn) {
		st.Conn.InputDrained() // all that came in since the resume is worked through
	}
	return nil
}

// trackFrame records when the frame or fragmented message in progress after
// this read began (hub.Conn.SetFrameStart): now when it began in this read
// (nothing was in progress, or a data message completed first), unchanged
// when it goes on from an earlier read. A partial frame cannot contain
// another frame, so until it completes no other frame resets its start; a
// fragmented message keeps its start across the control frames between its
// fragments.
func (s *Server) trackFrame(st *connState, partialTail bool, now int64) {
	if st.closing || st.Conn.Phase() == hub.PhaseHandshake {
		return // the handshake has its own deadline
	}
	inProgress := partialTail || st.fragOp != 0
	start := st.Conn.FrameStart()
	switch {
	case !inProgress:
		if start != 0 {
			st.Conn.SetFrameStart(0)
		}
	case start == 0 || st.msgDone:
		st.Conn.SetFrameStart(now)
	}
}

// partialKeep is the partial-buffer capacity kept across frames without
// reallocating.
const partialKeep = 4096

// partialCap is the capacity of a new partial buffer holding rest bytes whose
// first frame needs need bytes in total: enough for that frame, but never
// more than partialKeep or twice rest, whichever is larger. A declared length
// is thus never reserved before its bytes come (a bare header costs at most
// partialKeep bytes); append grows the buffer as the payload arrives.
func partialCap(rest, need int) int {
	return max(rest, min(need, max(2*rest, partialKeep)))
}

// process handles every complete request or frame at the start of buf and
// returns the number of bytes used, and whether at least one was complete.
// It stops at the first incomplete one.
func (s *Server) process(st *connState, buf []byte) (used int, complete bool) {
	for used < len(buf) && !st.closing {
		var n int
		if st.Conn.Phase() == hub.PhaseHandshake {
			n = s.handshake(st, buf[used:])
		} else {
			n = s.readFrame(st, buf[used:])
		}
		if n == 0 {
			break
		}
		used += n
		complete = true
	}
	return used, complete
}

// write queues a reply frame; it is flushed at the end of onRequest. It
// goes behind the replies that workers still owe the connection
// (hub.Conn.Write), so replies come back in request order (protocol.md
// §3.3).
func (st *connState) write(frame []byte) {
	if st.Conn.Write(frame) {
		st.wrote = true
	}
}
