package server

import (
	"sync"
	"unicode/utf8"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// emptyBinary is the heartbeat reply: an empty binary frame (wire-reference.md §1.5).
var emptyBinary = wsframe.Binary(nil)

var commandPool = sync.Pool{New: func() any { return new(wire.Command) }}

// onMessage decodes one complete data message (wire-reference.md §1.3) and hands
// the command to the session protocol; the connection is its sink. An
// empty binary message is the heartbeat, answered here once authenticated;
// a text message is JSON, converted to MessagePack first.
func (s *Server) onMessage(st *connState, op ws.OpCode, payload []byte) {
	if cc := st.carried(); cc != nil {
		s.onCarriedMessage(st, cc, op, payload)
		return
	}
	st.EndMessage()
	authed := st.Conn.Phase() == hub.PhaseAuthed
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
			st.Disconnect(disconnect.WithText(disconnect.InvalidPayload, "text frame is not UTF-8"))
			return
		}
		converted, cerr := wire.ConvertJSON(nil, payload)
		if cerr != nil {
			s.proto.Refuse(&st.State, st, &wire.Error{Err: wire.ErrInvalidJSON, Detail: errDetail(cerr)})
			return
		}
		err = wire.Decode(converted, cmd)
	} else {
		err = wire.Decode(payload, cmd)
	}
	switch {
	case err == wire.ErrNotMap:
		if !authed {
			s.proto.Refuse(&st.State, st, &wire.Error{Err: wire.ErrNotAuthenticated})
		}
		return
	case err != nil:
		s.proto.Refuse(&st.State, st, &wire.Error{Err: wire.ErrBadRequest, Detail: errDetail(err)})
		return
	}
	s.proto.Handle(&st.State, st, cmd)
}

func errDetail(err error) string {
	if de, ok := err.(*wire.DecodeError); ok {
		return de.Reason
	}
	return err.Error()
}
