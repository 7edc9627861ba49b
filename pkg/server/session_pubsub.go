package server

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/store"
	"github.com/NoLagApp/kraken/pkg/topic"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// hintWildcardPublish is the hint of the 42940 error for a publish topic
// with '+' or '#' (D-2).
const hintWildcardPublish = "wildcards are only allowed in subscribe topics"

func grantOf(sess *hub.Session) *auth.Grant { return sess.Grant.(*auth.Grant) }

// subscribe handles `subscribe` (protocol.md §3.3): always exactly one
// `subscribed` or one error frame, with topic echoed as sent.
func (s *Server) subscribe(st *connState, cmd *wire.Command) {
	if !cmd.HasTopic {
		s.badRequest(st, "subscribe requires topic")
		return
	}
	sess := st.c.Session()
	g := grantOf(sess)
	if err := topic.ValidateSubscribe(cmd.Topic); err != nil {
		s.refuseSubscribe(st, RefuseInvalidTopic, &wire.Error{Err: wire.ErrInvalidTopic, Topic: cmd.Topic, HasTopic: true, Detail: err.Error()})
		return
	}
	spec, res, d := s.resolveSub(g, cmd.Topic)
	if d != acl.Allowed {
		var wider *auth.Grant
		if sess, wider = s.widenGrant(st, sess, cmd.Topic); wider != nil {
			g = wider
			spec, res, d = s.resolveSub(g, cmd.Topic)
		}
	}
	if d != acl.Allowed {
		s.refuseSubscribe(st, RefuseGrant, unknownTopicError(st.c.Session(), cmd.Topic, d.Hint(acl.OpSubscribe), ""))
		return
	}
	filters, errStr := cmd.Filters.Normalize()
	if errStr != "" {
		s.refuseSubscribe(st, RefuseInvalidFilter, &wire.Error{Err: errStr, Topic: cmd.Topic, HasTopic: true})
		return
	}
	spec.Filters, spec.QoS = filters, uint8(cmd.QoS)
	if cmd.LoadBalance {
		spec.LoadBalance = true
		spec.Group = groupName(g, res.AppID, cmd.LoadBalanceGroup)
	}
	spec.Reply = frame(wire.AppendSubscribed(nil, cmd.Topic, cmd.LoadBalance))
	spec.TooMany = frame(wire.AppendError(nil, &wire.Error{Err: wire.ErrTooManySubscriptions,
		Topic: cmd.Topic, HasTopic: true, Detail: "the connection holds the maximum number of subscriptions"}))
	s.hub.Subscribe(st.c, spec)
	s.reportSubscription(g, control.ActionSubscribe, cmd.Topic, spec.LoadBalance, spec.Group, cmd.Filters)
	s.hydrate(st.c, g, res, cmd.Topic)
}

// roomAccessTimeout bounds the subscribe cache-miss fallback call
// (protocol.md §4.10: 2 s).
const roomAccessTimeout = 2 * time.Second

// widenGrant runs the subscribe cache-miss fallback (protocol.md §4.10)
// for a pattern outside the session's grant: when the auth backend
// implements auth.RoomAccessChecker and allows the pattern, its rules are
// prepended to a copy of the grant, installed as the connection's session,
// and returned. It returns a nil grant otherwise (denied, failed, or no
// fallback); the backend caches its denials.
func (s *Server) widenGrant(st *connState, sess *hub.Session, pattern string) (*hub.Session, *auth.Grant) {
	checker, ok := s.cfg.Auth.(auth.RoomAccessChecker)
	if !ok {
		return sess, nil
	}
	g := grantOf(sess)
	ctx, cancel := context.WithTimeout(context.Background(), roomAccessTimeout)
	rules, err := checker.CheckRoomAccess(ctx, g.ActorTokenID, pattern)
	cancel()
	if err != nil || len(rules) == 0 {
		return sess, nil
	}
	wider := *g
	wider.Rules = append(append(make(acl.Rules, 0, len(rules)+len(g.Rules)), rules...), g.Rules...)
	next := *sess
	next.Grant = &wider
	st.c.SetSession(&next)
	return &next, &wider
}

// unsubscribe always answers `unsubscribed`, subscribed or not (OQ-60).
func (s *Server) unsubscribe(st *connState, cmd *wire.Command) {
	if !cmd.HasTopic {
		s.badRequest(st, "unsubscribe requires topic")
		return
	}
	s.hub.Unsubscribe(st.c, cmd.Topic, frame(wire.AppendUnsubscribed(nil, cmd.Topic)))
	s.reportSubscription(grantOf(st.c.Session()), control.ActionUnsubscribe, cmd.Topic, false, "", wire.FilterSpec{})
}

// setFilters replaces a live subscription's filters (protocol.md §6.9,
// OQ-61).
func (s *Server) setFilters(st *connState, cmd *wire.Command) {
	if !cmd.HasTopic {
		s.badRequest(st, "setFilters requires topic")
		return
	}
	if cmd.Filters.Kind == wire.FiltersAbsent {
		s.badRequest(st, "setFilters requires filters")
		return
	}
	filters, errStr := cmd.Filters.Normalize()
	if errStr != "" {
		s.answerError(st, &wire.Error{Err: errStr, Topic: cmd.Topic, HasTopic: true})
		return
	}
	var raw []byte
	if cmd.Filters.Kind == wire.FiltersArray {
		raw = append([]byte(nil), cmd.Filters.Raw...)
	}
	ok := frame(wire.AppendFiltersUpdated(nil, cmd.Topic, raw))
	notSub := frame(wire.AppendError(nil, &wire.Error{Err: wire.ErrNotSubscribed, Topic: cmd.Topic, HasTopic: true}))
	s.hub.SetFilters(st.c, cmd.Topic, filters, ok, notSub)
	s.reportSubscription(grantOf(st.c.Session()), control.ActionSubscribe, cmd.Topic, false, "", cmd.Filters)
}

// publish handles `publish` in the order of protocol.md §3.3: rate limit,
// size, grant check, resolution, filter, then fan-out.
func (s *Server) publish(st *connState, cmd *wire.Command) {
	fail := func(e *wire.Error) {
		e.Topic, e.HasTopic, e.MsgRef = cmd.Topic, true, cmd.MsgRef
		s.publishError(st, e)
	}
	if !cmd.HasTopic {
		s.publishError(st, &wire.Error{Err: wire.ErrBadRequest, Detail: "publish requires topic", MsgRef: cmd.MsgRef})
		return
	}
	sess := st.c.Session()
	g := grantOf(sess)
	now := time.Now()
	data := cmd.Data
	if data == nil {
		data = msgpackNil // OQ-14: an absent data is nil
	}
	if e := s.checkLimits(st, g, now, len(data)); e != nil {
		fail(e)
		return
	}
	if s.cfg.Control != nil && s.cfg.Control.Blocked(g.ProjectID) {
		fail(&wire.Error{Code: wire.CodeQuotaExceeded, Err: wire.ErrMonthlyQuotaExceeded})
		return
	}
	if err := topic.ValidatePublish(cmd.Topic); err != nil {
		if errors.Is(err, topic.ErrWildcardInPublish) {
			s.publishError(st, unknownTopicError(sess, cmd.Topic, hintWildcardPublish, cmd.MsgRef))
			return
		}
		fail(&wire.Error{Err: wire.ErrInvalidTopic, Detail: err.Error()})
		return
	}
	eff := g.Rules.EffectivePattern(cmd.Topic, g.ScopeSlug, acl.OpPublish)
	if d := g.Rules.Check(eff, acl.OpPublish); d != acl.Allowed {
		s.publishError(st, unknownTopicError(sess, cmd.Topic, d.Hint(acl.OpPublish), cmd.MsgRef))
		return
	}
	res, _ := g.Rules.Resolve(eff)
	filter, detail := wire.PublishFilter(cmd)
	if detail != "" {
		fail(&wire.Error{Code: wire.CodeInvalidFilter, Err: wire.ErrInvalidFilter, Detail: detail})
		return
	}
	if s.hub.Busy() {
		fail(&wire.Error{Code: wire.CodeRateLimited, Err: wire.ErrRateLimitExceeded, Detail: detailBusy})
		return
	}
	p := &hub.Publication{Key: res.Key, Topic: cmd.Topic, Filter: filter, Origin: st.c, Echo: cmd.Echo,
		Retain: cmd.Retain, ClearRetained: cmd.Retain && len(data) == 1 && data[0] == 0xc0, NoGroups: s.distributed()}
	p.Msg = wire.Message{Topic: cmd.Topic, Data: append([]byte(nil), data...), Filter: filter,
		From: g.ActorTokenID, FromType: "actor", Timestamp: now.UnixMilli()}
	if s.cfg.RecordMessages {
		p.Msg.MsgID = uuid.NewString()
		s.record(g, res, cmd.Topic, p, len(data), now)
	}
	encodeFrame(p)
	if cmd.MsgRef != "" {
		st.write(frame(wire.AppendPublished(nil, cmd.Topic, cmd.MsgRef)))
	}
	s.hub.Publish(p)
	s.obs.accepted(SourceClient, len(data))
	_ = s.toBroker(p, p.Msg.Timestamp) // logged; the local delivery stands
	s.afterPublish(g, res, cmd.Topic, eff, data)
}

var msgpackNil = []byte{0xc0}

// detailBusy is the detail of the 42910 error when the workers are behind.
const detailBusy = "the broker is busy: retry later"

// publishError refuses a publish: a publish with msgRef is waited for and
// always answered, one without answers nothing and shares the error budget
// (OQ-67, amended).
func (s *Server) publishError(st *connState, e *wire.Error) {
	s.refusedPublish(st, e) // counted and logged (stats.go)
	if e.MsgRef != "" {
		s.answerError(st, e)
		return
	}
	s.sendError(st, e)
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

// checkLimits applies, in this order, the rate limit (protocol.md §6.10,
// OQ-6) and the size limit (§6.11, OQ-7) to a broadcast of size bytes of
// data; it returns the error to send, or nil.
func (s *Server) checkLimits(st *connState, g *auth.Grant, now time.Time, size int) *wire.Error {
	if !st.allowPublish(uint32(now.Unix()), limitOr(g.RateLimit, s.cfg.RateLimit)) {
		return &wire.Error{Code: wire.CodeRateLimited, Err: wire.ErrRateLimitExceeded}
	}
	if limit := min(limitOr(g.MaxMessageSize, s.cfg.MaxMessageSize), PayloadCeiling); size > limit {
		return &wire.Error{Code: wire.CodeMessageTooLarge, Err: wire.ErrMessageTooLarge, MaxSizeBytes: limit}
	}
	return nil
}

// allowPublish applies the fixed one-second window rate limit (protocol.md
// §6.10): rejected publishes do not count.
func (st *connState) allowPublish(sec uint32, limit int) bool {
	st.window(sec)
	if int(st.rateN) >= limit {
		return false
	}
	st.rateN++
	return true
}

func limitOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// record stores the accepted publish in the message store (protocol.md
// §6.5). A store failure never fails the publish; it is logged.
func (s *Server) record(g *auth.Grant, res acl.Resolution, pattern string, p *hub.Publication, size int, now time.Time) {
	err := s.cfg.Store.Append(context.Background(), &store.Record{
		MsgID: p.Msg.MsgID, ProjectID: g.ProjectID, AppID: res.AppID, RoomID: res.RoomID,
		Topic: res.Key, Pattern: pattern, Sender: g.ActorTokenID, PayloadSize: size, Timestamp: now,
	})
	if err != nil {
		if ce := s.log.Check(zap.WarnLevel, "message store append failed"); ce != nil {
			ce.Write(zap.Error(err))
		}
	}
}

// ack records `ack` / `batchAck` (protocol.md §6.4). Nothing is re-sent
// either way (OQ-66).
func (s *Server) ack(st *connState, ids ...string) {
	_ = s.cfg.Store.Ack(context.Background(), grantOf(st.c.Session()).ActorTokenID, ids...)
}
