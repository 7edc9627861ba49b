package resume

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/topic"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// takenOverClose closes a connection whose session a reconnect resumed on
// another node.
var takenOverClose = disconnect.New(disconnect.SessionTakenOver)

// ReplayStored restores the session st, found in the Store (Fetch), on c,
// a connection that resumed it and whose auth reply is queued, and replays
// to it from the history what was published on its subscriptions since
// its position: c's deliveries are held, st's subscriptions installed on
// c; once they are in place and the appends of messages accepted before
// are stored (History.Sync, then replaySettle for other nodes'), the
// history is read from the position for the topics of the subscriptions
// that collect while parked (QoS ≥ 1, not load-balanced), at most
// Config.MaxMessages (DefaultMaxReplay) messages and Config.MaxBytes bytes,
// oldest first; then on c's worker write(c, missed, gap) writes the
// replay (the zero Gap when it is complete; else history.ReasonLimit when
// the history's bounds removed some, ReasonOverflow past the replay's
// bounds, ReasonUnavailable when the history could not be read, with the
// count lost when it is known) and the held live
// deliveries follow, without those replayed (same msgId). It blocks for
// the history reads (at most a few seconds; ctx ends them), so call it
// where the connection's next frames may wait.
func (r *Registry) ReplayStored(ctx context.Context, c *hub.Conn, st *Stored, write func(c *hub.Conn, missed []Missed, gap Gap)) {
	h := r.h
	h.Run(c, func(c *hub.Conn) { c.HoldDeliveries() })
	for i := range st.Specs {
		s := st.Specs[i]
		s.NoRetained = true // sent when it first subscribed; a newer one is in the replay
		h.Subscribe(c, &s)
	}
	placed := make(chan struct{})
	h.Run(c, func(*hub.Conn) { close(placed) })
	missed, gap := []Missed(nil), Gap{Reason: st.Reason}
	if gap.Reason == "" && r.cfg.History == nil {
		gap.Reason = ReasonUnavailable
	}
	if gap.Reason == "" {
		r.Pin(c, st.Position)
		select {
		case <-placed:
			missed, gap = r.readMissed(ctx, st)
		case <-ctx.Done():
			gap.Reason = ReasonUnavailable
		}
	}
	h.Run(c, func(c *hub.Conn) { finishReplay(c, missed, gap, write) })
}

// readMissed reads the history of st's collecting subscriptions from its
// position: the messages to replay, oldest first, and what the replay does
// not cover.
func (r *Registry) readMissed(ctx context.Context, st *Stored) ([]Missed, Gap) {
	var missed []Missed
	gap := r.ReadStored(ctx, st, func(s *Spec, m *wire.Message, room int) int {
		m.IsReplay = true
		payload := wire.AppendMessage(nil, m)
		if len(payload) > room {
			return -1
		}
		missed = append(missed, Missed{MsgID: m.MsgID, Topic: s.Pattern, Payload: payload})
		return len(payload)
	})
	return missed, gap
}

// ReadStored reads from the history what was published on st's
// collecting subscriptions (QoS ≥ 1, not load-balanced) since its
// position, once this node's appends are stored (History.Sync) and the
// other nodes' have had replaySettle to arrive, and calls add with each
// message, oldest first, once (for the first subscription that matches
// it), as that subscription receives it: Topic its pattern, SourceTopic
// the concrete topic for a wildcard one. add returns the bytes it took,
// or -1 when the message needs more than room, what is left of
// Config.MaxBytes: it took nothing, and the rest is left out
// (ReasonOverflow), as it is past Config.MaxMessages (DefaultMaxReplay)
// messages read. The Gap says what the replay does
// not cover: history.ReasonLimit when the history's bounds removed some,
// ReasonOverflow past the replay's bounds, ReasonUnavailable when the
// history could not be read within storeTimeout (5 s), with the count
// lost when it is known. It blocks for the reads.
func (r *Registry) ReadStored(ctx context.Context, st *Stored, add func(s *Spec, m *wire.Message, room int) int) Gap {
	var specs []*Spec
	var topics []string
	for i := range st.Specs {
		if s := &st.Specs[i]; s.QoS >= 1 && !s.LoadBalance {
			specs = append(specs, s)
			topics = append(topics, s.Key)
		}
	}
	if len(specs) == 0 {
		return Gap{}
	}
	if r.cfg.History == nil {
		return Gap{Reason: ReasonUnavailable}
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	fail := func(what string, err error) Gap {
		r.cfg.Logger.Warn("replay from the message history failed", zap.String("step", what), zap.Error(err))
		return Gap{Reason: ReasonUnavailable}
	}
	if err := r.cfg.History.Sync(ctx); err != nil {
		return fail("sync", err)
	}
	select {
	case <-time.After(replaySettle):
	case <-ctx.Done():
		return fail("settle", ctx.Err())
	}
	after, gap, err := r.cfg.History.SeqAt(ctx, st.Position)
	if err != nil {
		return fail("position", err)
	}
	limit := r.cfg.MaxMessages
	if limit <= 0 {
		limit = DefaultMaxReplay
	}
	entries, res, err := r.cfg.History.Read(ctx, topics, after, limit)
	if err != nil {
		return fail("read", err)
	}
	// Entries are the session's messages one for one unless a
	// subscription has filters: only then is a count of entries left out a
	// count of messages lost.
	counted := true
	for _, s := range specs {
		counted = counted && s.Filters == nil
	}
	// left is how many entries after the last one read the Read's limit
	// left out (0 when it stopped at none, or when they cannot be counted).
	left := func() int {
		if res.Next == 0 || !counted {
			return 0
		}
		n, exact, err := r.cfg.History.Count(ctx, topics, res.Next, res.Last, maxCounted)
		if err != nil || !exact {
			return 0
		}
		return n
	}
	var out Gap
	switch {
	case gap:
		out.Reason = history.ReasonLimit
	case !res.Complete:
		out.Reason, out.Lost = res.Reason, max(res.Lost, 0)
	case res.Next != 0:
		out.Reason, out.Lost = ReasonOverflow, left()
	}
	bytes := 0
	for i, e := range entries {
		m, err := wire.ParseMessage(e.Data)
		if err != nil {
			continue // not an entry of this broker's
		}
		for _, s := range specs {
			if !specMatches(s, e.Topic, m.Filter) {
				continue
			}
			rm := m
			rm.Topic, rm.SourceTopic = s.Pattern, ""
			if s.Wildcard {
				rm.SourceTopic = m.Topic
			}
			n := add(s, &rm, r.cfg.MaxBytes-bytes)
			if n < 0 {
				// The oldest are replayed, with no gap; the entries left
				// are counted: those read and not replayed, and those the
				// Read's limit left out.
				lost := 0
				if counted {
					lost = len(entries) - i + left()
				}
				return Gap{Reason: ReasonOverflow, Lost: lost}
			}
			bytes += n
			break // one copy per message, as a parked session keeps
		}
	}
	return out
}

// specMatches reports whether a message published on the routing key key
// with filter reaches subscription s (as the hub routes: an exact key or
// an MQTT-style pattern, then the subscription's filters).
func specMatches(s *Spec, key, filter string) bool {
	if s.Wildcard {
		if !topic.Match(s.Key, key) {
			return false
		}
	} else if s.Key != key {
		return false
	}
	if s.Filters == nil {
		return true
	}
	for _, f := range s.Filters {
		if f == filter && filter != "" {
			return true
		}
	}
	return false
}
