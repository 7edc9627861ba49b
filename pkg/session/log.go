package session

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Logging. Field keys (stable, snake_case): conn_id, remote_addr,
// actor_token_id, reason, code, error, topic, detail, transport,
// duration, attempt.

// LogFields are the fields naming a connection in a log line, then extra:
// its id, the peer's address and, once authenticated, the actor. Never the
// token.
func LogFields(c *hub.Conn, extra ...zap.Field) []zap.Field {
	f := make([]zap.Field, 0, 3+len(extra))
	f = append(f, zap.Uint64("conn_id", c.ID))
	if ra := c.RemoteAddr(); ra != nil {
		f = append(f, zap.String("remote_addr", ra.String()))
	}
	if sess := c.Session(); sess != nil {
		if g, ok := sess.Grant.(*auth.Grant); ok {
			f = append(f, zap.String("actor_token_id", g.ActorTokenID))
		}
	}
	return append(f, extra...)
}

// refusedPublish counts and logs a refused publish (publishError).
func (p *Protocol) refusedPublish(st *State, e *wire.Error) {
	r := classifyPublish(e)
	p.obs.pubRefused[r].Add(1)
	p.logRefusal(st, "publish refused", logBit(r, false), r, e)
}

// refusedSubscribe counts and logs a subscribe refused on the reader.
func (p *Protocol) refusedSubscribe(st *State, r Refusal, e *wire.Error) {
	p.obs.subRefused[r].Add(1)
	p.logRefusal(st, "subscribe refused", logBit(r, true), r, e)
}

// refuseSubscribe counts and logs a refused subscribe, then answers it.
func (p *Protocol) refuseSubscribe(st *State, out Sink, r Refusal, e *wire.Error) {
	p.refusedSubscribe(st, r, e)
	p.answerError(st, out, e)
}

// tooManySubscriptions counts and logs a subscribe the connection's worker
// refused because the connection holds hub.Config.MaxSubscriptions
// (hub.Config.OnTooManySubscriptions, on that worker): like the refusals
// of the reader, the connection's first at info, the next at debug. The
// worker remembers the first (the reader's State is not its own).
func (p *Protocol) tooManySubscriptions(c *hub.Conn, pattern string, first bool) {
	p.obs.subRefused[RefuseTooManySubscriptions].Add(1)
	level := zapcore.DebugLevel
	if first {
		level = zapcore.InfoLevel
	}
	if ce := p.log.Check(level, "subscribe refused"); ce != nil {
		ce.Write(LogFields(c, refusalFields(RefuseTooManySubscriptions, &wire.Error{
			Err: wire.ErrTooManySubscriptions, Topic: pattern, HasTopic: true, Detail: DetailTooManySubscriptions})...)...)
	}
}

// DetailTooManySubscriptions is the detail of the too_many_subscriptions
// error.
const DetailTooManySubscriptions = "the connection holds the maximum number of subscriptions"

// logBit is the bit of refusal r in State.logged: a publish refusal's among
// bits 0-7, a subscribe refusal's among bits 8-15. RefuseTooManySubscriptions,
// the one refusal past bit 15, is decided on the connection's worker and
// remembered there (tooManySubscriptions); TestLogBits checks the rest fit.
func logBit(r Refusal, subscribe bool) uint16 {
	i := int(r) - 1
	if subscribe {
		i += 8
	}
	return uint16(1) << i
}

// logRefusal logs a refusal: the first of its kind on the connection at
// info, the rest at debug, so a client hammering a limit writes one info
// line, not one per frame. bit is the kind's bit in State.logged (logBit).
func (p *Protocol) logRefusal(st *State, msg string, bit uint16, r Refusal, e *wire.Error) {
	level := zapcore.InfoLevel
	if st.logged&bit != 0 {
		level = zapcore.DebugLevel
	}
	st.logged |= bit
	if ce := p.log.Check(level, msg); ce != nil {
		ce.Write(LogFields(st.Conn, refusalFields(r, e)...)...)
	}
}

// refusalFields are the fields of a refusal's log line. The client's topic
// and the detail are repeated as the error frame has them (wire.Echo):
// valid UTF-8, bounded.
func refusalFields(r Refusal, e *wire.Error) []zap.Field {
	extra := []zap.Field{zap.Stringer("reason", r), zap.String("error", e.Err)}
	if e.Code != 0 {
		extra = append(extra, zap.Int("code", e.Code))
	}
	if e.HasTopic {
		extra = append(extra, zap.String("topic", wire.Echo(e.Topic)))
	}
	if e.Detail != "" {
		extra = append(extra, zap.String("detail", wire.Echo(e.Detail)))
	}
	return extra
}

// abandoned logs, at debug, an `auth` or `reauth` (typ) whose backend call
// was cancelled because the connection went away or the node is shutting
// down: nothing is answered, and it is not counted as refused (the backend
// did not fail).
func (p *Protocol) abandoned(st *State, typ string) {
	if ce := p.log.Check(zapcore.DebugLevel, typ+" abandoned: the connection went away"); ce != nil {
		ce.Write(LogFields(st.Conn)...)
	}
}

// refusedAuth counts and logs a failed `auth` or `reauth` (typ), at info
// (each is an answer the client reads, and a connection gets at most
// Config.MaxAuthFailures of them), or at warn when the backend failed
// rather than refused: then err is its error.
func (p *Protocol) refusedAuth(st *State, typ, reason string, err error) {
	outcome := authOutcomeOf(reason)
	counts, msg := &p.obs.auth, "auth refused"
	if typ == "reauth" {
		counts, msg = &p.obs.reauth, "reauth refused"
	}
	counts[outcome].Add(1)
	level := zapcore.InfoLevel
	if outcome == AuthUnavailable || outcome == AuthError {
		level = zapcore.WarnLevel
	}
	ce := p.log.Check(level, msg)
	if ce == nil {
		return
	}
	extra := []zap.Field{zap.String("reason", reason), zap.Int("attempt", int(st.failures)+1)}
	if err != nil {
		extra = append(extra, zap.NamedError("error", err))
	}
	ce.Write(LogFields(st.Conn, extra...)...)
}
