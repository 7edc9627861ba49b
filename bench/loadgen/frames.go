package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"
)

// maskKey masks every client frame. RFC 6455 asks clients to mask; a fixed
// key lets frames be built once.
var maskKey = [4]byte{0x5a, 0x1c, 0xe3, 0x97}

// maxFrame bounds a server frame the reader accepts.
const maxFrame = 16 << 20

// clientFrame returns a complete masked binary frame carrying payload.
func clientFrame(payload []byte) []byte {
	var buf bytes.Buffer
	_ = ws.WriteHeader(&buf, ws.Header{Fin: true, OpCode: ws.OpBinary, Masked: true, Mask: maskKey, Length: int64(len(payload))})
	start := buf.Len()
	buf.Write(payload)
	b := buf.Bytes()
	ws.Cipher(b[start:], maskKey, 0)
	return b
}

// heartbeatFrame is the empty binary frame clients send every 30 s.
var heartbeatFrame = clientFrame(nil)

func authPayload(token string) []byte {
	b := msgp.AppendMapHeader(nil, 2)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "auth")
	b = msgp.AppendString(b, "token")
	return msgp.AppendString(b, token)
}

// resumeAuthPayload is an auth frame with a clientId (the session's
// identity with the actor, for resumable sessions) and, for a reconnect,
// reconnect:true.
func resumeAuthPayload(token, clientID string, reconnect bool) []byte {
	n := uint32(3)
	if reconnect {
		n++
	}
	b := msgp.AppendMapHeader(nil, n)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "auth")
	b = msgp.AppendString(b, "token")
	b = msgp.AppendString(b, token)
	b = msgp.AppendString(b, "clientId")
	b = msgp.AppendString(b, clientID)
	if reconnect {
		b = msgp.AppendString(b, "reconnect")
		b = msgp.AppendBool(b, true)
	}
	return b
}

// subscribeQoSPayload is a subscribe frame with a qos.
func subscribeQoSPayload(topic string, qos int) []byte {
	b := msgp.AppendMapHeader(nil, 3)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "subscribe")
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, topic)
	b = msgp.AppendString(b, "qos")
	return msgp.AppendInt(b, qos)
}

func subscribePayload(topic string) []byte {
	b := msgp.AppendMapHeader(nil, 2)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "subscribe")
	b = msgp.AppendString(b, "topic")
	return msgp.AppendString(b, topic)
}

// Stamped payloads: "T" + 19 digits of unix ns + "S" + 10 digits of
// sequence number, padded with 'x' to the requested size.
const (
	stampLen = 1 + 19 + 1 + 10
	tsOff    = 1
	seqOff   = 21
)

// pubTemplate is a publish frame built once; send stamps time and
// sequence into a copy and masks it.
type pubTemplate struct {
	header  []byte // frame header including the mask key
	payload []byte // unmasked msgpack payload
	dataOff int    // offset of the stamped string inside payload
}

func newPubTemplate(topic string, size int) *pubTemplate {
	if size < stampLen {
		size = stampLen
	}
	data := bytes.Repeat([]byte{'x'}, size)
	copy(data, "T0000000000000000000S0000000000")
	p := msgp.AppendMapHeader(nil, 4)
	p = msgp.AppendString(p, "type")
	p = msgp.AppendString(p, "publish")
	p = msgp.AppendString(p, "topic")
	p = msgp.AppendString(p, topic)
	p = msgp.AppendString(p, "echo")
	p = msgp.AppendBool(p, false)
	p = msgp.AppendString(p, "data")
	p = msgp.AppendStringFromBytes(p, data)
	off := len(p) - len(data)
	var hb bytes.Buffer
	_ = ws.WriteHeader(&hb, ws.Header{Fin: true, OpCode: ws.OpBinary, Masked: true, Mask: maskKey, Length: int64(len(p))})
	return &pubTemplate{header: hb.Bytes(), payload: p, dataOff: off}
}

// appendFrame appends a stamped, masked frame to dst.
func (t *pubTemplate) appendFrame(dst []byte, tsNanos int64, seq int64) []byte {
	dst = append(dst, t.header...)
	start := len(dst)
	dst = append(dst, t.payload...)
	d := dst[start+t.dataOff:]
	putDigits(d[tsOff:tsOff+19], uint64(tsNanos))
	putDigits(d[seqOff:seqOff+10], uint64(seq))
	ws.Cipher(dst[start:], maskKey, 0)
	return dst
}

func putDigits(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

func parseDigits(b []byte) (int64, bool) {
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseStamp reads the time and sequence stamped by pubTemplate.
func parseStamp(data []byte) (ts, seq int64, ok bool) {
	if len(data) < stampLen || data[0] != 'T' || data[seqOff-1] != 'S' {
		return 0, 0, false
	}
	ts, ok1 := parseDigits(data[tsOff : tsOff+19])
	seq, ok2 := parseDigits(data[seqOff : seqOff+10])
	return ts, seq, ok1 && ok2
}

var (
	errFragmented = errors.New("fragmented frame")
	errTooLarge   = errors.New("frame too large")
)

// Opcodes used by the reader.
const (
	opText   = 0x1
	opBinary = 0x2
	opClose  = 0x8
)

// parseFrame parses one frame at the start of b. It returns n = 0 when b
// does not hold a whole frame yet. Masked payloads are unmasked in place.
func parseFrame(b []byte) (op byte, payload []byte, n int, err error) {
	if len(b) < 2 {
		return 0, nil, 0, nil
	}
	fin := b[0]&0x80 != 0
	op = b[0] & 0x0f
	masked := b[1]&0x80 != 0
	l := uint64(b[1] & 0x7f)
	h := 2
	switch l {
	case 126:
		if len(b) < 4 {
			return 0, nil, 0, nil
		}
		l = uint64(binary.BigEndian.Uint16(b[2:4]))
		h = 4
	case 127:
		if len(b) < 10 {
			return 0, nil, 0, nil
		}
		l = binary.BigEndian.Uint64(b[2:10])
		h = 10
	}
	if l > maxFrame {
		return 0, nil, 0, errTooLarge
	}
	var mask [4]byte
	if masked {
		if len(b) < h+4 {
			return 0, nil, 0, nil
		}
		copy(mask[:], b[h:h+4])
		h += 4
	}
	total := h + int(l)
	if len(b) < total {
		return 0, nil, 0, nil
	}
	if !fin || op == 0 {
		return 0, nil, 0, errFragmented
	}
	payload = b[h:total]
	if masked {
		ws.Cipher(payload, mask, 0)
	}
	return op, payload, total, nil
}

// frameNeed returns the total size of the frame starting at b, or 0 if the
// header is incomplete.
func frameNeed(b []byte) int {
	if len(b) < 2 {
		return 0
	}
	l := uint64(b[1] & 0x7f)
	h := 2
	switch l {
	case 126:
		if len(b) < 4 {
			return 0
		}
		l = uint64(binary.BigEndian.Uint16(b[2:4]))
		h = 4
	case 127:
		if len(b) < 10 {
			return 0
		}
		l = binary.BigEndian.Uint64(b[2:10])
		h = 10
	}
	if b[1]&0x80 != 0 {
		h += 4
	}
	if l > maxFrame {
		return maxFrame
	}
	return h + int(l)
}

// serverMsg holds the fields of a server frame the load generator reads.
// Byte slices alias the frame.
type serverMsg struct {
	typ     []byte
	topic   []byte
	data    []byte
	errCode []byte
	success bool
}

// scanServerMsg reads the top-level map of a server frame.
func scanServerMsg(p []byte) (serverMsg, error) {
	var m serverMsg
	n, b, err := msgp.ReadMapHeaderBytes(p)
	if err != nil {
		return m, err
	}
	for i := uint32(0); i < n; i++ {
		var key []byte
		key, b, err = msgp.ReadMapKeyZC(b)
		if err != nil {
			return m, err
		}
		switch string(key) {
		case "type":
			m.typ, b, err = readStrZC(b)
		case "topic":
			m.topic, b, err = readStrZC(b)
		case "data":
			m.data, b, err = readStrZC(b)
		case "error":
			m.errCode, b, err = readStrZC(b)
		case "success":
			if msgp.NextType(b) == msgp.BoolType {
				m.success, b, err = msgp.ReadBoolBytes(b)
			} else {
				b, err = msgp.Skip(b)
			}
		default:
			b, err = msgp.Skip(b)
		}
		if err != nil {
			return m, fmt.Errorf("key %q: %w", key, err)
		}
	}
	return m, nil
}

// readStrZC reads a str or bin value; any other type is skipped and
// returns nil.
func readStrZC(b []byte) ([]byte, []byte, error) {
	switch msgp.NextType(b) {
	case msgp.StrType:
		return msgp.ReadStringZC(b)
	case msgp.BinType:
		return msgp.ReadBytesZC(b)
	default:
		rest, err := msgp.Skip(b)
		return nil, rest, err
	}
}
