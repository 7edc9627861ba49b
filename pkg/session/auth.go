package session

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/topic"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// authTimeout bounds one token validation; the SDKs give up after 10 s
// (wire-reference.md §12.4 item 17).
const authTimeout = 5 * time.Second

// authenticate handles the first `auth` (wire-reference.md §2.1–§2.4): a
// KindAuthFailed reply, closing with 4004 after Config.MaxAuthFailures of
// them (OQ-65, amended), or the session installed, a KindAuthOK reply and
// the restored subscriptions (§2.6).
func (p *Protocol) authenticate(st *State, out Sink, cmd *wire.Command) {
	g, reason, err := p.validate(st.Conn, cmd)
	if errors.Is(err, errGone) {
		p.abandoned(st, "auth")
		return
	}
	if reason == "" && g.MaxConnections > 0 && g.OrganizationID != "" &&
		!p.orgs.reserve(g.OrganizationID, g.MaxConnections) {
		reason = wire.ErrConnectionLimitReached
	}
	if reason != "" {
		p.refusedAuth(st, "auth", reason, err) // counted and logged once (log.go)
		writeAuthFailed(out, reason)
		p.failedAuth(st, out)
		return
	}
	version := min(max(cmd.ProtocolVersion, 1), 2)
	sess := &hub.Session{Grant: g, Version: uint8(version), ValidatedAt: time.Now().UnixNano(),
		ExpiresAt: hub.ExpirySeconds(g.ExpiresAt)}
	if g.MaxConnections > 0 && g.OrganizationID != "" {
		sess.LimitOrg = g.OrganizationID
	}
	c := st.Conn
	c.SetSession(sess)
	c.SetPhase(hub.PhaseAuthed)
	p.obs.auth[AuthOK].Add(1)
	p.obs.authed.Add(1) // after the phase: see Protocol.closed
	if f := p.cfg.OnAuthenticated; f != nil {
		f(c)
	}
	var specs []hub.SubSpec
	restored := []wire.Restored{}
	if cmd.Reconnect {
		specs, restored = p.restorable(g)
	}
	rs := p.attachSession(st, g, cmd, &restored) // resume.go
	s := getScratch()
	out.Write(s.reply(KindAuthOK, wire.AppendAuthOK(s.b[:0], &wire.AuthOK{
		ActorTokenID:    g.ActorTokenID,
		ProjectID:       g.ProjectID,
		ActorType:       g.ActorType,
		ProtocolVersion: version,
		Restored:        restored,
	})))
	s.release()
	p.resumeReplay(c, out, rs, specs) // first: it holds c's deliveries until the replay is out
	for i := range specs {
		p.hub.Subscribe(c, &specs[i])
		p.noteSubscribed(st, &specs[i])
	}
	if ce := p.log.Check(zap.DebugLevel, "authenticated"); ce != nil {
		ce.Write(LogFields(c, zap.Int("protocol_version", version))...)
	}
}

// failedAuth counts one failed auth attempt of the connection of st (an
// `auth`, or a `reauth` whose token was refused) and closes it with 4004
// too_many_auth_failures at Config.MaxAuthFailures (OQ-65, amended).
func (p *Protocol) failedAuth(st *State, out Sink) {
	st.failures++
	if int(st.failures) >= p.cfg.MaxAuthFailures {
		out.Disconnect(disconnect.New(disconnect.AuthFailures))
	}
}

// errGone is validate's error when the call was cancelled because its
// connection went away (closed, its peer hung up) or the node is shutting
// down: there is nobody to answer, and nothing to count against the
// backend.
var errGone = errors.New("session: the connection went away during the backend call")

// validate asks the auth backend about the token, with a context of c's
// (calls.go: cancelled when c closes or the node shuts down; none for a
// backend that answers from memory, auth.Instant); reason is ""
// on success, else the `error` of the auth reply (wire-reference.md §2.4, OQ-29),
// with the backend's error when it failed (logged once by the caller), or
// errGone when c went away meanwhile. A grant whose token is past the
// expiry the backend gave it (auth.Grant.ExpiresAt: a token cache hit, a
// backend that does not check) is access_denied.
func (p *Protocol) validate(c *hub.Conn, cmd *wire.Command) (*auth.Grant, string, error) {
	if !cmd.TokenIsString {
		return nil, wire.ErrAccessDenied, nil
	}
	ctx, cancel := p.calls.startUnless(auth.IsInstant(p.cfg.Auth), c, authTimeout)
	began := time.Now()
	g, err := p.cfg.Auth.Validate(ctx, cmd.Token)
	if gone := p.calls.end(c, ctx, cancel); err != nil && (gone || p.ctx.Err() != nil) {
		return nil, "", errGone
	}
	p.obs.authLatency.observe(time.Since(began))
	switch {
	case err == nil && g != nil && !g.ExpiresAt.IsZero() && !began.Before(g.ExpiresAt):
		return nil, wire.ErrAccessDenied, nil
	case err == nil && g != nil:
		return g, "", nil
	case errors.Is(err, auth.ErrDenied):
		return nil, wire.ErrAccessDenied, nil
	case errors.Is(err, auth.ErrUnavailable):
		return nil, wire.ErrConnectionFailed, err
	default:
		return nil, wire.ErrAuthenticationFailed, err
	}
}

// restorable turns the grant's activeSubscriptions into subscriptions
// (wire-reference.md §2.6, OQ-53): each is checked against the grants again and
// skipped silently when refused; no `subscribed` frames are sent.
func (p *Protocol) restorable(g *auth.Grant) ([]hub.SubSpec, []wire.Restored) {
	specs := []hub.SubSpec{}
	restored := []wire.Restored{}
	for _, a := range g.ActiveSubscriptions {
		if topic.ValidateSubscribe(a.Pattern) != nil {
			continue
		}
		spec, res, d := resolveSub(g, a.Pattern)
		if d != acl.Allowed {
			continue
		}
		filters, errStr := wire.FilterSpec{Kind: wire.FiltersArray, Items: filterItems(a.Filters)}.Normalize()
		if errStr != "" {
			continue
		}
		spec.Filters, spec.QoS = filters, 1
		if a.LoadBalance {
			spec.LoadBalance = true
			spec.Group = groupName(g, res.AppID, a.LoadBalanceGroup)
			spec.Durable = p.durable(g, &spec)
		}
		specs = append(specs, spec)
		restored = append(restored, wire.Restored{Name: a.Pattern, LoadBalance: a.LoadBalance,
			LoadBalanceGroup: a.LoadBalanceGroup, Filters: a.Filters})
	}
	return specs, restored
}

func filterItems(values []string) []wire.FilterItem {
	items := make([]wire.FilterItem, len(values))
	for i, v := range values {
		items[i] = wire.FilterItem{Values: []string{v}, Valid: true}
	}
	return items
}

// grantOf is the grant of an authenticated session.
func grantOf(sess *hub.Session) *auth.Grant { return sess.Grant.(*auth.Grant) }

// resolveSub applies scope injection, the grant check and topic resolution
// to a subscribe pattern (wire-reference.md §3.3 steps 1–3). spec is zero unless
// the decision is acl.Allowed.
func resolveSub(g *auth.Grant, pattern string) (spec hub.SubSpec, res acl.Resolution, d acl.Decision) {
	eff := g.Rules.EffectivePattern(pattern, g.ScopeSlug, acl.OpSubscribe)
	if d = g.Rules.Check(eff, acl.OpSubscribe); d != acl.Allowed {
		return spec, res, d
	}
	res, ok := g.Rules.Resolve(eff)
	if !ok {
		return spec, res, acl.DeniedNoRule
	}
	return hub.SubSpec{Pattern: pattern, Key: res.Key, Wildcard: topic.HasWildcard(eff)}, res, d
}

// groupName is the load-balancing group of a subscription:
// <projectId>_<appId>_<loadBalanceGroup or actorTokenId> (wire-reference.md §6.8).
// The broker treats it as an opaque key, so a '/' in the client's group
// cannot cut it short (OQ-35).
func groupName(g *auth.Grant, appID, group string) string {
	if group == "" {
		group = g.ActorTokenID
	}
	return g.ProjectID + "_" + appID + "_" + group
}
