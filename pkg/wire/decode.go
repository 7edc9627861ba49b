package wire

import "github.com/tinylib/msgp/msgp"

// Decode decodes one non-empty binary frame payload into c (wire-reference.md §1.3,
// §1.6, §2.1, §3.1). c is Reset first and given the defaults Echo true,
// QoS 1 and ProtocolVersion 1. Empty frames are heartbeats (§1.5) and are not
// passed to Decode; an empty b fails as truncated.
//
// Framing:
//   - b must be exactly one well-formed value (see Validate), and no
//     trailing bytes ("trailing bytes after the message"). Nesting has two
//     bounds: the value of a top-level `data` key may nest MaxDataDepth
//     levels counted from itself ("data nesting deeper than 128"), the rest
//     of the frame MaxDepth levels, the top-level map (or whatever value the
//     frame holds) being level 1 ("envelope nesting deeper than 32").
//     Failures are *DecodeError; their Type is the `type` of the map when it
//     could be read before the malformed part (best effort, so the error
//     frame can echo it, decisions.md OQ-46), else "".
//   - The value must be a map, else ErrNotMap (unwrapped).
//   - Every top-level key must be a str or bin, else *DecodeError
//     "map keys must be strings". Duplicate keys: the last one wins. Unknown
//     keys are skipped (wire-reference.md §2.1, §12.4).
//
// Fields (str and bin are accepted wherever a string is expected, §1.6):
//   - `type` must be a string when present ("type must be a string"); an
//     absent `type` leaves Type "" and is not an error.
//   - `topic`, `roomId`, `lobbyId`, `msgId` and `projectId` must be strings
//     when present and not nil; nil counts as absent. `loadBalanceGroup` must
//     be a string or nil (decisions.md OQ-35). `msgIds` must be an
//     array of strings. A violation is a *DecodeError with the Reason
//     "<type>: <field> must be a string" ("batchAck: msgIds must be an array
//     of strings") when the field belongs to the message type (topic:
//     subscribe, unsubscribe, setFilters, publish; roomId: presence,
//     getPresence; lobbyId: the three lobby types; msgId: ack; msgIds:
//     batchAck; projectId: auth; loadBalanceGroup: subscribe). In any other
//     message the ill-typed field is an ignored extra key (wire-reference.md §2.1,
//     §12.4) and its Has flag stays false.
//   - `token` may have any type (see Command.HasToken).
//   - `qos`, `echo`, `retain`, `loadBalance`, `reconnect`, `msgRef`, `filter`
//     and `protocolVersion` fall back silently to their defaults when
//     ill-typed (see Command).
//   - `filters` fills Filters for subscribe and setFilters, and PubFilters
//     for publish; other types ignore it.
//   - `data` may be any value; Data aliases b.
func Decode(b []byte, c *Command) error {
	c.resetWithDefaults()
	var f rawFields
	n, isMap, badKey, reason := f.scan(b)
	if reason != "" {
		return &DecodeError{Type: f.knownType(), Reason: reason}
	}
	if n != len(b) {
		return &DecodeError{Type: f.knownType(), Reason: reasonTrailing}
	}
	if !isMap {
		return ErrNotMap
	}
	kind := kindUnknown
	if f.typ != nil {
		s, _, ok := readStr(f.typ)
		if !ok {
			return &DecodeError{Reason: "type must be a string"}
		}
		c.Type, kind = lookupType(s)
	}
	if badKey {
		return &DecodeError{Type: c.Type, Reason: "map keys must be strings"}
	}
	return f.apply(c, kind)
}

// rawFields holds the raw msgpack value of each known key of a message; nil
// means the key is absent.
type rawFields struct {
	typ, token, reconnect, projectID, protocolVersion, clientID []byte
	topic, data, echo, qos, retain, filter, filters             []byte
	msgRef, loadBalance, loadBalanceGroup                       []byte
	roomID, lobbyID, msgID, msgIDs                              []byte
}

// scan validates the one value at the start of b, as Decode's framing rules
// say, and returns its length n. When it is a map (isMap), scan records the
// raw value of every known key in f, the last occurrence winning, and
// reports whether a key was not a str or bin. On failure reason is set and f
// holds the keys read before the malformed part.
func (f *rawFields) scan(b []byte) (n int, isMap, badKey bool, reason string) {
	size, items, container, reason := valueHead(b)
	if reason != "" {
		return 0, false, false, reason
	}
	if !container || !isMapHead(b[0]) {
		n, reason = validate(b, MaxDepth)
		return n, false, false, envelopeReason(reason)
	}
	// Every value takes at least one byte, so a count above the bytes left
	// is truncated whatever follows; the entries are still read as far as
	// they are well-formed, for the best-effort Type of the error.
	short := items > uint64(len(b)-size)
	pos := size
	for ; items > 0; items -= 2 {
		kn, reason := validate(b[pos:], MaxDepth-1)
		if reason != "" {
			return 0, true, badKey, scanFailure(reason, false, short)
		}
		key, _, isStr := readStr(b[pos : pos+kn])
		pos += kn
		isData := isStr && string(key) == "data"
		limit := MaxDepth - 1
		if isData {
			limit = MaxDataDepth
		}
		vn, reason := validate(b[pos:], limit)
		if reason != "" {
			return 0, true, badKey, scanFailure(reason, isData, short)
		}
		if isStr {
			f.set(key, b[pos:pos+vn])
		} else {
			badKey = true
		}
		pos += vn
	}
	return pos, true, badKey, ""
}

// scanFailure is the reason of scan for a top-level entry that validate
// refused with reason: nesting names the bound of `data` or of the envelope,
// and a map declaring more entries than it has bytes (short) is truncated.
func scanFailure(reason string, data, short bool) string {
	switch {
	case short:
		return reasonTruncated
	case reason == reasonTooDeep && data:
		return reasonDataTooDeep
	}
	return envelopeReason(reason)
}

// isMapHead reports whether lead is the first byte of a msgpack map.
func isMapHead(lead byte) bool {
	return lead&0xf0 == 0x80 || lead == 0xde || lead == 0xdf
}

// envelopeReason names the envelope bound in a nesting failure of validate.
func envelopeReason(reason string) string {
	if reason == reasonTooDeep {
		return reasonEnvelopeTooDeep
	}
	return reason
}

// set stores the raw value v of key.
func (f *rawFields) set(key, v []byte) {
	switch string(key) {
	case "type":
		f.typ = v
	case "token":
		f.token = v
	case "reconnect":
		f.reconnect = v
	case "clientId":
		f.clientID = v
	case "projectId":
		f.projectID = v
	case "protocolVersion":
		f.protocolVersion = v
	case "topic":
		f.topic = v
	case "data":
		f.data = v
	case "echo":
		f.echo = v
	case "qos":
		f.qos = v
	case "retain":
		f.retain = v
	case "filter":
		f.filter = v
	case "filters":
		f.filters = v
	case "msgRef":
		f.msgRef = v
	case "loadBalance":
		f.loadBalance = v
	case "loadBalanceGroup":
		f.loadBalanceGroup = v
	case "roomId":
		f.roomID = v
	case "lobbyId":
		f.lobbyID = v
	case "msgId":
		f.msgID = v
	case "msgIds":
		f.msgIDs = v
	}
}

// knownType returns the `type` recorded in f when it is a string, else "".
// It gives a *DecodeError for a malformed frame its Type.
func (f *rawFields) knownType() string {
	s, _, ok := readStr(f.typ)
	if !ok {
		return ""
	}
	typ, _ := lookupType(s)
	return typ
}

// skip returns the bytes after the value at the start of a validated b, or
// nil if b is not a value (which Validate has ruled out).
func skip(b []byte) []byte {
	rest, err := msgp.Skip(b)
	if err != nil {
		return nil
	}
	return rest
}

// readStr reads a str or bin at the start of b (wire-reference.md §1.6) and returns
// its bytes, aliasing b, and the bytes after it.
func readStr(b []byte) (s, rest []byte, ok bool) {
	var err error
	switch msgp.NextType(b) {
	case msgp.StrType:
		s, rest, err = msgp.ReadStringZC(b)
	case msgp.BinType:
		s, rest, err = msgp.ReadBytesZC(b)
	default:
		return nil, b, false
	}
	return s, rest, err == nil
}
