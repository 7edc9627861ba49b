package session

import (
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// ResumeConfig configures resumable sessions. A connection is
// resumable when Enabled (RESUME_SESSIONS) or its token says
// persistentSession / persistent_session; it is kept for its token's
// session expiry, else Expiry (RESUME_EXPIRY_SECONDS).
type ResumeConfig struct {
	Enabled bool
	// Expiry, MaxSessions and MaxBytes bound the kept sessions; zero takes
	// the defaults of pkg/resume (120 s, 100,000, 1 MiB).
	Expiry      time.Duration
	MaxSessions int
	MaxBytes    int
	// MaxMessages (STORE_MAX_MESSAGES) bounds the messages kept per
	// session and MaxAge (STORE_TTL_SECONDS) every session's expiry; 0 for
	// no bound (resume.Config).
	MaxMessages int
	MaxAge      time.Duration
}

// State.resume bits.
const (
	resumeLive  uint8 = 1 << iota // the connection is its resumable session's live one (its tap started)
	resumeNever                   // its transport keeps no session (NotResumable)
)

// NotResumable makes the connection of st never resumable, whatever
// RESUME_SESSIONS and its token say: its transport cannot resume a session
// (the MQTT listener, clean sessions only, docs/mqtt.md), so none is kept
// for it, and it holds none that a WebSocket connection of the same actor
// could want. Call it before the connection authenticates.
func (st *State) NotResumable() { st.resume |= resumeNever }

// noteAck marks a resumable connection's acked deliveries in its tap
// (started when it attached), so that only the unacked ones are replayed
// after a drop.
func (p *Protocol) noteAck(st *State, ids []string) {
	if st.resume&resumeLive != 0 {
		st.Conn.TapAck(ids...)
	}
}

// resumed is what attachSession found for a resumable connection.
type resumed struct {
	parked *resume.Parked // the session it takes over, nil for none
	stored *resume.Stored // or the one the Store kept (another node's, or before a restart)
	told   bool           // reconnect:true without a session: say so
	reason string         // why, then
}

// attachSession makes the connection of st the live one of its session
// when it is resumable, and with reconnect:true takes over the session
// kept for it: its subscriptions are added to restored (those not there
// already). Called during auth, before the reply.
func (p *Protocol) attachSession(st *State, g *auth.Grant, cmd *wire.Command, restored *[]wire.Restored) *resumed {
	if !p.cfg.Resume.Enabled && !g.PersistentSession || st.resume&resumeNever != 0 {
		return nil
	}
	id := resume.Identity(g.ActorTokenID, cmd.ClientID)
	if !cmd.Reconnect && !p.claimStored(st.Conn, id) { // another node's live connection holds it
		return nil
	}
	pk, ok := p.resume.Attach(st.Conn, id, cmd.Reconnect, g.SessionExpiry)
	if !ok { // another live connection holds the session (OQ-51)
		return nil
	}
	st.resume |= resumeLive
	// Its unacked deliveries are kept from the start, so those lost in
	// flight with its network are replayed; a client that does not ack is
	// recognised and keeps nothing (hub.Config.TapAckWait).
	p.hub.Run(st.Conn, (*hub.Conn).StartTap)
	if !cmd.Reconnect {
		return nil
	}
	rs := &resumed{parked: pk}
	specs := []resume.Spec(nil)
	if pk != nil {
		specs = pk.Specs
	} else if kept := p.fetchStored(st.Conn, id); kept != nil {
		rs, specs = &resumed{stored: kept}, kept.Specs
		if kept.Reason == resume.ReasonUnavailable {
			p.resume.Unclaimed(st.Conn)
		}
	} else {
		return &resumed{told: true, reason: resume.ReasonExpired}
	}
	have := make(map[string]bool, len(*restored))
	for _, r := range *restored {
		have[r.Name] = true
	}
	for i := range specs {
		s := &specs[i]
		if have[s.Pattern] {
			continue
		}
		*restored = append(*restored, wire.Restored{Name: s.Pattern, LoadBalance: s.LoadBalance,
			LoadBalanceGroup: s.Group, Filters: s.Filters})
		p.resume.Subscribed(st.Conn, s)
	}
	names := make([]string, len(*restored))
	for i, r := range *restored {
		names[i] = r.Name
	}
	p.resume.Restored(st.Conn, names)
	return rs
}

// claimStored asks the node's Store whether a fresh connect may make
// session id its own (resume.Registry.Claim), within c's call.
func (p *Protocol) claimStored(c *hub.Conn, id string) bool {
	if !p.resume.Durable() {
		return true
	}
	ctx, cancel := p.calls.start(c, authTimeout)
	defer p.calls.end(c, ctx, cancel)
	return p.resume.Claim(ctx, id)
}

// fetchStored looks the session id up in the node's Store (resume.Fetch)
// within the connection's call, cancelled if c closes or the node stops.
func (p *Protocol) fetchStored(c *hub.Conn, id string) *resume.Stored {
	if !p.resume.Durable() {
		return nil
	}
	ctx, cancel := p.calls.start(c, authTimeout)
	defer p.calls.end(c, ctx, cancel)
	return p.resume.Fetch(ctx, id)
}

// noteSubscribed records spec as a subscription of a resumable session.
func (p *Protocol) noteSubscribed(st *State, spec *hub.SubSpec) {
	if st.resume&resumeLive != 0 {
		p.resume.Subscribed(st.Conn, spec)
	}
}

// resumeReplay sends, after the auth reply, the replay of the session c
// took over (replayStart, the missed messages with isReplay:true,
// replayEnd), or, for a reconnect that found no session, an empty replay
// with complete:false.
//
// The backend's restored subscriptions, specs, then get no retained
// message, which would come before replayStart.
func (p *Protocol) resumeReplay(c *hub.Conn, out Sink, rs *resumed, specs []hub.SubSpec) {
	if rs != nil && (rs.parked != nil || rs.stored != nil) {
		for i := range specs {
			specs[i].NoRetained = true
		}
	}
	switch {
	case rs == nil:
	case rs.stored != nil:
		ctx, cancel := p.calls.start(c, 2*authTimeout)
		p.resume.ReplayStored(ctx, c, rs.stored, p.writeReplay)
		p.calls.end(c, ctx, cancel)
	case rs.parked == nil:
		p.resume.CountReplay(rs.reason)
		out.Write(Reply{Kind: KindReplay, Payload: wire.AppendReplayStart(nil, 0)})
		out.Write(Reply{Kind: KindReplay, Payload: wire.AppendReplayEnd(nil,
			&wire.ReplayEnd{Complete: false, Reason: rs.reason})})
	default:
		p.resume.Replay(c, rs.parked, p.writeReplay)
	}
}

// writeReplay writes the replay of missed to c, on c's worker.
func (p *Protocol) writeReplay(c *hub.Conn, missed []resume.Missed, gap resume.Gap) {
	p.resume.CountReplay(gap.Reason)
	c.WriteFrame(frameFor(c, Reply{Kind: KindReplay, Payload: wire.AppendReplayStart(nil, len(missed))}))
	for _, m := range missed {
		c.WriteFrame(frameFor(c, Reply{Kind: KindReplay, Payload: m.Payload}))
		c.TapReplayed(m.MsgID, m.Topic, m.Payload) // kept until acked, as a delivery is
	}
	end := &wire.ReplayEnd{Replayed: len(missed), Complete: gap.Reason == "", Reason: gap.Reason, Lost: gap.Lost}
	c.WriteFrame(frameFor(c, Reply{Kind: KindReplay, Payload: wire.AppendReplayEnd(nil, end)}))
}

// parkOnClose keeps the session of c, a connection that ended, when it is
// resumable; it reports whether c is a parked session's own connection,
// which the rest of closed must ignore.
func (p *Protocol) parkOnClose(c *hub.Conn) bool {
	return p.resume.Closed(c)
}

// ResumeStats returns the resumable sessions' counters.
func (p *Protocol) ResumeStats() resume.Stats { return p.resume.Stats() }
