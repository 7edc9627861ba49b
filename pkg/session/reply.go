package session

import (
	"sync"

	"github.com/NoLagApp/kraken/pkg/wire"
)

// scratch is where the session builds a reply that it hands straight to a
// Sink or Framer: the MessagePack payload, and the error it answers with.
// A transport reads both only while its Write or Frame runs and keeps
// neither (Framer, Sink), so the scratch goes back to its pool as soon as
// the frame is built: a reply costs its frame and nothing else, instead of
// a payload grown step by step by append and then copied into the frame.
type scratch struct {
	b []byte
	e wire.Error
}

const (
	// scratchSize is the room a new scratch has for a payload, in bytes:
	// every reply of a connection's setup (the auth answer without
	// restored subscriptions, `subscribed`, an error echoing a topic of up
	// to MaxEcho bytes and a detail) fits without growing it.
	scratchSize = 512
	// scratchKeep is the largest payload room, in bytes, a scratch keeps
	// when it goes back to the pool; a larger one (an auth answer listing
	// many restored subscriptions) is dropped.
	scratchKeep = 16 << 10
)

var scratches = sync.Pool{New: func() any { return &scratch{b: make([]byte, 0, scratchSize)} }}

// getScratch takes a scratch from the pool; release gives it back.
func getScratch() *scratch { return scratches.Get().(*scratch) }

// release returns s to the pool; neither its payload nor its error may be
// used afterwards.
func (s *scratch) release() {
	if cap(s.b) > scratchKeep {
		s.b = make([]byte, 0, scratchSize)
	}
	s.b, s.e = s.b[:0], wire.Error{}
	scratches.Put(s)
}

// reply returns the reply of kind carrying payload, which was appended to
// s.b[:0]; s keeps the buffer, however it grew, for its next use.
func (s *scratch) reply(kind Kind, payload []byte) Reply {
	s.b = payload
	return Reply{Kind: kind, Payload: payload}
}

// errorReply returns the `error` reply of e (wire-reference.md §3.5), e
// copied into s and encoded there.
func (s *scratch) errorReply(e *wire.Error) Reply {
	s.e = *e
	s.b = wire.AppendError(s.b[:0], &s.e)
	return Reply{Kind: KindError, Payload: s.b, Err: &s.e}
}

// writeError writes the `error` reply of e to out; e is not kept.
func writeError(out Sink, e *wire.Error) {
	s := getScratch()
	out.Write(s.errorReply(e))
	s.release()
}

// errorFrame returns the frame of the `error` reply of e in out's
// encoding; e is not kept.
func errorFrame(out Framer, e *wire.Error) []byte {
	s := getScratch()
	f := out.Frame(s.errorReply(e))
	s.release()
	return f
}

// writeAuthFailed writes the KindAuthFailed reply refusing an `auth` for
// reason (wire-reference.md §2.4) to out.
func writeAuthFailed(out Sink, reason string) {
	s := getScratch()
	s.e.Err = reason
	s.b = wire.AppendAuthFailed(s.b[:0], reason)
	out.Write(Reply{Kind: KindAuthFailed, Payload: s.b, Err: &s.e})
	s.release()
}
