package session

import (
	"time"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/topic"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// subscribe handles `subscribe` (wire-reference.md §3.3): always exactly one
// KindSubscribed or one KindError, with topic echoed as sent. The reply to
// an accepted subscribe is written by the connection's worker once the
// subscription is in place, before its retained messages.
func (p *Protocol) subscribe(st *State, out Sink, cmd *wire.Command) {
	if !cmd.HasTopic {
		e := &wire.Error{Err: wire.ErrBadRequest, Detail: "subscribe requires topic"}
		p.refusedSubscribe(st, RefuseBadRequest, e)
		p.Refuse(st, out, e) // nothing waits for it: no topic to match
		return
	}
	c := st.Conn
	sess := c.Session()
	g := grantOf(sess)
	if err := topic.ValidateSubscribe(cmd.Topic); err != nil {
		p.refuseSubscribe(st, out, RefuseInvalidTopic, &wire.Error{Err: wire.ErrInvalidTopic, Topic: cmd.Topic, HasTopic: true, Detail: err.Error()})
		return
	}
	spec, res, d := resolveSub(g, cmd.Topic)
	if d != acl.Allowed {
		cur := p.widenGrant(c, sess, cmd.Topic)
		if cur == nil {
			return // the connection went away during the check: nobody to answer
		}
		if cur != sess {
			sess, g = cur, grantOf(cur)
			spec, res, d = resolveSub(g, cmd.Topic)
		}
	}
	if d != acl.Allowed {
		p.refuseSubscribe(st, out, RefuseGrant, unknownTopicError(sess, cmd.Topic, d.Hint(acl.OpSubscribe), ""))
		return
	}
	filters, errStr := cmd.Filters.Normalize()
	if errStr != "" {
		p.refuseSubscribe(st, out, RefuseInvalidFilter, &wire.Error{Err: errStr, Topic: cmd.Topic, HasTopic: true})
		return
	}
	spec.Filters, spec.QoS = filters, uint8(cmd.QoS)
	if cmd.LoadBalance {
		spec.LoadBalance = true
		spec.Group = groupName(g, res.AppID, cmd.LoadBalanceGroup)
		spec.Durable = p.durable(g, &spec)
	}
	if st.resume&resumeLive != 0 && p.resume.Resubscribe(c, spec.Pattern) {
		spec.NoRetained = true // a restored subscription: its retained message came before the drop or is in the replay
	}
	s := getScratch()
	spec.Reply = out.Frame(s.reply(KindSubscribed, wire.AppendSubscribed(s.b[:0], cmd.Topic, cmd.LoadBalance)))
	s.release()
	// spec.TooMany is left nil: the worker builds the refusal when the cap
	// is hit (tooManyFrame), and counts and logs it (tooManySubscriptions).
	p.hub.Subscribe(c, &spec) // copied: spec stays on this stack
	p.noteSubscribed(st, &spec)
	p.reportSubscription(g, control.ActionSubscribe, cmd.Topic, spec.LoadBalance, spec.Group, cmd.Filters)
	p.hydrate(c, out, g, res, cmd.Topic)
}

// tooManyFrame is hub.Config.TooManyFrame: the too_many_subscriptions
// error answering a subscribe to pattern that c's worker refused for
// hub.Config.MaxSubscriptions, in c's encoding (nil when its transport
// builds no frames). The pattern is the one the client sent (SubSpec.Pattern).
func tooManyFrame(c *hub.Conn, pattern string) []byte {
	f, ok := c.Transport().(Framer)
	if !ok {
		return nil
	}
	return errorFrame(f, &wire.Error{Err: wire.ErrTooManySubscriptions,
		Topic: pattern, HasTopic: true, Detail: DetailTooManySubscriptions})
}

// roomAccessTimeout bounds the subscribe cache-miss fallback call
// (wire-reference.md §4.10: 2 s).
const roomAccessTimeout = 2 * time.Second

// widenGrant runs the subscribe cache-miss fallback (wire-reference.md §4.10)
// for a pattern outside sess's grant: when the auth backend implements
// auth.RoomAccessChecker and allows the pattern, its rules are prepended to
// a copy of the grant in force, installed as the connection's session. It
// returns the session the subscribe is to be judged by: sess when the
// fallback denied, failed or does not exist (the backend caches its
// denials), else the connection's session now, widened or not; nil when
// the check was cancelled because the connection went away or the node is
// shutting down (its context is the connection's: calls.go).
//
// The check takes up to roomAccessTimeout, and a revalidation may replace
// the session meanwhile (applyRevalidation, on the connection's worker), so
// the widening is installed with a compare-and-swap against the session in
// force, rebuilt from it whenever the swap loses:
//   - the grant is still the one the check was asked against (only
//     ValidatedAt moved: a failed revalidation rescheduled itself): the
//     rules are prepended to it again;
//   - a revalidation installed a new grant: the widening is dropped, not
//     prepended to the new grant. Widened access lasts until the next
//     revalidation, which stands for the backend's later word on the
//     actor's rooms; an answer to a check asked before that revalidation
//     was applied may be older than it (the two calls overlapped), and
//     re-applying it could bring back access the revalidation just took
//     away. The subscribe is judged by the new grant alone, which may allow
//     it; when it does not, the client is refused (42940) and its next
//     subscribe asks the backend again. The old rules, the stale grant's
//     own, are never put back.
//
// A revalidation is recognised by the identity of the grant it installs: a
// remote backend (httpauth) answers each revalidation with a new
// *auth.Grant. One answering with the very object already in force (the
// static backend does, but has no fallback) changes no rule, and a widening
// asked against that grant is kept.
func (p *Protocol) widenGrant(c *hub.Conn, sess *hub.Session, pattern string) *hub.Session {
	checker, ok := p.cfg.Auth.(auth.RoomAccessChecker)
	if !ok {
		return sess
	}
	g := grantOf(sess)
	ctx, cancel := p.calls.start(c, roomAccessTimeout)
	rules, err := checker.CheckRoomAccess(ctx, g.ActorTokenID, pattern)
	if gone := p.calls.end(c, ctx, cancel); err != nil && (gone || p.ctx.Err() != nil) {
		return nil
	}
	if err != nil || len(rules) == 0 {
		return sess
	}
	wider := *g
	wider.Rules = append(append(make(acl.Rules, 0, len(rules)+len(g.Rules)), rules...), g.Rules...)
	for {
		cur := c.Session()
		if cur.Grant != sess.Grant {
			return cur // revalidated meanwhile: drop the widening (above)
		}
		next := *cur
		next.Grant = &wider
		if c.CompareAndSwapSession(cur, &next) {
			return &next
		}
	}
}

// unsubscribe always answers KindUnsubscribed, subscribed or not (OQ-60),
// from the connection's worker once the subscription is gone.
func (p *Protocol) unsubscribe(st *State, out Sink, cmd *wire.Command) {
	if !cmd.HasTopic {
		p.badRequest(st, out, "unsubscribe requires topic")
		return
	}
	c := st.Conn
	s := getScratch()
	p.hub.Unsubscribe(c, cmd.Topic, out.Frame(s.reply(KindUnsubscribed, wire.AppendUnsubscribed(s.b[:0], cmd.Topic))))
	s.release()
	if st.resume&resumeLive != 0 {
		p.resume.Unsubscribed(c, cmd.Topic)
	}
	p.reportSubscription(grantOf(c.Session()), control.ActionUnsubscribe, cmd.Topic, false, "", wire.FilterSpec{})
}

// setFilters replaces a live subscription's filters (wire-reference.md §6.9,
// OQ-61): KindFiltersUpdated, or a not_subscribed KindError, from the
// worker once the change is in force.
func (p *Protocol) setFilters(st *State, out Sink, cmd *wire.Command) {
	if !cmd.HasTopic {
		p.badRequest(st, out, "setFilters requires topic")
		return
	}
	if cmd.Filters.Kind == wire.FiltersAbsent {
		p.badRequest(st, out, "setFilters requires filters")
		return
	}
	filters, errStr := cmd.Filters.Normalize()
	if errStr != "" {
		p.answerError(st, out, &wire.Error{Err: errStr, Topic: cmd.Topic, HasTopic: true})
		return
	}
	var raw []byte
	if cmd.Filters.Kind == wire.FiltersArray {
		raw = append([]byte(nil), cmd.Filters.Raw...)
	}
	c := st.Conn
	s := getScratch()
	ok := out.Frame(s.reply(KindFiltersUpdated, wire.AppendFiltersUpdated(s.b[:0], cmd.Topic, raw)))
	notSub := out.Frame(s.errorReply(&wire.Error{Err: wire.ErrNotSubscribed, Topic: cmd.Topic, HasTopic: true}))
	s.release()
	p.hub.SetFilters(c, cmd.Topic, filters, ok, notSub)
	if st.resume&resumeLive != 0 {
		p.resume.FiltersSet(c, cmd.Topic, filters)
	}
	p.reportSubscription(grantOf(c.Session()), control.ActionSubscribe, cmd.Topic, false, "", cmd.Filters)
}
