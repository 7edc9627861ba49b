package server

import (
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gobwas/ws"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// emptyBinary is the heartbeat reply: an empty binary frame (protocol.md §1.5).
var emptyBinary = wsframe.Binary(nil)

var commandPool = sync.Pool{New: func() any { return new(wire.Command) }}

// onMessage handles one complete data message (protocol.md §1.3).
func (s *Server) onMessage(st *connState, op ws.OpCode, payload []byte) {
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
			s.closeProtocol(st, ws.StatusInvalidFramePayloadData, "text frame is not UTF-8")
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

// sendError writes an error frame unless the connection already got
// ErrorFrameLimit of them this second (OQ-67).
func (s *Server) sendError(st *connState, e *wire.Error) {
	sec := uint32(time.Now().Unix())
	if sec != st.errSec {
		st.errSec, st.errN = sec, 0
	}
	if int(st.errN) >= s.cfg.ErrorFrameLimit {
		return
	}
	st.errN++
	st.write(frame(wire.AppendError(nil, e)))
}

// frame wraps one msgpack payload in a binary frame.
func frame(payload []byte) []byte { return wsframe.Binary(payload) }
