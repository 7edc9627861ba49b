package session

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// revalidateRetry is how long after a failed (unavailable) revalidation the
// next attempt comes (OQ-9).
const revalidateRetry = 30 * time.Second

// revalidateConcurrency is how many actors of one batch are revalidated at
// once: a batch of thousands of sessions against an HTTP service taking
// 50 ms a call takes seconds, not minutes.
const revalidateConcurrency = 32

// revalidate checks due sessions against the auth backend (wire-reference.md §4.9,
// OQ-9, OQ-11, OQ-12; hub.Config.Revalidate). It runs on a hub goroutine,
// one batch at a time: one call per actor, revalidateConcurrency actors at a
// time, and each answer is applied to every session of its actor. It
// returns once every call of the batch has (the goroutines it starts are
// its own, waited for here; the hub waits for it at shutdown). The calls'
// context is the Protocol's, not a connection's (one answer serves every
// connection of the actor): Shutdown cancels them, and an answer that comes
// back cancelled by it is not applied.
func (p *Protocol) revalidate(conns []*hub.Conn) {
	byActor := make(map[string][]*hub.Conn)
	var actors []string
	for _, c := range conns {
		actor := grantOf(c.Session()).ActorTokenID
		if _, seen := byActor[actor]; !seen {
			actors = append(actors, actor)
		}
		byActor[actor] = append(byActor[actor], c)
	}
	slots := make(chan struct{}, revalidateConcurrency)
	var wg sync.WaitGroup
	for _, actor := range actors {
		slots <- struct{}{}
		wg.Add(1) // owned by wg: revalidate returns once every call has
		go func() {
			defer func() { <-slots; wg.Done() }()
			ctx, cancel := context.WithTimeout(p.ctx, authTimeout)
			var a revalidation
			a.g, a.err = p.cfg.Auth.Revalidate(ctx, actor)
			cancel()
			if a.err != nil && p.ctx.Err() != nil {
				return // shutting down: the connections are closing
			}
			for _, c := range byActor[actor] {
				p.applyRevalidation(c, actor, a)
			}
		}()
	}
	wg.Wait()
}

type revalidation struct {
	g   *auth.Grant
	err error
}

// applyRevalidation applies one answer about actor to c: a new grant
// (subscriptions and presence it no longer allows are dropped, each
// subscription with an error), a revocation (KindDisconnect, then 4001), or
// a failure (retried in revalidateRetry).
//
// The new session is built on c's worker from the session in force there
// (updateSession), not from one read before the backend call: a widening
// installed by a subscribe meanwhile (widenGrant) is replaced with the rest
// of the grant on success, and kept on failure.
func (p *Protocol) applyRevalidation(c *hub.Conn, actor string, a revalidation) {
	switch {
	case a.err == nil && a.g != nil:
		at := time.Now().UnixNano() // when the answer came, not when the worker got to it
		p.hub.Run(c, func(c *hub.Conn) {
			next := updateSession(c, func(s *hub.Session) { s.Grant, s.ValidatedAt = a.g, at })
			p.dropRevoked(c, next)
		})
		p.hub.RunShared(func(w hub.Writer) { p.dropRevokedPresence(w, c, a.g) })
	case errors.Is(a.err, auth.ErrDenied):
		reason := disconnect.TokenRevoked.Text()
		var rev *auth.RevokedError
		if errors.As(a.err, &rev) && rev.Reason != "" {
			reason = rev.Reason
		}
		p.logRevoked(c, actor, reason)
		p.Revoke(c, reason)
		return
	default:
		at := time.Now().Add(revalidateRetry - p.hub.Config().RevalidateInterval).UnixNano()
		p.hub.Run(c, func(c *hub.Conn) { updateSession(c, func(s *hub.Session) { s.ValidatedAt = at }) })
	}
	p.hub.RevalidationDone(c)
}

// updateSession installs change applied to a copy of c's session in force
// and returns what it installed. When another change got in between
// (widenGrant or reauth on c's reader, a revalidation on c's worker),
// change is applied again to that one (hub.Conn.CompareAndSwapSession), so
// neither is lost; change must depend only on what it is given. LimitOrg
// and Version carry over, and so does ExpiresAt unless change sets it.
func updateSession(c *hub.Conn, change func(*hub.Session)) *hub.Session {
	for {
		cur := c.Session()
		next := *cur
		change(&next)
		if c.CompareAndSwapSession(cur, &next) {
			return &next
		}
	}
}

// dropRevoked removes the subscriptions the new grant no longer allows and
// tells the client about each with a KindError (OQ-12). It runs on c's
// worker.
func (p *Protocol) dropRevoked(c *hub.Conn, sess *hub.Session) {
	g := grantOf(sess)
	for _, sub := range c.Subscriptions() {
		if _, _, d := resolveSub(g, sub.Pattern); d == acl.Allowed {
			continue
		}
		c.DropSubscription(sub.Pattern)
		e := unknownTopicError(sess, sub.Pattern, "", "")
		e.Detail = "access revoked"
		c.WriteFrame(frameFor(c, errorReply(e)))
	}
}

// disconnectPayload is the {type:"disconnect", reason} frame sent just
// before a 4001 close (OQ-62).
func disconnectPayload(reason string) []byte {
	b := msgp.AppendMapHeader(nil, 2)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "disconnect")
	b = msgp.AppendString(b, "reason")
	return msgp.AppendString(b, reason)
}

// dropRevokedPresence takes the connection out of a room, and out of lobbies,
// that its new grant no longer allows (OQ-12). It runs on the presence
// worker.
func (p *Protocol) dropRevokedPresence(w hub.Writer, c *hub.Conn, g *auth.Grant) {
	if room, ok := p.pres.RoomOf(c); ok {
		if id, ok := g.Rules.RoomBySlug(room.Slug); !ok || id != room.ID {
			p.unsharePresence(c)
			p.emit(w, p.pres.Leave(c))
		}
	}
	for _, slug := range p.pres.Lobbies(c) {
		if _, ok := lobbyRooms(g, slug); !ok {
			p.pres.Unwatch(c, slug)
		}
	}
}
