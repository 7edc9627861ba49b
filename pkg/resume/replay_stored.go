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
// oldest first; then on c's worker write(c, missed, reason) writes the
// replay (reason "" when it is complete: history.ReasonLimit when the
// history's bounds removed some, ReasonOverflow past the replay's bounds,
// ReasonUnavailable when the history could not be read) and the held live
// deliveries follow, without those replayed (same msgId). It blocks for
// the history reads (at most a few seconds; ctx ends them), so call it
// where the connection's next frames may wait.
func (r *Registry) ReplayStored(ctx context.Context, c *hub.Conn, st *Stored, write func(c *hub.Conn, missed []Missed, reason string)) {
	h := r.h
	h.Run(c, func(c *hub.Conn) { c.HoldDeliveries() })
	for i := range st.Specs {
		s := st.Specs[i]
		s.NoRetained = true // sent when it first subscribed; a newer one is in the replay
		h.Subscribe(c, &s)
	}
	placed := make(chan struct{})
	h.Run(c, func(*hub.Conn) { close(placed) })
	missed, reason := []Missed(nil), st.Reason
	if reason == "" && r.cfg.History == nil {
		reason = ReasonUnavailable
	}
	if reason == "" {
		r.Pin(c, st.Position)
		select {
		case <-placed:
			missed, reason = r.readMissed(ctx, st)
		case <-ctx.Done():
			reason = ReasonUnavailable
		}
	}
	h.Run(c, func(c *hub.Conn) { finishReplay(c, missed, reason, write) })
}

// readMissed reads the history of st's collecting subscriptions from its
// position: the messages to replay, oldest first, and the reason the
// replay is not complete ("" when it is).
func (r *Registry) readMissed(ctx context.Context, st *Stored) ([]Missed, string) {
	var specs []*Spec
	var topics []string
	for i := range st.Specs {
		if s := &st.Specs[i]; s.QoS >= 1 && !s.LoadBalance {
			specs = append(specs, s)
			topics = append(topics, s.Key)
		}
	}
	if len(specs) == 0 {
		return nil, ""
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	fail := func(what string, err error) ([]Missed, string) {
		r.cfg.Logger.Warn("replay from the message history failed", zap.String("step", what), zap.Error(err))
		return nil, ReasonUnavailable
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
	reason := ""
	switch {
	case gap:
		reason = history.ReasonLimit
	case !res.Complete:
		reason = res.Reason
	case res.Next != 0:
		reason = ReasonOverflow
	}
	missed := make([]Missed, 0, len(entries))
	bytes := 0
	for _, e := range entries {
		m, err := wire.ParseMessage(e.Data)
		if err != nil {
			continue // not an entry of this broker's
		}
		for _, s := range specs {
			if !specMatches(s, e.Topic, m.Filter) {
				continue
			}
			out := m
			out.Topic, out.IsReplay, out.SourceTopic = s.Pattern, true, ""
			if s.Wildcard {
				out.SourceTopic = m.Topic
			}
			payload := wire.AppendMessage(nil, &out)
			if bytes += len(payload); bytes > r.cfg.MaxBytes {
				return missed, ReasonOverflow // the oldest are replayed, with no gap
			}
			missed = append(missed, Missed{MsgID: m.MsgID, Topic: s.Pattern, Payload: payload})
			break // one copy per message, as a parked session keeps
		}
	}
	return missed, reason
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
