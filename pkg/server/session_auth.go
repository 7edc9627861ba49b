package server

import (
	"context"
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
// (protocol.md §12.4 item 17).
const authTimeout = 5 * time.Second

// authenticate handles the first `auth` frame (protocol.md §2.1–§2.4).
func (s *Server) authenticate(st *connState, cmd *wire.Command) {
	g, reason, err := s.validate(cmd)
	if reason == "" && g.MaxConnections > 0 && g.OrganizationID != "" &&
		!s.orgs.reserve(g.OrganizationID, g.MaxConnections) {
		reason = wire.ErrConnectionLimitReached
	}
	if reason != "" {
		s.refusedAuth(st, reason, err) // counted and logged once (stats.go)
		st.write(frame(wire.AppendAuthFailed(nil, reason)))
		st.failures++
		if int(st.failures) >= s.cfg.MaxAuthFailures {
			s.closeProtocol(st, disconnect.New(disconnect.AuthFailures))
		}
		return
	}
	version := min(max(cmd.ProtocolVersion, 1), 2)
	sess := &hub.Session{Grant: g, Version: uint8(version), ValidatedAt: time.Now().UnixNano()}
	if g.MaxConnections > 0 && g.OrganizationID != "" {
		sess.LimitOrg = g.OrganizationID
	}
	st.c.SetSession(sess)
	st.c.SetPhase(hub.PhaseAuthed)
	s.obs.auth[AuthOK].Add(1)
	s.obs.authed.Add(1) // after the phase: see Server.closed
	var specs []*hub.SubSpec
	restored := []wire.Restored{}
	if cmd.Reconnect {
		specs, restored = s.restorable(g)
	}
	st.write(frame(wire.AppendAuthOK(nil, &wire.AuthOK{
		ActorTokenID:    g.ActorTokenID,
		ProjectID:       g.ProjectID,
		ActorType:       g.ActorType,
		ProtocolVersion: version,
		Restored:        restored,
	})))
	for _, spec := range specs {
		s.hub.Subscribe(st.c, spec)
	}
	if ce := s.log.Check(zap.DebugLevel, "authenticated"); ce != nil {
		ce.Write(connFields(st.c, zap.Int("protocol_version", version))...)
	}
}

// validate asks the auth backend about the token; reason is "" on success,
// else the `error` of the auth reply (protocol.md §2.4, OQ-29), with the
// backend's error when it failed (logged once by the caller).
func (s *Server) validate(cmd *wire.Command) (*auth.Grant, string, error) {
	if !cmd.TokenIsString {
		return nil, wire.ErrAccessDenied, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), authTimeout)
	defer cancel()
	began := time.Now()
	g, err := s.cfg.Auth.Validate(ctx, cmd.Token)
	s.obs.authLatency.observe(time.Since(began))
	switch {
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
// (protocol.md §2.6, OQ-53): each is checked against the grants again and
// skipped silently when refused; no `subscribed` frames are sent.
func (s *Server) restorable(g *auth.Grant) ([]*hub.SubSpec, []wire.Restored) {
	specs := []*hub.SubSpec{}
	restored := []wire.Restored{}
	for _, a := range g.ActiveSubscriptions {
		if topic.ValidateSubscribe(a.Pattern) != nil {
			continue
		}
		spec, res, d := s.resolveSub(g, a.Pattern)
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

// resolveSub applies scope injection, the grant check and topic resolution
// to a subscribe pattern (protocol.md §3.3 steps 1–3). spec is nil unless
// the decision is acl.Allowed.
func (s *Server) resolveSub(g *auth.Grant, pattern string) (spec *hub.SubSpec, res acl.Resolution, d acl.Decision) {
	eff := g.Rules.EffectivePattern(pattern, g.ScopeSlug, acl.OpSubscribe)
	if d = g.Rules.Check(eff, acl.OpSubscribe); d != acl.Allowed {
		return nil, res, d
	}
	res, ok := g.Rules.Resolve(eff)
	if !ok {
		return nil, res, acl.DeniedNoRule
	}
	return &hub.SubSpec{Pattern: pattern, Key: res.Key, Wildcard: topic.HasWildcard(eff)}, res, d
}

// groupName is the load-balancing group of a subscription:
// <projectId>_<appId>_<loadBalanceGroup or actorTokenId> (protocol.md §6.8).
// The broker treats it as an opaque key, so a '/' in the client's group
// cannot cut it short (OQ-35).
func groupName(g *auth.Grant, appID, group string) string {
	if group == "" {
		group = g.ActorTokenID
	}
	return g.ProjectID + "_" + appID + "_" + group
}
