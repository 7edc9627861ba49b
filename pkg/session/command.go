package session

import (
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Handle runs one decoded command of the connection of st, whose transport
// is out (wire-reference.md §2–§7). Before auth only an `auth` with a token is
// taken (§2.1); anything else, a `reauth` included, is answered
// not_authenticated. After auth a `reauth` replaces the connection's token
// (reauth.go), and unknown types are ignored for forward compatibility
// (OQ-46). It runs on the connection's reader; cmd is not kept.
func (p *Protocol) Handle(st *State, out Sink, cmd *wire.Command) {
	if st.Conn.Phase() != hub.PhaseAuthed {
		if cmd.Type == "auth" && cmd.HasToken {
			p.authenticate(st, out, cmd)
			return
		}
		p.Refuse(st, out, &wire.Error{Err: wire.ErrNotAuthenticated})
		return
	}
	switch cmd.Type {
	case "auth":
		writeAuthFailed(out, wire.ErrAlreadyAuthenticated)
	case "reauth":
		p.reauth(st, out, cmd)
	case "subscribe":
		p.subscribe(st, out, cmd)
	case "unsubscribe":
		p.unsubscribe(st, out, cmd)
	case "setFilters":
		p.setFilters(st, out, cmd)
	case "publish":
		p.publish(st, out, cmd)
	case "presence":
		p.presenceSet(st, out, cmd)
	case "getPresence":
		p.getPresence(st, out, cmd)
	case "lobbySubscribe", "lobbyUnsubscribe", "getLobbyPresence":
		p.lobby(st, out, cmd)
	case "ack":
		if !cmd.HasMsgID {
			p.badRequest(st, out, "ack requires msgId")
			return
		}
		p.ack(st, cmd.MsgID)
	case "batchAck":
		if !cmd.HasMsgIDs {
			p.badRequest(st, out, "batchAck requires msgIds")
			return
		}
		p.ack(st, cmd.MsgIDs...)
	default:
		if ce := p.log.Check(zap.DebugLevel, "ignored message type"); ce != nil {
			ce.Write(zap.Uint64("conn_id", st.Conn.ID), zap.String("type", wire.Echo(cmd.Type)))
		}
	}
}

// Refuse writes an error that answers nothing a client waits for (a frame
// that is not a command, a command before auth, a publish without msgRef),
// unless the connection already got Config.ErrorFrameLimit of them this
// second (OQ-67, amended): a client flooding bad frames gets a bounded
// stream of errors back. Past Config.ErrorFloodLimit errors in the second
// it closes the connection with 1008 too_many_errors.
func (p *Protocol) Refuse(st *State, out Sink, e *wire.Error) {
	if n, _ := p.countError(st, out); n <= p.cfg.ErrorFrameLimit {
		writeError(out, e)
	}
}

func (p *Protocol) badRequest(st *State, out Sink, detail string) {
	p.Refuse(st, out, &wire.Error{Err: wire.ErrBadRequest, Detail: detail})
}

// answerError writes an error that answers a request (a publish with
// msgRef, a subscribe, unsubscribe or setFilters, a presence or lobby
// request): it is never dropped, because the SDKs wait for it (OQ-67,
// amended). A connection that provokes more than Config.ErrorFloodLimit
// errors in one second is closed with 1008 too_many_errors instead of being
// answered further.
func (p *Protocol) answerError(st *State, out Sink, e *wire.Error) {
	if _, closed := p.countError(st, out); !closed {
		writeError(out, e)
	}
}

// countError counts one error in the current second and returns the count;
// past Config.ErrorFloodLimit it closes the connection (closed).
func (p *Protocol) countError(st *State, out Sink) (n int, closed bool) {
	st.window(uint32(time.Now().Unix()))
	st.errN++
	if int(st.errN) > p.cfg.ErrorFloodLimit {
		out.Disconnect(disconnect.New(disconnect.TooManyErrors))
		return int(st.errN), true
	}
	return int(st.errN), false
}

// errorReply is the `error` reply of e (wire-reference.md §3.5).
func errorReply(e *wire.Error) Reply {
	return Reply{Kind: KindError, Payload: wire.AppendError(nil, e), Err: e}
}
