package client

// ReplayInfo is the end of a replay, from the broker's
// `replayEnd{replayed, count, complete, reason?}` and the
// `replayStart{count}` before it (docs/protocol.md "Resumable sessions";
// decisions.md OQ-33 for the field names).
//
// After an auth with reconnect:true that resumed a session, kraken sends,
// once per connection:
//
//	← {type:"replayStart", count:50}
//	← {type:"message", …, msgId:"<original id>", requiresAck:true, isReplay:true}   × 50, oldest first
//	← {type:"replayEnd", replayed:50, count:50, complete:true}
//	← live messages, none repeating a replayed msgId
//
// The replayed messages go to the handlers of their topics like any
// message, with Meta.IsReplay set, in order and before the live ones.
type ReplayInfo struct {
	// Count is the number of messages replayStart announced; without a
	// replayStart before the replayEnd, replayEnd's `count`, else Replayed.
	Count int
	// Replayed is the number of messages the broker replayed (`replayed`).
	Replayed int
	// Complete reports that every message missed while disconnected was
	// replayed. false, with a Reason, means the gap is not covered: what
	// was published while the client was away is lost, partly
	// (ReplayBacklogLimit) or wholly. A replayEnd without `complete` (the
	// original broker's durable replay, wire-reference.md §6.6) counts as
	// complete.
	Complete bool
	// Reason says why a replay is not complete: ReplaySessionExpired,
	// ReplaySessionTakenOver, ReplayBacklogLimit, or another string a newer
	// broker sends; "" when Complete.
	Reason string
	// Duplicates is the number of replayed messages this client had
	// handed to a handler already, on the connection that dropped, before
	// the broker got its ack (at-least-once: docs/protocol.md, "Messages
	// sent before the drop"). They are acked again but not handed to the
	// handlers a second time; Replayed counts them.
	Duplicates int
}

// Reasons of an incomplete replay (ReplayInfo.Reason), as kraken sends them
// (docs/protocol.md "Resumable sessions").
const (
	// ReplaySessionExpired: the broker keeps no session for this identity
	// (expired, never dropped, evicted, or the broker restarted). Nothing
	// was replayed and nothing restored; the client's re-subscriptions make
	// its subscriptions again.
	ReplaySessionExpired = "session_expired"
	// ReplaySessionTakenOver: the broker had not noticed the old
	// connection's drop yet; the session moved to the new connection, but
	// what was sent to the old one since its network went is not known and
	// nothing was replayed.
	ReplaySessionTakenOver = "session_taken_over"
	// ReplayBacklogLimit: more was missed than the broker keeps per session
	// (RESUME_MAX_BYTES); the oldest messages up to the bound were replayed,
	// the rest is lost.
	ReplayBacklogLimit = "backlog_limit"
)

// replayState is the replayStart seen on the current connection and the
// duplicates skipped since (Client.mu).
type replayState struct {
	started bool
	count   int
	dups    int
}

// handledWindow is how many of the latest messages carrying requiresAck
// the client remembers having handed to a handler, to know a replayed copy
// of one. Of what a connection was sent and its client did not ack,
// kraken replays at most the newest hub.TapMax (256).
const handledWindow = 512

// handled remembers the latest messages handed to a handler, by topic and
// msgId (Client.mu).
type handled struct {
	set  map[handledKey]struct{}
	ring []handledKey
	next int
}

type handledKey struct{ topic, msgID string }

// add remembers k, forgetting the oldest past handledWindow.
func (h *handled) add(k handledKey) {
	if h.set == nil {
		h.set = make(map[handledKey]struct{}, 64)
	}
	if _, ok := h.set[k]; ok {
		return
	}
	if len(h.ring) < handledWindow {
		h.ring = append(h.ring, k)
	} else {
		delete(h.set, h.ring[h.next])
		h.ring[h.next] = k
		h.next = (h.next + 1) % handledWindow
	}
	h.set[k] = struct{}{}
}

func (h *handled) has(k handledKey) bool {
	_, ok := h.set[k]
	return ok
}

// onReplayStart notes the count announced by replayStart.
func (c *Client) onReplayStart(f *inFrame) {
	c.mu.Lock()
	c.replay = replayState{started: true, count: f.count}
	c.mu.Unlock()
}

// onReplayEnd reports the replay to OnReplay, after the handlers of the
// replayed messages queued before it.
func (c *Client) onReplayEnd(f *inFrame) {
	c.mu.Lock()
	rs := c.replay
	c.replay = replayState{}
	c.mu.Unlock()
	info := ReplayInfo{Count: f.replayed, Replayed: f.replayed, Complete: f.complete || !f.hasComplete,
		Reason: f.reason, Duplicates: rs.dups}
	switch {
	case rs.started:
		info.Count = rs.count
	case f.hasCount:
		info.Count = f.count
	}
	if info.Complete {
		info.Reason = ""
	}
	if c.opts.OnReplay == nil {
		return
	}
	c.emit(func() { c.opts.OnReplay(info) })
}
