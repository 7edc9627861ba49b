package wire

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/bits"
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
// It is the conversion of decisions.md OQ-1 for the places that need
// JSON: the `data` of trigger webhook bodies (wire-reference.md §5.3) and the usage
// byte count, totalBytes being the length of this rendering
// (wire-reference.md §5.2, OQ-48; JSONLen computes that length without
// rendering). The raw msgpack that clients receive is never touched (D-4).
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
	out, _, err := renderJSON[appendJSONMode](dst, msgpackValue)
	if err != nil {
		return out[:len(dst)], err
	}
	return out, nil
}

// JSONLen returns the length in bytes of the compact JSON rendering of
// msgpackValue, len(AppendJSON(nil, msgpackValue)), and the error AppendJSON
// gives for the same input (a *DecodeError with the same Reason; the length
// is 0 then). It is the usage byte count of wire-reference.md §5.2 (OQ-48) for a
// caller that needs only the size: it walks the value as AppendJSON does,
// on the same fixed stack and without recursion, but counts instead of
// writing, so it never allocates (a float is formatted into a buffer on the
// stack to learn its length; every other length is computed). It is safe
// for concurrent use.
func JSONLen(msgpackValue []byte) (int, error) {
	_, n, err := renderJSON[measureJSONMode](nil, msgpackValue)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// jsonFrame is an open map or array during renderJSON.
type jsonFrame struct {
	// left is the number of values still to render, two per map entry: in a
	// map an even left means the next value is a key.
	left  uint64
	isMap bool
}

// jsonMode is what renderJSON does with the rendering: appendJSONMode
// appends it to out (AppendJSON), measureJSONMode only adds up its length
// (JSONLen). The two have distinct underlying types on purpose: generic
// code is compiled once per underlying type (GC shape), so each mode gets
// its own copy of renderJSON in which the mode is a constant and the code
// of the other mode is compiled away; the copy that appends is the walker
// AppendJSON had before JSONLen shared it, with no test of the mode.
type (
	appendJSONMode  uint8
	measureJSONMode uint16
	jsonMode        interface {
		appendJSONMode | measureJSONMode
	}
)

// renderJSON is the walker of AppendJSON and JSONLen: it walks b, which
// must hold exactly one MessagePack value, and in appendJSONMode appends
// its JSON rendering to out, in measureJSONMode leaves out alone and
// returns the length of the rendering in n. The errors are AppendJSON's; on
// failure out may hold part of the rendering.
func renderJSON[M jsonMode](out, b []byte) (_ []byte, n int, _ error) {
	measure := ^M(0) != 0xff // a constant in each copy: true for measureJSONMode
	var fixed [MaxDataDepth]jsonFrame
	stack := fixed[:0]
	pos := 0
	for {
		isKey := false
		if depth := len(stack); depth > 0 {
			isKey = stack[depth-1].isMap && stack[depth-1].left%2 == 0
		}
		size, items, container, reason := valueHead(b[pos:])
		if reason != "" {
			return out, n, &DecodeError{Reason: reason}
		}
		switch {
		case container && isKey:
			// The key is at level len(stack)+1.
			size, reason := validate(b[pos:], MaxDataDepth-len(stack))
			if reason != "" {
				if reason == reasonTooDeep {
					reason = reasonDataTooDeep
				}
				return out, n, &DecodeError{Reason: reason}
			}
			if measure {
				n += 2 + base64.StdEncoding.EncodedLen(size)
			} else {
				out = appendBase64String(out, b[pos:pos+size])
			}
			pos += size
		case container:
			if len(stack) == MaxDataDepth {
				return out, n, &DecodeError{Reason: reasonDataTooDeep}
			}
			isMap := isMapHead(b[pos])
			pos += size
			// Every value takes at least one byte.
			if items > uint64(len(b)-pos) {
				return out, n, &DecodeError{Reason: reasonTruncated}
			}
			open, closing := byte('['), byte(']')
			if isMap {
				open, closing = '{', '}'
			}
			if items > 0 {
				if measure {
					n++
				} else {
					out = append(out, open)
				}
				stack = append(stack, jsonFrame{left: items, isMap: isMap})
				continue
			}
			if measure {
				n += 2
			} else {
				out = append(out, open, closing)
			}
		default:
			v := b[pos : pos+size]
			if measure {
				vn, isString := jsonScalarLen(v)
				if isKey && !isString {
					vn += 2 // quoted, see below
				}
				n += vn
			} else {
				keyStart := len(out)
				out = appendJSONScalar(out, v)
				if isKey && out[keyStart] != '"' {
					// A number, bool or null: plain ASCII that needs no
					// escaping.
					out = append(out, 0)
					copy(out[keyStart+1:], out[keyStart:len(out)-1])
					out[keyStart] = '"'
					out = append(out, '"')
				}
			}
			pos += size
		}
		// One value is complete: write the separator that follows it, or
		// close every container it completes.
		for {
			if len(stack) == 0 {
				if pos != len(b) {
					return out, n, &DecodeError{Reason: reasonJSONTrailing}
				}
				return out, n, nil
			}
			top := &stack[len(stack)-1]
			top.left--
			if top.left > 0 {
				sep := byte(',')
				if top.isMap && top.left%2 == 1 {
					sep = ':'
				}
				if measure {
					n++
				} else {
					out = append(out, sep)
				}
				break
			}
			closing := byte(']')
			if top.isMap {
				closing = '}'
			}
			if measure {
				n++
			} else {
				out = append(out, closing)
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

// jsonScalarLen is len(appendJSONScalar(nil, v)), computed without
// rendering (a float excepted, formatted on the stack); isString reports
// whether the rendering is a JSON string (str, bin and ext values).
func jsonScalarLen(v []byte) (n int, isString bool) {
	lead := v[0]
	switch {
	case lead <= 0x7f: // positive fixint
		return decimalLen(uint64(lead)), false
	case lead >= 0xe0: // negative fixint
		return signedLen(int64(int8(lead))), false
	case lead >= 0xa0 && lead <= 0xbf: // fixstr
		return jsonStringLen(v[1:]), true
	}
	switch lead {
	case 0xc0:
		return len("null"), false
	case 0xc2:
		return len("false"), false
	case 0xc3:
		return len("true"), false
	case 0xc4: // bin8
		return jsonBinLen(v[2:]), true
	case 0xc5: // bin16
		return jsonBinLen(v[3:]), true
	case 0xc6: // bin32
		return jsonBinLen(v[5:]), true
	case 0xd9: // str8
		return jsonStringLen(v[2:]), true
	case 0xda: // str16
		return jsonStringLen(v[3:]), true
	case 0xdb: // str32
		return jsonStringLen(v[5:]), true
	case 0xc7: // ext8: length, type, payload
		return jsonExtLen(int8(v[2]), v[3:]), true
	case 0xc8: // ext16
		return jsonExtLen(int8(v[3]), v[4:]), true
	case 0xc9: // ext32
		return jsonExtLen(int8(v[5]), v[6:]), true
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16
		return jsonExtLen(int8(v[1]), v[2:]), true
	case 0xca:
		return jsonFloatLen(float64(math.Float32frombits(binary.BigEndian.Uint32(v[1:]))), 32), false
	case 0xcb:
		return jsonFloatLen(math.Float64frombits(binary.BigEndian.Uint64(v[1:])), 64), false
	case 0xcc:
		return decimalLen(uint64(v[1])), false
	case 0xcd:
		return decimalLen(uint64(binary.BigEndian.Uint16(v[1:]))), false
	case 0xce:
		return decimalLen(uint64(binary.BigEndian.Uint32(v[1:]))), false
	case 0xcf:
		return decimalLen(binary.BigEndian.Uint64(v[1:])), false
	case 0xd0:
		return signedLen(int64(int8(v[1]))), false
	case 0xd1:
		return signedLen(int64(int16(binary.BigEndian.Uint16(v[1:])))), false
	case 0xd2:
		return signedLen(int64(int32(binary.BigEndian.Uint32(v[1:])))), false
	default: // 0xd3 int64; valueHead admits nothing else here
		return signedLen(int64(binary.BigEndian.Uint64(v[1:]))), false
	}
}

// pow10 holds 10^i at index i, except 0 at index 0, for decimalLen.
var pow10 = [20]uint64{
	0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9,
	1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
}

// decimalLen is the number of decimal digits of u, 1 for 0.
func decimalLen(u uint64) int {
	// t = ⌊bitlen·log10(2)⌋ (1233/4096 is close enough to log10(2) for
	// every bit length up to 64), and a number of that bit length has t or
	// t+1 digits: t when it is below 10^t (pow10[0] is 0, so that 0 gets
	// one digit).
	t := bits.Len64(u) * 1233 >> 12
	if u < pow10[t] {
		return t
	}
	return t + 1
}

// signedLen is the length of the decimal rendering of v, its sign included.
func signedLen(v int64) int {
	if v < 0 {
		return 1 + decimalLen(uint64(-v)) // -MinInt64 wraps to its magnitude
	}
	return decimalLen(uint64(v))
}

// jsonStringLen is len(appendJSONString(nil, s)).
func jsonStringLen(s []byte) int {
	n := 2 + len(s) // the quotes and every byte written as itself
	for i := 0; i < len(s); {
		// Skip eight bytes at a time while none of them is escaped or
		// starts a multi-byte sequence: most text.
		for i+8 <= len(s) && !mayEscape(binary.LittleEndian.Uint64(s[i:])) {
			i += 8
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				switch c {
				case '"', '\\', '\n', '\r', '\t', '\b', '\f':
					n++ // a backslash and the character
				default:
					n += len(`\u0000`) - 1
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += len(`\ufffd`) - 1
		}
		i += size
	}
	return n
}

// Bytes of eight ones and of eight 0x80, for mayEscape.
const (
	eachByte1    = 0x0101010101010101
	eachByteHigh = 0x8080808080808080
)

// mayEscape reports whether any of the eight bytes in x is below 0x20, '"',
// '\\' or not ASCII: those appendJSONString escapes or decodes as UTF-8.
func mayEscape(x uint64) bool {
	// The classic SWAR tests: (v - k*eachByte1) &^ v has the high bit of a
	// byte set when that byte of v is below k (borrows only add false
	// positives above a true one), provided no byte of v has its high bit
	// set; x's own high bits are in the result, which is true then anyway.
	quote, backslash := x^('"'*eachByte1), x^('\\'*eachByte1)
	return ((x-0x20*eachByte1)&^x|
		(quote-eachByte1)&^quote|
		(backslash-eachByte1)&^backslash|
		x)&eachByteHigh != 0
}

// jsonBinLen is len(appendJSONBin(nil, p)).
func jsonBinLen(p []byte) int {
	if utf8.Valid(p) {
		return jsonStringLen(p)
	}
	return 2 + base64.StdEncoding.EncodedLen(len(p))
}

// jsonExtLen is len(appendJSONExt(nil, typ, p)).
func jsonExtLen(typ int8, p []byte) int {
	if typ == -1 {
		if _, nsec, ok := timestamp(p); ok {
			// "YYYY-MM-DDThh:mm:ssZ" (timestamp keeps the year to four
			// digits) and the quotes, plus '.' and the nanoseconds
			// without their trailing zeros when there are any.
			n := 2 + len("2006-01-02T15:04:05Z")
			if nsec != 0 {
				digits := 9
				for nsec%10 == 0 {
					nsec /= 10
					digits--
				}
				n += 1 + digits
			}
			return n
		}
	}
	return 2 + base64.StdEncoding.EncodedLen(len(p))
}

// jsonFloatLen is len(appendJSONFloat(nil, f, bitSize)). The longest rendering
// is 25 bytes, so the stack buffer never grows.
func jsonFloatLen(f float64, bitSize int) int {
	var tmp [32]byte
	return len(appendJSONFloat(tmp[:0], f, bitSize))
}
