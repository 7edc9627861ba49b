package session

import (
	"errors"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/topic"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// hintWildcardPublish is the hint of the 42940 error for a publish topic
// with '+' or '#' (D-2).
const hintWildcardPublish = "wildcards are only allowed in subscribe topics"

// DetailBusy is the detail of the 42910 error when the workers are behind.
const DetailBusy = "the broker is busy: retry later"

// BusyRetryAfterMs is the retryAfterMs of the 42910 error when the workers
// are behind: a hint, not a promise. The workers usually catch up within
// milliseconds (meanwhile the publisher's socket is not read, and the
// pause ends when they have), so a client that waits this long before
// sending again is most likely served.
const BusyRetryAfterMs = 100

var msgpackNil = []byte{0xc0}

// DetailDollarTopic is the detail of the invalid_topic error for a client's
// publish to a topic beginning with '$': those are the server's (MQTT 3.1.1
// §4.7.2), on every transport; POST /internal/publish may use them.
const DetailDollarTopic = "topics beginning with $ are reserved for the server"

// publish handles `publish` in the order of wire-reference.md §3.3: rate limit,
// size, quota, topic, grant check, resolution, filter, backpressure, then
// the store record, the history entry (Config.History), KindPublished
// (with msgRef, before the sender's own echo), the fan-out, the other nodes and the control plane and webhooks.
func (p *Protocol) publish(st *State, out Sink, cmd *wire.Command) {
	fail := func(e *wire.Error) {
		e.Topic, e.HasTopic, e.MsgRef = cmd.Topic, true, cmd.MsgRef
		p.publishError(st, out, e)
	}
	if !cmd.HasTopic {
		p.publishError(st, out, &wire.Error{Err: wire.ErrBadRequest, Detail: "publish requires topic", MsgRef: cmd.MsgRef})
		return
	}
	c := st.Conn
	sess := c.Session()
	g := grantOf(sess)
	now := time.Now()
	data := cmd.Data
	if data == nil {
		data = msgpackNil // OQ-14: an absent data is nil
	}
	if e := p.checkLimits(st, g, now, len(data)); e != nil {
		fail(e)
		return
	}
	if p.cfg.Control != nil && p.cfg.Control.Blocked(g.ProjectID) {
		fail(&wire.Error{Code: wire.CodeQuotaExceeded, Err: wire.ErrMonthlyQuotaExceeded})
		return
	}
	if err := topic.ValidatePublish(cmd.Topic); err != nil {
		if errors.Is(err, topic.ErrWildcardInPublish) {
			p.publishError(st, out, unknownTopicError(sess, cmd.Topic, hintWildcardPublish, cmd.MsgRef))
			return
		}
		fail(&wire.Error{Err: wire.ErrInvalidTopic, Detail: err.Error()})
		return
	}
	if cmd.Topic[0] == '$' {
		fail(&wire.Error{Err: wire.ErrInvalidTopic, Detail: DetailDollarTopic})
		return
	}
	eff := g.Rules.EffectivePattern(cmd.Topic, g.ScopeSlug, acl.OpPublish)
	if d := g.Rules.Check(eff, acl.OpPublish); d != acl.Allowed {
		p.publishError(st, out, unknownTopicError(sess, cmd.Topic, d.Hint(acl.OpPublish), cmd.MsgRef))
		return
	}
	res, _ := g.Rules.Resolve(eff)
	filter, detail := wire.PublishFilter(cmd)
	if detail != "" {
		fail(&wire.Error{Code: wire.CodeInvalidFilter, Err: wire.ErrInvalidFilter, Detail: detail})
		return
	}
	if p.hub.Busy() {
		fail(&wire.Error{Code: wire.CodeRateLimited, Err: wire.ErrRateLimitExceeded, Detail: DetailBusy,
			RetryAfterMs: BusyRetryAfterMs})
		return
	}
	pub := &hub.Publication{Key: res.Key, Topic: cmd.Topic, Filter: filter, Origin: c, Echo: cmd.Echo,
		Retain: cmd.Retain, ClearRetained: cmd.Retain && len(data) == 1 && data[0] == 0xc0, NoGroups: p.multi,
		AtMostOnce: cmd.QoS == 0, ExactlyOnce: cmd.QoS == 2}
	pub.Msg = wire.Message{Topic: cmd.Topic, Data: append([]byte(nil), data...), Filter: filter,
		From: g.ActorTokenID, FromType: "actor", Timestamp: now.UnixMilli()}
	if p.cfg.RecordMessages {
		pub.Msg.MsgID = uuid.NewString()
		p.record(g, res, cmd.Topic, pub, len(data), now)
	}
	p.keep(pub)
	if cmd.MsgRef != "" {
		out.Write(Reply{Kind: KindPublished, Payload: wire.AppendPublished(nil, cmd.Topic, cmd.MsgRef)})
	}
	p.hub.Publish(pub)
	p.obs.accepted(SourceClient, len(data))
	_ = p.toBroker(pub, pub.Msg.Timestamp) // logged; the local delivery stands
	p.afterPublish(g, res, cmd.Topic, eff, data)
}

// Inject publishes pub, a publication the node itself makes (POST
// /internal/publish, wire-reference.md §5.4), to the history (Config.History),
// this node's subscribers and the other nodes: its frame is built, it is counted for src, and the broker's
// error, already logged, is returned (the local delivery stands). pub must
// not be modified afterwards; check Hub().Busy first.
func (p *Protocol) Inject(pub *hub.Publication, src Source) error {
	pub.NoGroups = p.multi
	p.keep(pub)
	p.hub.Publish(pub)
	p.obs.accepted(src, len(pub.Msg.Data))
	return p.toBroker(pub, pub.Msg.Timestamp)
}

// publishError refuses a publish: a publish with msgRef is waited for and
// always answered, one without answers nothing and shares the error budget
// (OQ-67, amended).
func (p *Protocol) publishError(st *State, out Sink, e *wire.Error) {
	p.refusedPublish(st, e) // counted and logged (stats.go)
	if e.MsgRef != "" {
		p.answerError(st, out, e)
		return
	}
	p.Refuse(st, out, e)
}

// unknownTopicError is the error for topic t outside the grants, in the
// form the session's protocol version expects: 42940 unknown_topic for v2,
// not_authorized with the same code for v1 (D-3, OQ-25), with hint and
// msgRef (either may be "").
func unknownTopicError(sess *hub.Session, t, hint, msgRef string) *wire.Error {
	e := &wire.Error{Code: wire.CodeUnknownTopic, Err: wire.ErrUnknownTopic, Topic: t, HasTopic: true,
		Hint: hint, MsgRef: msgRef}
	if sess.Version < 2 {
		e.Err = wire.ErrNotAuthorized
	}
	return e
}

// checkLimits applies, in this order, the rate limit (wire-reference.md §6.10,
// OQ-6) and the size limit (§6.11, OQ-7) to a broadcast of size bytes of
// data; it returns the error to send, or nil.
func (p *Protocol) checkLimits(st *State, g *auth.Grant, now time.Time, size int) *wire.Error {
	if limit := limitOr(g.RateLimit, p.cfg.RateLimit); !st.allowPublish(uint32(now.Unix()), limit) {
		return &wire.Error{Code: wire.CodeRateLimited, Err: wire.ErrRateLimitExceeded, Limit: limit,
			RetryAfterMs: untilNextSecond(now)}
	}
	if limit := min(limitOr(g.MaxMessageSize, p.cfg.MaxMessageSize), PayloadCeiling); size > limit {
		return &wire.Error{Code: wire.CodeMessageTooLarge, Err: wire.ErrMessageTooLarge, MaxSizeBytes: limit}
	}
	return nil
}

// untilNextSecond is the milliseconds from now to the next wall-clock
// second, rounded up (1 to 1000): when the rate window opens again.
func untilNextSecond(now time.Time) int {
	return int((time.Second - time.Duration(now.Nanosecond()) + time.Millisecond - 1) / time.Millisecond)
}

func limitOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// record stores the accepted publish in the message store (wire-reference.md
// §6.5). A store failure never fails the publish; it is logged.
func (p *Protocol) record(g *auth.Grant, res acl.Resolution, pattern string, pub *hub.Publication, size int, now time.Time) {
	err := p.cfg.Store.Append(p.ctx, &store.Record{
		MsgID: pub.Msg.MsgID, ProjectID: g.ProjectID, AppID: res.AppID, RoomID: res.RoomID,
		Topic: res.Key, Pattern: pattern, Sender: g.ActorTokenID, PayloadSize: size, Timestamp: now,
	})
	if err != nil {
		if ce := p.log.Check(zap.WarnLevel, "message store append failed"); ce != nil {
			ce.Write(zap.Error(err))
		}
	}
}

// ack records `ack` / `batchAck` (wire-reference.md §6.4). Nothing is re-sent
// either way (OQ-66).
func (p *Protocol) ack(st *State, ids ...string) {
	p.noteAck(st, ids) // resume.go
	if p.cfg.Durable != nil {
		p.cfg.Durable.Acked(st.Conn, ids)
	}
	_ = p.cfg.Store.Ack(p.ctx, grantOf(st.Conn.Session()).ActorTokenID, ids...)
}
