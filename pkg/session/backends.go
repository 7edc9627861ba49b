package session

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
// reports to the control plane (wire-reference.md §5.2) and customer webhooks
// (§5.3). None of them waits: the Batcher and the Dispatcher queue, and
// drop and count when full.

// jsonPool holds the buffers data is rendered to JSON in, once per publish
// that has a trigger webhook.
var jsonPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// afterPublish counts an accepted publish for the control plane and fires
// its trigger webhook (wire-reference.md §3.3 steps 8 and 10). The control plane
// counts the length of data's JSON rendering (§5.2, OQ-48): without a
// trigger webhook that length is computed (wire.JSONLen) and nothing is
// rendered; with one, data is rendered once, for the webhook body, and the
// control plane counts that rendering.
func (p *Protocol) afterPublish(g *auth.Grant, res acl.Resolution, pattern, eff string, data []byte) {
	topicName := webhook.TopicName(pattern)
	var hook *auth.Webhook
	if p.cfg.Webhooks != nil {
		hook = g.App(res.AppID).TriggerFor(topicName)
	}
	if hook == nil {
		if p.cfg.Control != nil {
			n, err := wire.JSONLen(data)
			if err != nil {
				n = len("null") // data was validated on decode; this cannot happen
			}
			p.cfg.Control.RecordPublish(g.ProjectID, n)
		}
		return
	}
	bp := jsonPool.Get().(*[]byte)
	js, err := wire.AppendJSON((*bp)[:0], data)
	if err != nil {
		js = append(js[:0], "null"...) // as above
	}
	if p.cfg.Control != nil {
		p.cfg.Control.RecordPublish(g.ProjectID, len(js))
	}
	p.cfg.Webhooks.Trigger(webhook.TriggerRequest{
		Webhook: hook, OrganizationID: g.OrganizationID, ProjectID: g.ProjectID,
		AppID: res.AppID, RoomID: res.RoomID, ActorID: g.ActorTokenID,
		RoomName: webhook.RoomName(g.Rules, res, eff, g.ScopeSlug), TopicName: topicName,
		Scope: scopeOf(g), Data: data, DataJSON: js, // Trigger copies both
	})
	*bp = js[:0]
	jsonPool.Put(bp)
}

// hydrate fires the hydration webhook of a live subscribe (§5.3): its JSON
// answer reaches the subscriber as a KindHydration frame, written on the
// connection's worker and so after `subscribed` (wire-reference.md §3.3).
func (p *Protocol) hydrate(c *hub.Conn, out Framer, g *auth.Grant, res acl.Resolution, pattern string) {
	if p.cfg.Webhooks == nil {
		return
	}
	topicName := webhook.TopicName(pattern)
	hook := g.App(res.AppID).HydrationFor(topicName)
	if hook == nil {
		return
	}
	eff := g.Rules.EffectivePattern(pattern, g.ScopeSlug, acl.OpSubscribe)
	p.cfg.Webhooks.Hydrate(webhook.HydrateRequest{
		Webhook: hook, ActorID: g.ActorTokenID, TopicName: topicName, Scope: scopeOf(g),
		RoomName: webhook.RoomName(g.Rules, res, eff, g.ScopeSlug),
	}, func(answer json.RawMessage) {
		data, err := DataFromJSON(answer)
		if err != nil {
			p.log.Debug("hydration answer not converted: " + err.Error())
			return
		}
		f := out.Frame(Reply{Kind: KindHydration, Payload: wire.AppendHydration(nil, topicName, pattern, data)})
		p.hub.Run(c, func(c *hub.Conn) { c.WriteFrame(f) })
	})
}

// reportSubscription records a subscribe, setFilters or unsubscribe for the
// control plane's /subscriptions (§5.2); filters are sent as the client
// sent them.
func (p *Protocol) reportSubscription(g *auth.Grant, action control.Action, pattern string, lb bool, group string, filters wire.FilterSpec) {
	if p.cfg.Control == nil {
		return
	}
	ch := control.SubscriptionChange{ActorTokenID: g.ActorTokenID, Topic: pattern, Action: action,
		LoadBalance: lb, LoadBalanceGroup: group}
	if filters.Kind == wire.FiltersArray {
		if js, err := wire.AppendJSON(nil, filters.Raw); err == nil {
			ch.Filters = js
		}
	}
	p.cfg.Control.RecordSubscription(ch)
}

// scopeOf is the grant's scope for webhook bodies (OQ-40).
func scopeOf(g *auth.Grant) webhook.Scope {
	return webhook.Scope{ID: g.ScopeID, Slug: g.ScopeSlug, Name: g.ScopeName}
}

// DataFromJSON converts a JSON value (a webhook's answer, the payload of
// POST /internal/publish) to the MessagePack `data` of a frame, under the
// data depth limit (wire.MaxDataDepth). Its errors are wire's
// (*wire.DecodeError for a malformed or too deep value).
func DataFromJSON(payload json.RawMessage) ([]byte, error) {
	doc := make([]byte, 0, len(payload)+9)
	doc = append(append(append(doc, `{"data":`...), payload...), '}')
	out, err := wire.ConvertJSON(nil, doc)
	if err != nil {
		return nil, err
	}
	// out is the one-entry map {"data": <value>}: fixmap(1), fixstr "data".
	return out[6:], nil
}
