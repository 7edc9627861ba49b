package server

import (
	"context"
	"runtime"
	"time"

	"github.com/cloudwego/netpoll"
	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/hub"
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
// buffer without bound: a connection whose unprocessed input passes
// Config.MaxInputBacklog is closed with 1008 input_overflow.
func (s *Server) onRequest(ctx context.Context, nc netpoll.Connection) error {
	st, _ := ctx.(*connState)
	r := nc.Reader()
	n := r.Len()
	if st == nil || st.c == nil || st.closing {
		_ = r.Skip(n)
		_ = r.Release()
		return nil
	}
	if n > s.cfg.MaxInputBacklog {
		s.closeProtocol(st, ws.StatusPolicyViolation, "input_overflow")
		_ = r.Skip(n)
		_ = r.Release()
		st.partial, st.wrote = nil, false
		st.c.Flush()
		_ = nc.Close()
		return nil
	}
	n = min(n, readChunk)
	st.c.Touch(time.Now().UnixNano())
	var buf []byte
	fromPartial := len(st.partial) > 0
	if fromPartial {
		chunk, _ := r.Next(n)
		st.partial = append(st.partial, chunk...)
		buf = st.partial
	} else {
		buf, _ = r.Peek(n)
	}
	used := s.process(st, buf)
	rest := buf[used:]
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
		st.c.Flush()
	}
	if st.closing {
		_ = nc.Close()
	}
	return nil
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
// returns the number of bytes used. It stops at the first incomplete one.
func (s *Server) process(st *connState, buf []byte) int {
	off := 0
	for off < len(buf) && !st.closing {
		var n int
		if st.c.Phase() == hub.PhaseHandshake {
			n = s.handshake(st, buf[off:])
		} else {
			n = s.readFrame(st, buf[off:])
		}
		if n == 0 {
			break
		}
		off += n
	}
	return off
}

// write queues a reply frame; it is flushed at the end of onRequest. It
// first waits for the replies that workers still owe the connection, so
// replies come back in request order (protocol.md §3.3).
func (st *connState) write(frame []byte) {
	st.waitReplies()
	if st.c.Write(frame) {
		st.wrote = true
	}
}

// replyWait bounds how long a reader waits for a worker's reply; workers
// never block, so this is only a safety net.
const replyWait = 2 * time.Second

// waitReplies waits until no worker owes the connection a reply. The work
// is already queued on the workers, so this takes microseconds.
func (st *connState) waitReplies() {
	var deadline time.Time
	for i := 0; st.c.PendingReplies() > 0; i++ {
		switch {
		case i < 64:
			runtime.Gosched()
		case i == 64:
			deadline = time.Now().Add(replyWait)
		case st.c.Closed() || time.Now().After(deadline):
			return
		default:
			time.Sleep(20 * time.Microsecond)
		}
	}
}
