package server

import (
	"encoding/binary"
	"unicode/utf8"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// readFrame handles the frame at the start of b (RFC 6455 §5.2) and returns
// its length, or 0 when it is not complete yet (with its total length,
// reactor.Stream.SetNeed, once its header is complete). The declared length
// is checked against the frame cap before anything is buffered for it.
func (s *Server) readFrame(st *connState, b []byte) int {
	if len(b) < 2 {
		return 0
	}
	hlen := 2
	switch b[1] & 0x7f {
	case 126:
		hlen += 2
	case 127:
		hlen += 8
	}
	masked := b[1]&0x80 != 0
	if masked {
		hlen += 4
	}
	if len(b) < hlen {
		return 0
	}
	var length uint64
	switch b[1] & 0x7f {
	case 126:
		length = uint64(binary.BigEndian.Uint16(b[2:4]))
	case 127:
		length = binary.BigEndian.Uint64(b[2:10])
		if length>>63 != 0 {
			st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "invalid payload length"))
			return 0
		}
	default:
		length = uint64(b[1] & 0x7f)
	}
	fin := b[0]&0x80 != 0
	op := ws.OpCode(b[0] & 0x0f)
	switch {
	case b[0]&0x70 != 0:
		st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "reserved bits set"))
		return 0
	case !masked:
		st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "client frames must be masked"))
		return 0
	case op.IsReserved():
		st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "reserved opcode"))
		return 0
	case op.IsControl() && (!fin || length > 125):
		st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "invalid control frame"))
		return 0
	case length > uint64(s.cfg.MaxFrameSize):
		st.Disconnect(disconnect.WithText(disconnect.TooLarge, "frame too large"))
		return 0
	}
	total := hlen + int(length)
	if len(b) < total {
		st.SetNeed(total)
		return 0
	}
	var mask [4]byte
	copy(mask[:], b[hlen-4:hlen])
	payload := b[hlen:total]
	ws.Cipher(payload, mask, 0)
	s.onFrame(st, op, fin, payload)
	return total
}

// onFrame dispatches one complete, unmasked frame.
func (s *Server) onFrame(st *connState, op ws.OpCode, fin bool, payload []byte) {
	switch op {
	case ws.OpPing:
		st.write(wsframe.New(ws.OpPong, payload))
	case ws.OpPong:
	case ws.OpClose:
		s.onClose(st, payload)
	case ws.OpContinuation:
		if st.Message() == 0 {
			st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "continuation without a started message"))
			return
		}
		if st.frag == nil {
			st.frag = new([]byte) // not reached: a message begins with its buffer
		}
		if len(*st.frag)+len(payload) > s.cfg.MaxFrameSize {
			st.Disconnect(disconnect.WithText(disconnect.TooLarge, "message too large"))
			return
		}
		*st.frag = append(*st.frag, payload...)
		if fin {
			msgOp, msg := ws.OpCode(st.Message()), *st.frag
			st.frag = nil
			s.onMessage(st, msgOp, msg) // which ends the message (EndMessage)
		}
	default: // text or binary
		if st.Message() != 0 {
			st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "new message inside a fragmented message"))
			return
		}
		if !fin {
			st.BeginMessage(byte(op))
			frag := append(make([]byte, 0, min(2*len(payload)+64, s.cfg.MaxFrameSize)), payload...)
			st.frag = &frag
			return
		}
		s.onMessage(st, op, payload)
	}
}

// onClose answers a close frame (RFC 6455 §5.5.1) with the same code and
// closes. A malformed close payload is a protocol error; an invalid UTF-8
// reason is 1007.
func (s *Server) onClose(st *connState, p []byte) {
	d := disconnect.New(disconnect.ClientClosed)
	switch {
	case len(p) == 1:
		st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "close payload of one byte"))
		return
	case len(p) >= 2:
		d.Code = ws.StatusCode(binary.BigEndian.Uint16(p))
		if !utf8.Valid(p[2:]) {
			st.Disconnect(disconnect.WithText(disconnect.InvalidPayload, "close reason is not UTF-8"))
			return
		}
		if !validCloseCode(d.Code) {
			st.Disconnect(disconnect.WithText(disconnect.ProtocolError, "invalid close code"))
			return
		}
	}
	st.Disconnect(d)
}

// Disconnect implements session.Sink and reactor.Conn: it closes the
// connection for d from the reader, after the replies already owed to it
// (so they keep their order), with the close frame of d once upgraded, and
// ignores the rest of the input (reactor.Stream.CloseNow). The socket is
// released once the peer closes its side or the close deadline passes
// (see hub.Conn).
func (st *connState) Disconnect(d disconnect.Disconnect) {
	st.frag = nil
	st.CloseNow(st.Conn, d)
}

// validCloseCode reports whether a peer may send code in a close frame (RFC
// 6455 §7.4): the defined codes 1000–1003 and 1007–1011, the IANA-registered
// 1012–1014, and the application range 3000–4999. 1004–1006 and 1015 must
// never be sent, 1016–2999 are reserved, and anything from 5000 on is
// invalid.
func validCloseCode(code ws.StatusCode) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1014:
		return true
	default:
		return code >= 3000 && code <= 4999
	}
}
