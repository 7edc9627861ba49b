package wire

import "github.com/tinylib/msgp/msgp"

// Decode decodes one non-empty binary frame payload into c (protocol.md §1.3,
// §1.6, §2.1, §3.1). c is Reset first and given the defaults Echo true,
// QoS 1 and ProtocolVersion 1. Empty frames are heartbeats (§1.5) and are not
// passed to Decode; an empty b fails as truncated.
//
// Framing:
//   - b must be exactly one well-formed value: Validate(b, MaxDepth), and no
//     trailing bytes ("trailing bytes after the message"). Failures are
//     *DecodeError; their Type is the `type` of the map when it could be
//     read before the malformed part (best effort, so the error frame can
//     echo it, protocol-decisions.md OQ-46), else "".
//   - The value must be a map, else ErrNotMap (unwrapped).
//   - Every top-level key must be a str or bin, else *DecodeError
//     "map keys must be strings". Duplicate keys: the last one wins. Unknown
//     keys are skipped (protocol.md §2.1, §12.4).
//
// Fields (str and bin are accepted wherever a string is expected, §1.6):
//   - `type` must be a string when present ("type must be a string"); an
//     absent `type` leaves Type "" and is not an error.
//   - `topic`, `roomId`, `lobbyId`, `msgId` and `projectId` must be strings
//     when present and not nil; nil counts as absent. `loadBalanceGroup` must
//     be a string or nil (protocol-decisions.md OQ-35). `msgIds` must be an
//     array of strings. A violation is a *DecodeError with the Reason
//     "<type>: <field> must be a string" ("batchAck: msgIds must be an array
//     of strings") when the field belongs to the message type (topic:
//     subscribe, unsubscribe, setFilters, publish; roomId: presence,
//     getPresence; lobbyId: the three lobby types; msgId: ack; msgIds:
//     batchAck; projectId: auth; loadBalanceGroup: subscribe). In any other
//     message the ill-typed field is an ignored extra key (protocol.md §2.1,
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
	n, err := Validate(b, MaxDepth)
	if err != nil {
		return &DecodeError{Type: peekType(b), Reason: err.(*DecodeError).Reason}
	}
	if n != len(b) {
		return &DecodeError{Type: peekType(b[:n]), Reason: reasonTrailing}
	}
	if msgp.NextType(b) != msgp.MapType {
		return ErrNotMap
	}
	var f rawFields
	badKey := f.collect(b)
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
	typ, token, reconnect, projectID, protocolVersion []byte
	topic, data, echo, qos, retain, filter, filters   []byte
	msgRef, loadBalance, loadBalanceGroup             []byte
	roomID, lobbyID, msgID, msgIDs                    []byte
}

// collect records the raw value of every known key of the validated map b,
// the last occurrence winning. It reports whether a key was not a str or bin.
func (f *rawFields) collect(b []byte) (badKey bool) {
	sz, rest, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return false
	}
	for range sz {
		key, val, err := msgp.ReadMapKeyZC(rest)
		if err != nil {
			badKey = true
			val = skip(rest)
		}
		next := skip(val)
		if err == nil {
			f.set(key, val[:len(val)-len(next)])
		}
		rest = next
	}
	return badKey
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

// peekType returns the `type` string of the map at the start of b, reading
// entries only as far as they are well-formed, or "" when there is none.
// It gives a *DecodeError for a malformed frame its Type.
func peekType(b []byte) string {
	sz, rest, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return ""
	}
	typ := ""
	for range sz {
		key, val, keyErr := msgp.ReadMapKeyZC(rest)
		if keyErr != nil {
			n, err := Validate(rest, MaxDepth-1)
			if err != nil {
				return typ
			}
			val = rest[n:]
		}
		n, err := Validate(val, MaxDepth-1)
		if err != nil {
			return typ
		}
		if keyErr == nil && string(key) == "type" {
			typ = ""
			if s, _, ok := readStr(val); ok {
				typ, _ = lookupType(s)
			}
		}
		rest = val[n:]
	}
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

// readStr reads a str or bin at the start of b (protocol.md §1.6) and returns
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
