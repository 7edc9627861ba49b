package server

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// emptyBinary is the heartbeat reply: an empty binary frame (protocol.md §1.5).
var emptyBinary = wsframe.Binary(nil)

var commandPool = sync.Pool{New: func() any { return new(wire.Command) }}

// onMessage handles one complete data message (protocol.md §1.3).
func (s *Server) onMessage(st *connState, op ws.OpCode, payload []byte) {
	st.msgDone = true
	authed := st.c.Phase() == hub.PhaseAuthed
	if op == ws.OpBinary && len(payload) == 0 {
		if authed {
			st.write(emptyBinary)
		}
		return
	}
	cmd := commandPool.Get().(*wire.Command)
	defer func() { cmd.Reset(); commandPool.Put(cmd) }()
	var err error
	if op == ws.OpText {
		if !utf8.Valid(payload) {
			s.closeProtocol(st, disconnect.WithText(disconnect.InvalidPayload, "text frame is not UTF-8"))
			return
		}
		converted, cerr := wire.ConvertJSON(nil, payload)
		if cerr != nil {
			s.sendError(st, &wire.Error{Err: wire.ErrInvalidJSON, Detail: errDetail(cerr)})
			return
		}
		err = wire.Decode(converted, cmd)
	} else {
		err = wire.Decode(payload, cmd)
	}
	switch {
	case err == wire.ErrNotMap:
		if !authed {
			s.sendError(st, &wire.Error{Err: wire.ErrNotAuthenticated})
		}
		return
	case err != nil:
		s.sendError(st, &wire.Error{Err: wire.ErrBadRequest, Detail: errDetail(err)})
		return
	}
	if !authed {
		if cmd.Type == "auth" && cmd.HasToken {
			s.authenticate(st, cmd)
			return
		}
		s.sendError(st, &wire.Error{Err: wire.ErrNotAuthenticated})
		return
	}
	s.dispatch(st, cmd)
}

func errDetail(err error) string {
	if de, ok := err.(*wire.DecodeError); ok {
		return de.Reason
	}
	return err.Error()
}

// dispatch runs an authenticated command (protocol.md §3.1). Unknown types
// are ignored for forward compatibility (OQ-46).
func (s *Server) dispatch(st *connState, cmd *wire.Command) {
	switch cmd.Type {
	case "auth":
		st.write(frame(wire.AppendAuthFailed(nil, wire.ErrAlreadyAuthenticated)))
	case "subscribe":
		s.subscribe(st, cmd)
	case "unsubscribe":
		s.unsubscribe(st, cmd)
	case "setFilters":
		s.setFilters(st, cmd)
	case "publish":
		s.publish(st, cmd)
	case "presence":
		s.presenceSet(st, cmd)
	case "getPresence":
		s.getPresence(st, cmd)
	case "lobbySubscribe", "lobbyUnsubscribe", "getLobbyPresence":
		s.lobby(st, cmd)
	case "ack":
		if !cmd.HasMsgID {
			s.badRequest(st, "ack requires msgId")
			return
		}
		s.ack(st, cmd.MsgID)
	case "batchAck":
		if !cmd.HasMsgIDs {
			s.badRequest(st, "batchAck requires msgIds")
			return
		}
		s.ack(st, cmd.MsgIDs...)
	default:
		if ce := s.log.Check(zap.DebugLevel, "ignored message type"); ce != nil {
			ce.Write(zap.Uint64("conn_id", st.c.ID), zap.String("type", cmd.Type))
		}
	}
}

func (s *Server) badRequest(st *connState, detail string) {
	s.sendError(st, &wire.Error{Err: wire.ErrBadRequest, Detail: detail})
}

// sendError writes an error frame that answers nothing a client waits for
// (no msgRef, no request that waits on its topic: a frame that is not a
// command, a command before auth, a publish without msgRef), unless the
// connection already got Config.ErrorFrameLimit error frames this second
// (OQ-67, amended): a client flooding bad frames gets a bounded stream of
// errors back.
func (s *Server) sendError(st *connState, e *wire.Error) {
	if s.countError(st) <= s.cfg.ErrorFrameLimit {
		st.write(frame(wire.AppendError(nil, e)))
	}
}

// answerError writes an error frame that answers a request (a publish with
// msgRef, a subscribe, unsubscribe or setFilters, a presence or lobby
// request): it is never dropped, because the SDKs wait for it (OQ-67,
// amended). A connection that provokes more than Config.ErrorFloodLimit
// error frames in one second is closed with 1008 too_many_errors instead of
// being answered further.
func (s *Server) answerError(st *connState, e *wire.Error) {
	s.countError(st)
	if !st.closing {
		st.write(frame(wire.AppendError(nil, e)))
	}
}

// countError counts one error frame in the current second and returns the
// count; past Config.ErrorFloodLimit it closes the connection.
func (s *Server) countError(st *connState) int {
	st.window(uint32(time.Now().Unix()))
	st.errN++
	if int(st.errN) > s.cfg.ErrorFloodLimit {
		s.closeProtocol(st, disconnect.New(disconnect.TooManyErrors))
	}
	return int(st.errN)
}

// frame wraps one msgpack payload in a binary frame.
func frame(payload []byte) []byte { return wsframe.Binary(payload) }
