package packet

import (
	"bytes"
	"unicode/utf8"
)

// reader walks the fields of a packet body (MQTT 3.1.1 §1.5). Every method
// returns ErrTruncated when the field runs past the body.
type reader struct {
	b   []byte
	off int
}

// more reports whether bytes are left.
func (r *reader) more() bool { return r.off < len(r.b) }

// rest returns the bytes left, with a capacity ending at the body's end.
func (r *reader) rest() []byte { return r.b[r.off:len(r.b):len(r.b)] }

// byte reads one byte.
func (r *reader) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, ErrTruncated
	}
	r.off++
	return r.b[r.off-1], nil
}

// uint16 reads a big-endian two-byte integer (§1.5.2).
func (r *reader) uint16() (uint16, error) {
	if len(r.b)-r.off < 2 {
		return 0, ErrTruncated
	}
	v := uint16(r.b[r.off])<<8 | uint16(r.b[r.off+1])
	r.off += 2
	return v, nil
}

// packetID reads a Packet Identifier, which must not be 0 [MQTT-2.3.1-1].
func (r *reader) packetID() (uint16, error) {
	id, err := r.uint16()
	if err == nil && id == 0 {
		err = ErrPacketIDZero
	}
	return id, err
}

// binary reads a two-byte length and that many bytes (§1.5.3, §3.1.3.3,
// §3.1.3.5). The result aliases the body, capacity included.
func (r *reader) binary() ([]byte, error) {
	n, err := r.uint16()
	if err != nil {
		return nil, err
	}
	if len(r.b)-r.off < int(n) {
		return nil, ErrTruncated
	}
	end := r.off + int(n)
	v := r.b[r.off:end:end]
	r.off = end
	return v, nil
}

// str reads a UTF-8 encoded string (§1.5.3): a binary field that must be
// well-formed UTF-8 [MQTT-1.5.3-1] without U+0000 [MQTT-1.5.3-2]. The
// code points the spec only discourages (U+0001..U+001F, U+007F..U+009F,
// non-characters) are accepted, and a BOM is kept as it is [MQTT-1.5.3-3].
func (r *reader) str() ([]byte, error) {
	v, err := r.binary()
	if err != nil {
		return nil, err
	}
	if !utf8.Valid(v) {
		return nil, ErrInvalidUTF8
	}
	if bytes.IndexByte(v, 0) >= 0 {
		return nil, ErrNullChar
	}
	return v, nil
}

// checkTopicName checks the rules of a topic name, for PUBLISH and will
// topics, beyond those of a UTF-8 string: non-empty [MQTT-4.7.3-1], without
// '+' or '#' [MQTT-3.3.2-2], [MQTT-4.7.1-1]. '$' is not special here.
func checkTopicName[T string | []byte](t T) error {
	if len(t) == 0 {
		return ErrEmptyTopic
	}
	for i := 0; i < len(t); i++ {
		if t[i] == '+' || t[i] == '#' {
			return ErrWildcardTopic
		}
	}
	return nil
}

// checkTopicFilter checks the rules of a topic filter beyond those of a
// UTF-8 string (§4.7.1): non-empty [MQTT-4.7.3-1]; '#' only as a whole,
// last level [MQTT-4.7.1-2]; '+' only as a whole level [MQTT-4.7.1-3].
// Scanning left to right, the first misplaced wildcard decides the error.
func checkTopicFilter(f []byte) error {
	if len(f) == 0 {
		return ErrEmptyTopic
	}
	for i, c := range f {
		if c != '+' && c != '#' {
			continue
		}
		wholeStart := i == 0 || f[i-1] == '/'
		if c == '#' {
			if !wholeStart || i != len(f)-1 {
				return ErrMultiLevelWildcard
			}
			continue
		}
		if !wholeStart || (i != len(f)-1 && f[i+1] != '/') {
			return ErrSingleLevelWildcard
		}
	}
	return nil
}
