package wire

import (
	"encoding/binary"
	"strconv"
)

// MaxDepth is the nesting bound for the envelope of an inbound message: the
// top-level map and every value in it except `data` (the command fields,
// `filters`, `msgIds`, unknown keys...). The top-level map counts as level 1,
// so a field's value may nest MaxDepth-1 levels. A deeper frame is rejected by
// Decode and DecodeJSON with a *DecodeError whose Reason is "envelope nesting
// deeper than 32". The bound is checked iteratively, so hostile nesting cannot
// exhaust the stack (decisions.md D-4).
const MaxDepth = 32

// MaxDataDepth is the nesting bound for the value of the top-level `data` key
// (a publish or presence payload, passed through raw), counted in levels of
// maps and arrays from the `data` value itself: a scalar is depth 0, {"a":1}
// and [1] are depth 1, [[1]] depth 2, and the envelope around `data` does not
// count. Deeper `data` is rejected by Decode and DecodeJSON with a
// *DecodeError whose Reason is "data nesting deeper than 128". Like MaxDepth
// it is checked iteratively, with a stack of at most MaxDataDepth entries.
const MaxDataDepth = 128

// Reasons shared by Validate and Decode.
const (
	reasonTruncated = "truncated msgpack value"
	reasonReserved  = "reserved byte 0xc1"
	reasonTrailing  = "trailing bytes after the message"
	// reasonTooDeep is the internal result of validate for nesting past its
	// bound; callers replace it with the reason naming their bound.
	reasonTooDeep = "nesting too deep"
)

// The reasons of Decode and DecodeJSON for nesting past MaxDepth and
// MaxDataDepth.
var (
	reasonEnvelopeTooDeep = "envelope nesting deeper than " + strconv.Itoa(MaxDepth)
	reasonDataTooDeep     = "data nesting deeper than " + strconv.Itoa(MaxDataDepth)
)

// Validate walks exactly one msgpack value at the start of b and returns its
// length in bytes; bytes after that value are not looked at. It is the
// well-formedness check of decisions.md D-4 (`data` must be exactly
// one well-formed value) and wire-reference.md §1.3 (decode failures).
//
// It fails with a *DecodeError when:
//   - the value is truncated, including any declared str, bin or ext length
//     or any array or map count that exceeds the bytes left in b
//     ("truncated msgpack value");
//   - it meets the reserved byte 0xc1 ("reserved byte 0xc1");
//   - maps and arrays nest deeper than maxDepth levels, the outermost
//     container being level 1 ("nesting deeper than <maxDepth>"). With
//     maxDepth < 1 any map or array fails.
//
// Ext values of any type are well-formed and accepted (D-4 pass-through).
// Validate does not recurse and never allocates in proportion to a declared
// length: memory is bounded by the actual nesting, which maxDepth caps, and
// for maxDepth <= MaxDataDepth it does not allocate at all.
func Validate(b []byte, maxDepth int) (n int, err error) {
	n, reason := validate(b, maxDepth)
	if reason != "" {
		if reason == reasonTooDeep {
			reason = "nesting deeper than " + strconv.Itoa(maxDepth)
		}
		return 0, &DecodeError{Reason: reason}
	}
	return n, nil
}

// validate is Validate with the failure as a reason, reasonTooDeep for
// nesting past maxDepth. A scalar is measured without setting up a stack.
func validate(b []byte, maxDepth int) (n int, reason string) {
	size, items, container, reason := valueHead(b)
	if reason != "" || !container {
		return size, reason
	}
	if maxDepth < 1 {
		return 0, reasonTooDeep
	}
	// Every value takes at least one byte, so a count above the bytes left
	// can never be satisfied: fail before looping.
	if items > uint64(len(b)-size) {
		return 0, reasonTruncated
	}
	if items == 0 {
		return size, ""
	}
	// pending[i] is the number of values still to read in the i-th open
	// container; a map of k entries holds 2k values. The stack starts on
	// this small array and moves to a larger one (walkDeep) only for a value
	// nesting deeper than MaxDepth.
	var fixed [MaxDepth]uint64
	return walk(b, size, append(fixed[:0], items), maxDepth)
}

// walk continues validate at b[pos:] with the containers of pending open.
func walk(b []byte, pos int, pending []uint64, maxDepth int) (int, string) {
	for {
		size, items, container, reason := valueHead(b[pos:])
		if reason != "" {
			return 0, reason
		}
		pos += size
		if container {
			if len(pending) >= maxDepth {
				return 0, reasonTooDeep
			}
			if items > uint64(len(b)-pos) {
				return 0, reasonTruncated
			}
			if items > 0 {
				if len(pending) == MaxDepth && cap(pending) == MaxDepth {
					// validate's small stack is full and maxDepth allows more.
					return walkDeep(b, pos, pending, items, maxDepth)
				}
				pending = append(pending, items)
				continue
			}
		}
		// One value is complete: close every container it completes.
		for len(pending) > 0 {
			top := len(pending) - 1
			pending[top]--
			if pending[top] > 0 {
				break
			}
			pending = pending[:top]
		}
		if len(pending) == 0 {
			return pos, ""
		}
	}
}

// walkDeep moves the full stack pending of walk to one of MaxDataDepth
// entries, opens a container of items values on it and goes on walking. A
// bound above MaxDataDepth grows the stack further by append, in proportion
// to the actual nesting only.
func walkDeep(b []byte, pos int, pending []uint64, items uint64, maxDepth int) (int, string) {
	var deep [MaxDataDepth]uint64
	stack := append(append(deep[:0], pending...), items)
	return walk(b, pos, stack, maxDepth)
}

// valueHead inspects the value starting at b[0]. For a scalar, str, bin or
// ext it returns the whole encoded size; for a map or array it returns the
// header size and the number of contained values (twice the entry count for
// maps) with container set. reason is non-empty when b is malformed.
func valueHead(b []byte) (size int, items uint64, container bool, reason string) {
	if len(b) == 0 {
		return 0, 0, false, reasonTruncated
	}
	lead := b[0]
	switch {
	case lead <= 0x7f, lead >= 0xe0: // positive and negative fixint
		return 1, 0, false, ""
	case lead <= 0x8f: // fixmap
		return 1, 2 * uint64(lead&0x0f), true, ""
	case lead <= 0x9f: // fixarray
		return 1, uint64(lead & 0x0f), true, ""
	case lead <= 0xbf: // fixstr
		return sized(b, 1, uint64(lead&0x1f))
	}
	switch lead {
	case 0xc0, 0xc2, 0xc3: // nil, false, true
		return 1, 0, false, ""
	case 0xc1:
		return 0, 0, false, reasonReserved
	case 0xc4, 0xd9: // bin8, str8
		return lengthPrefixed(b, 1, 0)
	case 0xc5, 0xda: // bin16, str16
		return lengthPrefixed(b, 2, 0)
	case 0xc6, 0xdb: // bin32, str32
		return lengthPrefixed(b, 4, 0)
	case 0xc7: // ext8: length, type, payload
		return lengthPrefixed(b, 1, 1)
	case 0xc8: // ext16
		return lengthPrefixed(b, 2, 1)
	case 0xc9: // ext32
		return lengthPrefixed(b, 4, 1)
	case 0xcc, 0xd0: // uint8, int8
		return sized(b, 2, 0)
	case 0xcd, 0xd1: // uint16, int16
		return sized(b, 3, 0)
	case 0xca, 0xce, 0xd2: // float32, uint32, int32
		return sized(b, 5, 0)
	case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
		return sized(b, 9, 0)
	case 0xd4: // fixext1: type + 1 byte
		return sized(b, 3, 0)
	case 0xd5: // fixext2
		return sized(b, 4, 0)
	case 0xd6: // fixext4
		return sized(b, 6, 0)
	case 0xd7: // fixext8
		return sized(b, 10, 0)
	case 0xd8: // fixext16
		return sized(b, 18, 0)
	case 0xdc: // array16
		return countPrefixed(b, 2, 1)
	case 0xdd: // array32
		return countPrefixed(b, 4, 1)
	case 0xde: // map16
		return countPrefixed(b, 2, 2)
	default: // 0xdf map32
		return countPrefixed(b, 4, 2)
	}
}

// sized checks that b holds a header of hdr bytes followed by payload bytes.
func sized(b []byte, hdr int, payload uint64) (int, uint64, bool, string) {
	if uint64(len(b)) < uint64(hdr)+payload {
		return 0, 0, false, reasonTruncated
	}
	return hdr + int(payload), 0, false, ""
}

// lengthPrefixed reads a big-endian length of width bytes after the lead
// byte, then extra bytes (the ext type), then that many payload bytes.
func lengthPrefixed(b []byte, width, extra int) (int, uint64, bool, string) {
	hdr := 1 + width + extra
	if len(b) < hdr {
		return 0, 0, false, reasonTruncated
	}
	return sized(b, hdr, readUint(b[1:1+width]))
}

// countPrefixed reads a big-endian element count of width bytes after the
// lead byte; each element holds per values (2 for a map entry).
func countPrefixed(b []byte, width int, per uint64) (int, uint64, bool, string) {
	if len(b) < 1+width {
		return 0, 0, false, reasonTruncated
	}
	return 1 + width, per * readUint(b[1:1+width]), true, ""
}

// readUint decodes a 1, 2 or 4 byte big-endian unsigned integer.
func readUint(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	default:
		return uint64(binary.BigEndian.Uint32(b))
	}
}
