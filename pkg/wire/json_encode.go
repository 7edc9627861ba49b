package wire

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// reasonJSONTrailing is the reason of AppendJSON for bytes after the value.
const reasonJSONTrailing = "trailing bytes after the value"

// Bounds of the seconds of a timestamp rendered as RFC 3339: the first
// instant of year 0000 and the last second of year 9999 (UTC).
const (
	minRFC3339Unix = -62167219200
	maxRFC3339Unix = 253402300799
)

// AppendJSON appends to dst the compact JSON rendering of msgpackValue, which
// must hold exactly one MessagePack value, and returns the extended slice.
// It is the conversion of protocol-decisions.md OQ-1 for the places that need
// JSON: the `data` of trigger webhook bodies (protocol.md §5.3) and the usage
// byte count, totalBytes being the length of this rendering
// (protocol.md §5.2, OQ-48). The raw msgpack that clients receive is never
// touched (D-4).
//
// Rendering, type by type:
//
//   - nil → null; true, false → true, false.
//   - Integers of every width → decimal (uint64 above 2^53 included, so a
//     JavaScript reader may round them).
//   - float32 and float64 → the shortest decimal that reads back as the
//     same float of that width, in the format of encoding/json (1e21 and
//     above, and below 1e-6, in exponent form; an integral float is written
//     without a fraction, 1.0 as 1). NaN, +Inf and −Inf have no JSON form and
//     are rendered as null.
//   - str → a JSON string. Invalid UTF-8 sequences become U+FFFD, as
//     encoding/json does; '"', '\\' and control characters are escaped,
//     nothing else (no HTML escaping).
//   - bin → a JSON string: the bytes themselves when they are valid UTF-8
//     (what v0.4.0 did, and what a publisher that sent text as bin
//     expects), else their base64 in the standard encoding with padding
//     (RFC 4648 §4). A reader cannot tell the two apart.
//   - ext −1 (the MessagePack timestamp: 4, 8 or 12 bytes; what a JavaScript
//     Date becomes) → an RFC 3339 string in UTC with the nanoseconds when
//     non-zero (time.RFC3339Nano), e.g. "2024-05-01T12:00:00.5Z". A
//     timestamp whose nanoseconds exceed 999999999, whose length is not 4, 8
//     or 12, or whose year is outside 0000–9999 is rendered like any other
//     ext.
//   - any other ext → a JSON string holding the base64 (standard encoding)
//     of the payload; the ext type number is not rendered.
//   - array → a JSON array; map → a JSON object with the entries in their
//     encoded order. Duplicate keys are kept as they come, so the object may
//     repeat a name (valid JSON; readers usually keep the last).
//   - map keys: JSON names are strings, so a key is rendered as its value
//     would be and then quoted when that is not already a string: 1 → "1",
//     -2 → "-2", 1.5 → "1.5", true → "true", nil → "null". str, bin and ext
//     keys render as strings already. A map or array used as a key (legal
//     MessagePack that no SDK produces) becomes the base64 of its raw
//     MessagePack encoding, so that a key never holds escaped JSON.
//
// Errors, each a *DecodeError with dst returned unchanged (len(dst) as it
// was): empty or truncated input, including a str, bin or ext length or a
// container count that exceeds the bytes left ("truncated msgpack value");
// the reserved byte 0xc1 ("reserved byte 0xc1"); maps and arrays nesting
// deeper than MaxDataDepth levels, counted as Validate counts them, a scalar
// being depth 0 ("data nesting deeper than 128"); bytes left after the value
// ("trailing bytes after the value"). Input that Decode accepted as `data`
// therefore never fails.
//
// AppendJSON does not recurse: open containers are kept on a fixed stack of
// MaxDataDepth entries. It allocates only to grow dst, so with enough spare
// capacity in dst it does not allocate. It is safe for concurrent use on
// distinct dst.
func AppendJSON(dst, msgpackValue []byte) ([]byte, error) {
	start := len(dst)
	out, err := appendMsgpackJSON(dst, msgpackValue)
	if err != nil {
		return out[:start], err
	}
	return out, nil
}

// jsonFrame is an open map or array during AppendJSON.
type jsonFrame struct {
	// left is the number of values still to render, two per map entry: in a
	// map an even left means the next value is a key.
	left  uint64
	isMap bool
}

// appendMsgpackJSON is AppendJSON without the reset of dst on failure.
func appendMsgpackJSON(out, b []byte) ([]byte, error) {
	var fixed [MaxDataDepth]jsonFrame
	stack := fixed[:0]
	pos := 0
	for {
		isKey := false
		if n := len(stack); n > 0 {
			isKey = stack[n-1].isMap && stack[n-1].left%2 == 0
		}
		size, items, container, reason := valueHead(b[pos:])
		if reason != "" {
			return out, &DecodeError{Reason: reason}
		}
		switch {
		case container && isKey:
			// The key is at level len(stack)+1.
			n, reason := validate(b[pos:], MaxDataDepth-len(stack))
			if reason != "" {
				if reason == reasonTooDeep {
					reason = reasonDataTooDeep
				}
				return out, &DecodeError{Reason: reason}
			}
			out = append(out, '"')
			out = base64.StdEncoding.AppendEncode(out, b[pos:pos+n])
			out = append(out, '"')
			pos += n
		case container:
			if len(stack) == MaxDataDepth {
				return out, &DecodeError{Reason: reasonDataTooDeep}
			}
			isMap := isMapHead(b[pos])
			pos += size
			// Every value takes at least one byte.
			if items > uint64(len(b)-pos) {
				return out, &DecodeError{Reason: reasonTruncated}
			}
			open, closing := byte('['), byte(']')
			if isMap {
				open, closing = '{', '}'
			}
			out = append(out, open)
			if items > 0 {
				stack = append(stack, jsonFrame{left: items, isMap: isMap})
				continue
			}
			out = append(out, closing)
		default:
			keyStart := len(out)
			out = appendJSONScalar(out, b[pos:pos+size])
			if isKey && out[keyStart] != '"' {
				// A number, bool or null: plain ASCII that needs no escaping.
				out = append(out, 0)
				copy(out[keyStart+1:], out[keyStart:len(out)-1])
				out[keyStart] = '"'
				out = append(out, '"')
			}
			pos += size
		}
		// One value is complete: write the separator that follows it, or
		// close every container it completes.
		for {
			if len(stack) == 0 {
				if pos != len(b) {
					return out, &DecodeError{Reason: reasonJSONTrailing}
				}
				return out, nil
			}
			top := &stack[len(stack)-1]
			top.left--
			if top.left > 0 {
				if top.isMap && top.left%2 == 1 {
					out = append(out, ':')
				} else {
					out = append(out, ',')
				}
				break
			}
			if top.isMap {
				out = append(out, '}')
			} else {
				out = append(out, ']')
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// appendJSONScalar renders v, exactly one encoded scalar, str, bin or ext
// whose size valueHead has checked.
func appendJSONScalar(out, v []byte) []byte {
	lead := v[0]
	switch {
	case lead <= 0x7f: // positive fixint
		return strconv.AppendUint(out, uint64(lead), 10)
	case lead >= 0xe0: // negative fixint
		return strconv.AppendInt(out, int64(int8(lead)), 10)
	case lead >= 0xa0 && lead <= 0xbf: // fixstr
		return appendJSONString(out, v[1:])
	}
	switch lead {
	case 0xc0:
		return append(out, "null"...)
	case 0xc2:
		return append(out, "false"...)
	case 0xc3:
		return append(out, "true"...)
	case 0xc4: // bin8
		return appendJSONBin(out, v[2:])
	case 0xc5: // bin16
		return appendJSONBin(out, v[3:])
	case 0xc6: // bin32
		return appendJSONBin(out, v[5:])
	case 0xd9: // str8
		return appendJSONString(out, v[2:])
	case 0xda: // str16
		return appendJSONString(out, v[3:])
	case 0xdb: // str32
		return appendJSONString(out, v[5:])
	case 0xc7: // ext8: length, type, payload
		return appendJSONExt(out, int8(v[2]), v[3:])
	case 0xc8: // ext16
		return appendJSONExt(out, int8(v[3]), v[4:])
	case 0xc9: // ext32
		return appendJSONExt(out, int8(v[5]), v[6:])
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16
		return appendJSONExt(out, int8(v[1]), v[2:])
	case 0xca:
		return appendJSONFloat(out, float64(math.Float32frombits(binary.BigEndian.Uint32(v[1:]))), 32)
	case 0xcb:
		return appendJSONFloat(out, math.Float64frombits(binary.BigEndian.Uint64(v[1:])), 64)
	case 0xcc:
		return strconv.AppendUint(out, uint64(v[1]), 10)
	case 0xcd:
		return strconv.AppendUint(out, uint64(binary.BigEndian.Uint16(v[1:])), 10)
	case 0xce:
		return strconv.AppendUint(out, uint64(binary.BigEndian.Uint32(v[1:])), 10)
	case 0xcf:
		return strconv.AppendUint(out, binary.BigEndian.Uint64(v[1:]), 10)
	case 0xd0:
		return strconv.AppendInt(out, int64(int8(v[1])), 10)
	case 0xd1:
		return strconv.AppendInt(out, int64(int16(binary.BigEndian.Uint16(v[1:]))), 10)
	case 0xd2:
		return strconv.AppendInt(out, int64(int32(binary.BigEndian.Uint32(v[1:]))), 10)
	default: // 0xd3 int64; valueHead admits nothing else here
		return strconv.AppendInt(out, int64(binary.BigEndian.Uint64(v[1:])), 10)
	}
}

// appendJSONString writes s as a JSON string: '"', '\\' and bytes below 0x20
// escaped, invalid UTF-8 replaced by \ufffd.
func appendJSONString(out, s []byte) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			out = append(out, s[start:i]...)
			switch c {
			case '"', '\\':
				out = append(out, '\\', c)
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			case '\b':
				out = append(out, '\\', 'b')
			case '\f':
				out = append(out, '\\', 'f')
			default:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			out = append(out, s[start:i]...)
			out = append(out, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += n
	}
	out = append(out, s[start:]...)
	return append(out, '"')
}

// appendJSONBin writes a bin payload: as a string when it is valid UTF-8,
// else as its standard base64.
func appendJSONBin(out, p []byte) []byte {
	if utf8.Valid(p) {
		return appendJSONString(out, p)
	}
	return appendBase64String(out, p)
}

// appendBase64String writes p as a JSON string of its standard base64.
func appendBase64String(out, p []byte) []byte {
	out = append(out, '"')
	out = base64.StdEncoding.AppendEncode(out, p)
	return append(out, '"')
}

// appendJSONExt writes an ext value: a valid timestamp (type −1) as an RFC
// 3339 string, anything else as the base64 of its payload.
func appendJSONExt(out []byte, typ int8, p []byte) []byte {
	if typ == -1 {
		if sec, nsec, ok := timestamp(p); ok {
			out = append(out, '"')
			out = time.Unix(sec, nsec).UTC().AppendFormat(out, time.RFC3339Nano)
			return append(out, '"')
		}
	}
	return appendBase64String(out, p)
}

// timestamp decodes the payload of a MessagePack timestamp (ext −1) in its
// 32, 64 or 96-bit form. ok is false for another length, nanoseconds above
// 999999999, or seconds outside the years 0000–9999.
func timestamp(p []byte) (sec, nsec int64, ok bool) {
	switch len(p) {
	case 4:
		sec = int64(binary.BigEndian.Uint32(p))
	case 8:
		v := binary.BigEndian.Uint64(p)
		nsec, sec = int64(v>>34), int64(v&(1<<34-1))
	case 12:
		nsec, sec = int64(binary.BigEndian.Uint32(p)), int64(binary.BigEndian.Uint64(p[4:]))
	default:
		return 0, 0, false
	}
	if nsec > 999_999_999 || sec < minRFC3339Unix || sec > maxRFC3339Unix {
		return 0, 0, false
	}
	return sec, nsec, true
}

// appendJSONFloat writes f, a float of the given bit size, as encoding/json
// does, or null for NaN and the infinities.
func appendJSONFloat(out []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(out, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
			bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	out = strconv.AppendFloat(out, f, format, -1, bits)
	if format == 'e' {
		// Shorten a two-digit negative exponent: 1e-07 → 1e-7.
		if n := len(out); n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}
