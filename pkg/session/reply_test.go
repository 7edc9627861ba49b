package session

import (
	"bytes"
	"strings"
	"testing"

	"github.com/NoLagApp/kraken/pkg/wire"
)

// copyFramer frames a reply as a copy of its payload, as the WebSocket
// transport does (its frame header aside), and notes its error.
type copyFramer struct{ errs []string }

func (f *copyFramer) Frame(r Reply) []byte {
	if r.Err != nil {
		f.errs = append(f.errs, r.Err.Err)
	}
	return bytes.Clone(r.Payload)
}

// A reply built in a scratch is the payload wire's encoders give, and a
// frame made from it keeps its bytes when the scratch is used again.
func TestScratchRepliesAreTheSameBytes(t *testing.T) {
	f := &copyFramer{}
	long := strings.Repeat("t", 2*scratchKeep)
	errs := []*wire.Error{
		{Err: wire.ErrTooManySubscriptions, Topic: "demo/a", HasTopic: true, Detail: DetailTooManySubscriptions},
		{Err: wire.ErrBadRequest, Detail: long},
		{Err: wire.ErrRateLimitExceeded, Code: wire.CodeRateLimited, Limit: 10, RetryAfterMs: 300},
	}
	var frames [][]byte
	for _, e := range errs {
		frames = append(frames, errorFrame(f, e))
	}
	s := getScratch()
	sub := f.Frame(s.reply(KindSubscribed, wire.AppendSubscribed(s.b[:0], long, true)))
	s.release()
	for i, e := range errs {
		if want := wire.AppendError(nil, e); !bytes.Equal(frames[i], want) {
			t.Errorf("error %d: %q, want %q", i, frames[i], want)
		}
		if f.errs[i] != e.Err {
			t.Errorf("error %d: Reply.Err %q, want %q", i, f.errs[i], e.Err)
		}
	}
	if want := wire.AppendSubscribed(nil, long, true); !bytes.Equal(sub, want) {
		t.Errorf("subscribed: %d bytes, want %d", len(sub), len(want))
	}
	for range 4 { // whatever scratch comes back, none kept a payload past scratchKeep
		s := getScratch()
		if len(s.b) != 0 || cap(s.b) > scratchKeep || s.e != (wire.Error{}) {
			t.Fatalf("a pooled scratch holds %d bytes (room %d) and error %+v", len(s.b), cap(s.b), s.e)
		}
		defer s.release()
	}
}
