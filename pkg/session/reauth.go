package session

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// reauth replaces the token of an authenticated connection in place
// (docs/protocol.md "Auth"; what @nolag/js-sdk 1.14 sends 30 s before its
// token's exp, wire-reference.md §12.5). The new token is validated as an `auth`
// token is, on the connection's reader (only this connection waits), and
// accepted only when it names the connection's actor, organisation,
// project and app. Then the connection's session carries the new grant and
// the new token's expiry, the subscriptions, presence room and lobbies the
// new grant no longer allows are dropped as a revalidation drops them
// (dropRevoked: an error frame each), and {type:"reauth", success:true}
// follows those error frames. A refusal answers {type:"reauth",
// success:false, error, code} and leaves the session as it was; a refused
// token (access_denied, actor_mismatch) counts as a failed auth attempt
// (failedAuth: 4004 at Config.MaxAuthFailures).
func (p *Protocol) reauth(st *State, out Sink, cmd *wire.Command) {
	if !cmd.HasToken {
		out.Write(reauthFailed(wire.ErrBadRequest))
		return
	}
	c := st.Conn
	g, reason, err := p.validate(c, cmd)
	if errors.Is(err, errGone) {
		p.abandoned(st, "reauth")
		return
	}
	if reason == "" && !sameIdentity(grantOf(c.Session()), g) {
		reason = wire.ErrActorMismatch
	}
	if reason != "" {
		p.refusedAuth(st, "reauth", reason, err) // counted and logged once (log.go)
		out.Write(reauthFailed(reason))
		if reason == wire.ErrAccessDenied || reason == wire.ErrActorMismatch {
			p.failedAuth(st, out)
		}
		return
	}
	p.obs.reauth[AuthOK].Add(1)
	at, expires := time.Now().UnixNano(), hub.ExpirySeconds(g.ExpiresAt)
	// Installed here, on the reader, so the commands after this one are
	// checked against the new grant; a revalidation or a widening racing
	// it is applied again on top (updateSession).
	updateSession(c, func(s *hub.Session) { s.Grant, s.ValidatedAt, s.ExpiresAt = g, at, expires })
	ok := out.Frame(Reply{Kind: KindReauth, Payload: wire.AppendReauthOK(nil)})
	t := c.ExpectReply()
	p.hub.Run(c, func(c *hub.Conn) {
		p.dropRevoked(c, c.Session())
		c.Answer(t, ok)
	})
	p.hub.RunShared(func(w hub.Writer) { p.dropRevokedPresence(w, c, g) })
	if ce := p.log.Check(zap.DebugLevel, "reauthenticated"); ce != nil {
		ce.Write(LogFields(c, zap.Uint32("expires_at", expires))...)
	}
}

// sameIdentity reports whether a grant of a new token may replace the
// grant in force: the same actor, organisation (whose connection slot the
// connection holds), project and token-level app.
func sameIdentity(cur, next *auth.Grant) bool {
	return cur.ActorTokenID == next.ActorTokenID && cur.OrganizationID == next.OrganizationID &&
		cur.ProjectID == next.ProjectID && cur.AppID == next.AppID
}

// reauthCodes are the codes of the refused reauth answers, by their error.
var reauthCodes = map[string]int{
	wire.ErrBadRequest:           wire.CodeBadRequest,
	wire.ErrAccessDenied:         wire.CodeUnauthorized,
	wire.ErrActorMismatch:        wire.CodeForbidden,
	wire.ErrAuthenticationFailed: wire.CodeBadGateway,
	wire.ErrConnectionFailed:     wire.CodeServiceUnavailable,
}

// reauthFailed is the KindReauth reply refusing a reauth for reason.
func reauthFailed(reason string) Reply {
	code := reauthCodes[reason]
	return Reply{Kind: KindReauth, Payload: wire.AppendReauthFailed(nil, reason, code),
		Err: &wire.Error{Err: reason, Code: code}}
}
