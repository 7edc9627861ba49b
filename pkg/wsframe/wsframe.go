// Package wsframe builds the server side of RFC 6455 frames: unmasked, final,
// with the shortest length encoding (RFC 6455 §5.2). Every frame the broker
// writes is built here once and then shared, read-only, by every connection it
// is written to.
//
// The functions are pure and safe for concurrent use.
package wsframe

import (
	"encoding/binary"

	"github.com/gobwas/ws"
)

// MaxHeaderSize is the largest server frame header in bytes: 2 bytes plus an
// 8-byte extended length (RFC 6455 §5.2; servers never mask).
const MaxHeaderSize = 10

// HeaderSize returns the size in bytes of the header of an unmasked frame
// carrying n payload bytes.
func HeaderSize(n int) int {
	switch {
	case n < 126:
		return 2
	case n <= 0xffff:
		return 4
	default:
		return 10
	}
}

// Append appends one final, unmasked frame with the given opcode and payload
// to b and returns the extended slice.
func Append(b []byte, op ws.OpCode, payload []byte) []byte {
	b = appendHeader(b, op, len(payload))
	return append(b, payload...)
}

// New returns a new frame with the given opcode and payload.
func New(op ws.OpCode, payload []byte) []byte {
	return Append(make([]byte, 0, HeaderSize(len(payload))+len(payload)), op, payload)
}

// Binary returns a binary data frame (opcode 0x2) carrying payload.
func Binary(payload []byte) []byte { return New(ws.OpBinary, payload) }

// Close returns a close frame (opcode 0x8) with a status code and a reason
// (RFC 6455 §5.5.1). The reason is truncated to fit the 125-byte control
// frame limit.
func Close(code ws.StatusCode, reason string) []byte {
	if len(reason) > 123 {
		reason = reason[:123]
	}
	return New(ws.OpClose, ws.NewCloseFrameBody(code, reason))
}

// Framed encodes a payload with enc into a buffer that reserves room for the
// header in front, then writes the header right before the payload, so the
// payload is encoded once and never copied. enc must only append to its
// argument.
func Framed(op ws.OpCode, sizeHint int, enc func([]byte) []byte) []byte {
	buf := make([]byte, MaxHeaderSize, MaxHeaderSize+sizeHint)
	buf = enc(buf)
	n := len(buf) - MaxHeaderSize
	start := MaxHeaderSize - HeaderSize(n)
	appendHeader(buf[start:start], op, n)
	return buf[start:]
}

// AppendHeader appends the header of one final, unmasked frame with the
// given opcode carrying n payload bytes to b (HeaderSize(n) bytes), for a
// frame whose payload is built in parts (an MQTT QoS 1 PUBLISH over
// WebSocket: its header, then a Packet Identifier of each delivery, then
// its payload).
func AppendHeader(b []byte, op ws.OpCode, n int) []byte { return appendHeader(b, op, n) }

func appendHeader(b []byte, op ws.OpCode, n int) []byte {
	first := byte(0x80) | byte(op)
	switch {
	case n < 126:
		return append(b, first, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, first, 126), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, first, 127), uint64(n))
	}
}
