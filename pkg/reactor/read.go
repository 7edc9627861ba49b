package reactor

import (
	"context"
	"time"

	"github.com/cloudwego/netpoll"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// readChunk is the most input one read takes; netpoll calls OnRequest again
// while input remains, so a large backlog is worked through in bounded steps
// and the backlog check runs between them.
const readChunk = 256 << 10

// resumeSlack is how far past Config.MaxInputBacklog the input of a
// connection whose paused socket was just resumed may go before it is an
// overflow: what netpoll reads at once on the resume is the pause's doing,
// not the client's.
const resumeSlack = 4

// partialKeep is the partial-buffer capacity kept across frames without
// reallocating.
const partialKeep = 4096

// onRequest is netpoll's OnRequest: it reads what netpoll has buffered for
// the connection (read).
func (l *Loop[C]) onRequest(ctx context.Context, nc netpoll.Connection) error {
	st, ok := ctx.(C)
	l.read(st, ok, nc.Reader())
	return nil
}

// read consumes what r holds for st, up to readChunk bytes, and hands it to
// the Handler. It never waits for more bytes: every complete frame is
// handled in place (zero-copy, in netpoll's buffer), and only the tail of a
// half-received frame is copied, into the partial buffer, which is let go
// of as soon as that frame completes. ok is false for a connection the
// Loop refused (draining), whose input is discarded.
//
// netpoll keeps reading a socket into memory whatever its handler does, so
// a client sending faster than its frames can be handled would grow that
// buffer without bound. While the hub's workers are behind, the socket is
// not read any more after this read (hub.Hub.HoldInput: TCP slows the
// client down) until they catch up; otherwise a connection whose
// unprocessed input, netpoll's and the partial frame, passes
// Config.MaxInputBacklog is closed with disconnect.InputOverflow.
//
// Liveness counts whole frames: only a read that completes a frame (or, in
// the handshake, a request) moves the idle deadline (hub.Conn.Touch), and a
// frame or message in progress is timed from its first byte
// (hub.Conn.SetFrameStart), so a client trickling a frame byte by byte
// meets the hub's frame timeout.
//
// Once a close is decided the rest of the input is discarded here until
// the peer closes its side or the hub releases the socket. The replies the
// read queued are flushed once, at its end.
func (l *Loop[C]) read(st C, ok bool, r netpoll.Reader) {
	n := r.Len()
	var s *Stream
	var c *hub.Conn
	if ok {
		s, c = st.stream(), st.Record()
		if t, isTLS := s.sock.(*tlsSocket); isTLS {
			l.readTLS(st, t, r)
			return
		}
	}
	if c == nil || s.closing || c.Closing() {
		_ = r.Skip(n)
		_ = r.Release()
		return
	}
	if l.cfg.ProxyProtocol { // a TLS connection's header is readTLS's
		if !l.proxyHeader(st, s, c, r) { // proxy.go
			return
		}
		n = r.Len()
	}
	if l.overflowed(st, s, c, r) {
		return
	}
	n = min(n, readChunk)
	l.received.Add(uint64(n))
	now := time.Now().UnixNano()
	var buf []byte
	fromPartial := len(s.part()) > 0
	if fromPartial {
		chunk, _ := r.Next(n)
		buf = append(s.part(), chunk...)
		s.setPart(buf)
	} else {
		buf, _ = r.Peek(n)
	}
	l.process(st, s, c, buf, fromPartial, now)
	if !fromPartial {
		_ = r.Skip(n)
	}
	_ = r.Release()
	l.settle(s, c, r.Len())
}

// process hands buf, the connection's unprocessed input, to the Handler,
// and keeps what it leaves unused (keep; fromPartial says buf is the
// partial buffer).
func (l *Loop[C]) process(st C, s *Stream, c *hub.Conn, buf []byte, fromPartial bool, now int64) {
	s.need, s.ended = 0, false
	used, complete := l.h.Process(st, buf)
	rest := buf[used:]
	if complete {
		c.Touch(now)
	}
	s.trackFrame(c, len(rest) > 0, now)
	s.keep(fromPartial, rest)
}

// settle ends a read: the replies it queued are flushed, and the socket is
// paused while the hub is behind; left is what netpoll still holds.
func (l *Loop[C]) settle(s *Stream, c *hub.Conn, left int) {
	s.flush(c)
	l.cfg.Hub.HoldInput(c) // while the workers are behind, read no more of it
	if c.InputHeld() && left == 0 && !l.cfg.Hub.InputPaused(c) {
		c.InputDrained() // all that came in since the resume is worked through
	}
}

// overflowed closes c for input_overflow when its unprocessed input, what
// r holds and the partial buffer, is an overflow (overflow), discarding
// that input, and reports whether it did.
func (l *Loop[C]) overflowed(st C, s *Stream, c *hub.Conn, r netpoll.Reader) bool {
	n := r.Len()
	if !l.overflow(c, n+len(s.part())) {
		return false
	}
	st.Disconnect(disconnect.New(disconnect.InputOverflow))
	_ = r.Skip(n)
	_ = r.Release()
	s.setPart(nil)
	s.flush(c)
	return true
}

// overflow reports whether backlog, c's unprocessed bytes, is an overflow
// to close for: above Config.MaxInputBacklog (above resumeSlack × that
// while c works through what came in at its resume, hub.Conn.InputHeld),
// and the hub not behind, for then c's socket is paused instead
// (hub.Hub.HoldInput).
func (l *Loop[C]) overflow(c *hub.Conn, backlog int) bool {
	bound := l.cfg.MaxInputBacklog
	if backlog <= bound || c.InputHeld() && backlog <= resumeSlack*bound {
		return false
	}
	return !l.cfg.Hub.HoldInput(c)
}

// trackFrame records when the frame or message in progress after this read
// began (hub.Conn.SetFrameStart): now when it began in this read (nothing
// was in progress, or a message ended first, EndMessage), unchanged when it
// goes on from an earlier read, 0 when none is in progress. A partial frame
// cannot contain another frame, so until it completes no other frame resets
// its start; a message spanning frames (BeginMessage) keeps its start
// across the complete frames between its fragments. The handshake is not
// tracked: it has a deadline of its own (hub.Config.HandshakeTimeout).
func (s *Stream) trackFrame(c *hub.Conn, partialTail bool, now int64) {
	if s.closing || c.Phase() == hub.PhaseHandshake {
		return
	}
	inProgress := partialTail || s.message != 0
	start := c.FrameStart()
	switch {
	case !inProgress:
		if start != 0 {
			c.SetFrameStart(0)
		}
	case start == 0 || s.ended:
		c.SetFrameStart(now)
	}
}

// keep leaves rest, the unused tail of this read, in the partial buffer
// (nil when there is none, or once closing). A buffer this read appended
// to (fromPartial) is reused unless it is much larger than the frame in
// progress needs (partialKeep, SetNeed); a new one is sized by partialCap.
func (s *Stream) keep(fromPartial bool, rest []byte) {
	need := int(s.need)
	switch {
	case s.closing, len(rest) == 0:
		s.setPart(nil)
	case fromPartial && cap(s.part()) > partialKeep && cap(s.part()) > 2*max(need, len(rest)):
		// Do not keep a large buffer for a small remainder.
		s.setPart(append(make([]byte, 0, partialCap(len(rest), need)), rest...))
	case fromPartial:
		s.setPart(append(s.part()[:0], rest...))
	default:
		s.setPart(append(make([]byte, 0, partialCap(len(rest), need)), rest...))
	}
}

// partialCap is the capacity of a new partial buffer holding rest bytes whose
// first frame needs need bytes in total: enough for that frame, but never
// more than partialKeep or twice rest, whichever is larger. A declared length
// is thus never reserved before its bytes come (a bare header costs at most
// partialKeep bytes); append grows the buffer as the payload arrives.
func partialCap(rest, need int) int {
	return max(rest, min(need, max(2*rest, partialKeep)))
}

// Flush writes what this read has queued so far (Queue) now rather than at
// the end of the read: Process calls it before a step that may wait on
// another system, so the peer is not kept from what it is already owed
// (the upgrade's 101 while the auth frame after it waits on the auth
// service).
func (s *Stream) Flush(c *hub.Conn) { s.flush(c) }

// flush pushes what this read queued (Queue) to the socket, once.
func (s *Stream) flush(c *hub.Conn) {
	if s.wrote {
		s.wrote = false
		c.Flush()
	}
}
