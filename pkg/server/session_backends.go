package server

import (
	"encoding/json"
	"sync"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/control"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/webhook"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// The session's hand-offs to the user's systems: usage and subscription
// reports to the control plane (protocol.md §5.2) and customer webhooks
// (§5.3). None of them waits: the Batcher and the Dispatcher queue, and
// drop and count when full.

// jsonPool holds the buffers data is rendered to JSON in, once per publish
// when a control plane or a trigger webhook needs it.
var jsonPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// afterPublish counts an accepted publish for the control plane and fires
// its trigger webhook (protocol.md §3.3 steps 8 and 10). data is rendered
// to JSON at most once, and only when one of them needs it.
func (s *Server) afterPublish(g *auth.Grant, res acl.Resolution, pattern, eff string, data []byte) {
	topicName := webhook.TopicName(pattern)
	var hook *auth.Webhook
	if s.cfg.Webhooks != nil {
		hook = g.App(res.AppID).TriggerFor(topicName)
	}
	if s.cfg.Control == nil && hook == nil {
		return
	}
	bp := jsonPool.Get().(*[]byte)
	js, err := wire.AppendJSON((*bp)[:0], data)
	if err != nil {
		js = append(js[:0], "null"...) // data was validated on decode; this cannot happen
	}
	if s.cfg.Control != nil {
		s.cfg.Control.RecordPublish(g.ProjectID, len(js))
	}
	if hook != nil {
		s.cfg.Webhooks.Trigger(webhook.TriggerRequest{
			Webhook: hook, OrganizationID: g.OrganizationID, ProjectID: g.ProjectID,
			AppID: res.AppID, RoomID: res.RoomID, ActorID: g.ActorTokenID,
			RoomName: webhook.RoomName(g.Rules, res, eff, g.ScopeSlug), TopicName: topicName,
			Scope: scopeOf(g), Data: data, DataJSON: js, // Trigger copies both
		})
	}
	*bp = js[:0]
	jsonPool.Put(bp)
}

// hydrate fires the hydration webhook of a live subscribe (§5.3): its JSON
// answer reaches the subscriber as a `hydration` frame, written on the
// connection's worker and so after `subscribed` (protocol.md §3.3).
func (s *Server) hydrate(c *hub.Conn, g *auth.Grant, res acl.Resolution, pattern string) {
	if s.cfg.Webhooks == nil {
		return
	}
	topicName := webhook.TopicName(pattern)
	hook := g.App(res.AppID).HydrationFor(topicName)
	if hook == nil {
		return
	}
	eff := g.Rules.EffectivePattern(pattern, g.ScopeSlug, acl.OpSubscribe)
	s.cfg.Webhooks.Hydrate(webhook.HydrateRequest{
		Webhook: hook, ActorID: g.ActorTokenID, TopicName: topicName, Scope: scopeOf(g),
		RoomName: webhook.RoomName(g.Rules, res, eff, g.ScopeSlug),
	}, func(answer json.RawMessage) {
		data, err := payloadMsgpack(answer)
		if err != nil {
			s.log.Debug("hydration answer not converted: " + err.Error())
			return
		}
		f := frame(wire.AppendHydration(nil, topicName, pattern, data))
		s.hub.Run(c, func(c *hub.Conn) { c.WriteFrame(f) })
	})
}

// reportSubscription records a subscribe, setFilters or unsubscribe for the
// control plane's /subscriptions (§5.2); filters are sent as the client
// sent them.
func (s *Server) reportSubscription(g *auth.Grant, action control.Action, pattern string, lb bool, group string, filters wire.FilterSpec) {
	if s.cfg.Control == nil {
		return
	}
	ch := control.SubscriptionChange{ActorTokenID: g.ActorTokenID, Topic: pattern, Action: action,
		LoadBalance: lb, LoadBalanceGroup: group}
	if filters.Kind == wire.FiltersArray {
		if js, err := wire.AppendJSON(nil, filters.Raw); err == nil {
			ch.Filters = js
		}
	}
	s.cfg.Control.RecordSubscription(ch)
}

// scopeOf is the grant's scope for webhook bodies (OQ-40).
func scopeOf(g *auth.Grant) webhook.Scope {
	return webhook.Scope{ID: g.ScopeID, Slug: g.ScopeSlug, Name: g.ScopeName}
}
