package client

import (
	"errors"

	"github.com/tinylib/msgp/msgp"
)

// inFrame is one decoded server-to-client frame (wire-reference.md §3.2). Fields
// of the wrong type are ignored rather than failing the frame.
type inFrame struct {
	typ                                 string
	topic                               string
	pattern                             string // hydration
	hasTopic                            bool
	data                                []byte // raw msgpack, aliasing the frame
	msgID, filter, from, fromType       string
	sourceTopic                         string
	requiresAck, isReplay               bool
	timestamp                           float64 // ms since the epoch
	hasTimestamp                        bool
	success, loadBalance                bool
	code, protocolVersion, maxSizeBytes int
	limit, retryAfterMs                 int
	errStr, hint, detail, msgRef        string
	actorTokenID, projectID, actorType  string
	restored                            []byte
	event, roomID, lobbyID, actorID     string
	hasRoomID                           bool
	presence                            []byte
	filters                             []byte
	reason                              string
	count, replayed                     int  // replayStart, replayEnd
	hasCount, complete, hasComplete     bool // replayStart, replayEnd
}

// parseFrame decodes a non-empty binary frame holding one msgpack map.
func parseFrame(b []byte) (*inFrame, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return nil, err
	}
	f := &inFrame{}
	for i := uint32(0); i < n; i++ {
		var key []byte
		key, b, err = msgp.ReadMapKeyZC(b)
		if err != nil {
			return nil, err
		}
		start := b
		if b, err = msgp.Skip(b); err != nil {
			return nil, err
		}
		v := start[:len(start)-len(b)]
		switch string(key) {
		case "type":
			f.typ, _ = str(v)
		case "topic":
			f.topic, f.hasTopic = str(v)
		case "pattern":
			f.pattern, _ = str(v)
		case "data":
			f.data = v
		case "msgId":
			f.msgID, _ = str(v)
		case "requiresAck":
			f.requiresAck = boolean(v)
		case "filter":
			f.filter, _ = str(v)
		case "from":
			f.from, _ = str(v)
		case "fromType":
			f.fromType, _ = str(v)
		case "timestamp":
			f.timestamp, f.hasTimestamp = number(v)
		case "isReplay":
			f.isReplay = boolean(v)
		case "sourceTopic":
			f.sourceTopic, _ = str(v)
		case "success":
			f.success = boolean(v)
		case "loadBalance":
			f.loadBalance = boolean(v)
		case "code":
			c, _ := number(v)
			f.code = int(c)
		case "protocolVersion":
			p, _ := number(v)
			f.protocolVersion = int(p)
		case "maxSizeBytes":
			m, _ := number(v)
			f.maxSizeBytes = int(m)
		case "limit":
			m, _ := number(v)
			f.limit = int(m)
		case "retryAfterMs":
			m, _ := number(v)
			f.retryAfterMs = int(m)
		case "error":
			f.errStr, _ = str(v)
		case "hint":
			f.hint, _ = str(v)
		case "detail":
			f.detail, _ = str(v)
		case "msgRef":
			f.msgRef, _ = str(v)
		case "actorTokenId":
			f.actorTokenID, _ = str(v)
		case "projectId":
			f.projectID, _ = str(v)
		case "actorType":
			f.actorType, _ = str(v)
		case "restoredSubscriptions":
			f.restored = v
		case "event":
			f.event, _ = str(v)
		case "roomId":
			f.roomID, f.hasRoomID = str(v)
		case "lobbyId":
			f.lobbyID, _ = str(v)
		case "actorId":
			f.actorID, _ = str(v)
		case "presence":
			f.presence = v
		case "filters":
			f.filters = v
		case "reason":
			f.reason, _ = str(v)
		case "count":
			n, ok := number(v)
			f.count, f.hasCount = int(n), ok
		case "replayed":
			n, _ := number(v)
			f.replayed = int(n)
		case "complete":
			f.complete, f.hasComplete = boolean(v), msgp.NextType(v) == msgp.BoolType
		}
	}
	if f.typ == "" {
		return nil, errors.New("frame without a type")
	}
	return f, nil
}

// str reads a str or bin value as a string.
func str(v []byte) (string, bool) {
	switch msgp.NextType(v) {
	case msgp.StrType:
		s, _, err := msgp.ReadStringBytes(v)
		return s, err == nil
	case msgp.BinType:
		s, _, err := msgp.ReadBytesZC(v)
		return string(s), err == nil
	}
	return "", false
}

func boolean(v []byte) bool {
	b, _, err := msgp.ReadBoolBytes(v)
	return err == nil && b
}

// number reads any msgpack int or float.
func number(v []byte) (float64, bool) {
	switch msgp.NextType(v) {
	case msgp.IntType:
		i, _, err := msgp.ReadInt64Bytes(v)
		return float64(i), err == nil
	case msgp.UintType:
		u, _, err := msgp.ReadUint64Bytes(v)
		return float64(u), err == nil
	case msgp.Float32Type, msgp.Float64Type:
		f, _, err := msgp.ReadFloat64Bytes(v)
		return f, err == nil
	}
	return 0, false
}

// mapEnc builds one outgoing msgpack map.
type mapEnc struct {
	body []byte
	n    uint32
}

func (e *mapEnc) str(k, v string) *mapEnc {
	e.body = msgp.AppendString(msgp.AppendString(e.body, k), v)
	e.n++
	return e
}

func (e *mapEnc) boolean(k string, v bool) *mapEnc {
	e.body = msgp.AppendBool(msgp.AppendString(e.body, k), v)
	e.n++
	return e
}

func (e *mapEnc) int(k string, v int) *mapEnc {
	e.body = msgp.AppendInt(msgp.AppendString(e.body, k), v)
	e.n++
	return e
}

func (e *mapEnc) raw(k string, v []byte) *mapEnc {
	e.body = append(msgp.AppendString(e.body, k), v...)
	e.n++
	return e
}

func (e *mapEnc) strs(k string, v []string) *mapEnc {
	e.body = msgp.AppendArrayHeader(msgp.AppendString(e.body, k), uint32(len(v)))
	for _, s := range v {
		e.body = msgp.AppendString(e.body, s)
	}
	e.n++
	return e
}

func (e *mapEnc) bytes() []byte {
	out := msgp.AppendMapHeader(make([]byte, 0, len(e.body)+5), e.n)
	return append(out, e.body...)
}

func newFrame(typ string) *mapEnc { return new(mapEnc).str("type", typ) }

// authFrame is {type:"auth", token, protocolVersion, reconnect?:true,
// projectId?, clientId?} (wire-reference.md §2; clientId: docs/protocol.md
// "Resumable sessions").
func authFrame(token, projectID, clientID string, version int, reconnect bool) []byte {
	e := newFrame("auth").str("token", token).int("protocolVersion", version)
	if reconnect {
		e.boolean("reconnect", true)
	}
	if projectID != "" {
		e.str("projectId", projectID)
	}
	if clientID != "" {
		e.str("clientId", clientID)
	}
	return e.bytes()
}

func subscribeFrame(topic string, o *subOptions) []byte {
	e := newFrame("subscribe").str("topic", topic).int("qos", o.qos)
	if o.loadBalance {
		e.boolean("loadBalance", true)
		if o.group != "" {
			e.str("loadBalanceGroup", o.group)
		}
	}
	if !o.filters.IsEmpty() {
		e.raw("filters", appendFilterSet(nil, o.filters))
	}
	return e.bytes()
}

// appendFilterSet encodes a FilterSet as the `filters` array of subscribe
// and setFilters: string items, then AND groups as arrays.
func appendFilterSet(b []byte, f FilterSet) []byte {
	b = msgp.AppendArrayHeader(b, uint32(len(f.Values)+len(f.Groups)))
	for _, v := range f.Values {
		b = msgp.AppendString(b, v)
	}
	for _, g := range f.Groups {
		b = msgp.AppendArrayHeader(b, uint32(len(g)))
		for _, v := range g {
			b = msgp.AppendString(b, v)
		}
	}
	return b
}

func publishFrame(topic string, data Data, o *pubOptions) []byte {
	e := newFrame("publish").str("topic", topic).raw("data", data).int("qos", o.qos).boolean("echo", !o.noEcho)
	if o.retain {
		e.boolean("retain", true)
	}
	switch {
	case o.filter != "":
		e.str("filter", o.filter)
	case len(o.composite) > 0:
		e.strs("filters", o.composite)
	}
	if o.msgRef != "" {
		e.str("msgRef", o.msgRef)
	}
	return e.bytes()
}
