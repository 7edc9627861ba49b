package wire

import "github.com/tinylib/msgp/msgp"

// AppendReplayStart appends {type:"replayStart", count} (decisions.md
// OQ-33): count messages follow, each with isReplay:true.
func AppendReplayStart(b []byte, count int) []byte {
	b = msgp.AppendMapHeader(b, 2)
	b = appendType(b, "replayStart")
	b = msgp.AppendString(b, "count")
	return appendInt(b, int64(count))
}

// ReplayEnd is the frame that ends a replay (OQ-33): Replayed messages were
// sent, both as `replayed` and `count`; Complete is false when the gap could
// not be covered, Reason (omitted when "") saying why.
type ReplayEnd struct {
	Replayed int
	Complete bool
	Reason   string
	// Lost is how many messages the uncovered gap held, when that could
	// be counted; 0 omits the key (decisions.md OQ-73).
	Lost int
}

// AppendReplayEnd appends {type:"replayEnd", replayed, count, complete,
// reason?, lost?}.
func AppendReplayEnd(b []byte, e *ReplayEnd) []byte {
	n := uint32(4)
	if e.Reason != "" {
		n++
	}
	if e.Lost > 0 {
		n++
	}
	b = msgp.AppendMapHeader(b, n)
	b = appendType(b, "replayEnd")
	b = msgp.AppendString(b, "replayed")
	b = appendInt(b, int64(e.Replayed))
	b = msgp.AppendString(b, "count")
	b = appendInt(b, int64(e.Replayed))
	b = msgp.AppendString(b, "complete")
	b = msgp.AppendBool(b, e.Complete)
	if e.Reason != "" {
		b = appendStr(b, "reason", e.Reason)
	}
	if e.Lost > 0 {
		b = msgp.AppendString(b, "lost")
		b = appendInt(b, int64(e.Lost))
	}
	return b
}
