package wire

import "github.com/tinylib/msgp/msgp"

// Message is one fan-out delivery (wire-reference.md §3.2; decisions.md
// D-2, D-4, OQ-3, OQ-36).
type Message struct {
	// Topic is the subscriber's display topic: its pattern exactly as it
	// subscribed (§6.1).
	Topic string
	// Data is the publisher's raw msgpack `data`, copied verbatim (D-4); nil
	// encodes msgpack nil.
	Data []byte
	// MsgID is the delivery record id; "" omits msgId and requiresAck (§6.4).
	MsgID string
	// Filter is the publish's filter value; "" omits the key (OQ-3).
	Filter string
	// From is the publisher's actorTokenId, or the key id for a server
	// publish; FromType is "actor" or "server" (OQ-36).
	From, FromType string
	// Timestamp is the publish time in milliseconds since the Unix epoch
	// (OQ-36).
	Timestamp int64
	// SourceTopic is the concrete topic of a delivery to a wildcard
	// subscription; "" omits the key (D-2).
	SourceTopic string
	// IsReplay marks a message replayed to a resumed session
	// (isReplay:true, decisions.md OQ-33); false omits the key.
	IsReplay bool
}

// AppendMessage appends {type:"message", topic, data, msgId?,
// requiresAck:true (only with msgId), filter?, from, fromType, timestamp,
// sourceTopic?} (wire-reference.md §3.2; decisions.md D-2, D-4, OQ-3,
// OQ-36). It does not allocate when b has enough spare capacity.
func AppendMessage(b []byte, m *Message) []byte {
	n := uint32(6)
	if m.MsgID != "" {
		n += 2
	}
	if m.Filter != "" {
		n++
	}
	if m.SourceTopic != "" {
		n++
	}
	if m.IsReplay {
		n++
	}
	b = msgp.AppendMapHeader(b, n)
	b = appendType(b, "message")
	b = appendStr(b, "topic", m.Topic)
	b = msgp.AppendString(b, "data")
	if m.Data == nil {
		b = msgp.AppendNil(b)
	} else {
		b = append(b, m.Data...)
	}
	if m.MsgID != "" {
		b = appendStr(b, "msgId", m.MsgID)
		b = msgp.AppendString(b, "requiresAck")
		b = msgp.AppendBool(b, true)
	}
	if m.Filter != "" {
		b = appendStr(b, "filter", m.Filter)
	}
	b = appendStr(b, "from", m.From)
	b = appendStr(b, "fromType", m.FromType)
	b = msgp.AppendString(b, "timestamp")
	b = appendInt(b, m.Timestamp)
	if m.SourceTopic != "" {
		b = appendStr(b, "sourceTopic", m.SourceTopic)
	}
	if m.IsReplay {
		b = msgp.AppendString(b, "isReplay")
		b = msgp.AppendBool(b, true)
	}
	return b
}

// Error is an error frame (wire-reference.md §3.4; decisions.md D-3,
// OQ-5, OQ-46). Zero-valued optional fields are omitted.
type Error struct {
	// Code is the numeric code (CodeX); 0 omits it.
	Code int
	// Err is the `error` string (ErrX), always sent.
	Err string
	// Topic is the client's pattern as sent, sent when HasTopic even if "".
	Topic    string
	HasTopic bool
	// Hint explains the error, e.g. HintUnknownTopic; "" omits it.
	Hint string
	// Detail is the reason of a bad_request or invalid_filter; "" omits it.
	Detail string
	// MsgRef echoes the publish's non-empty msgRef; "" omits it.
	MsgRef string
	// LobbyID is the lobby slug of a lobby error; "" omits it.
	LobbyID string
	// MaxSizeBytes is the data size limit of message_too_large; 0 omits it.
	MaxSizeBytes int
	// Limit is the publishes per second of rate_limit_exceeded; 0 omits it.
	Limit int
	// RetryAfterMs is how many milliseconds to wait before trying again, on
	// a refusal that passes with time (rate_limit_exceeded, the broker
	// busy); 0 omits it.
	RetryAfterMs int
}

// AppendError appends {type:"error", code?, error, topic?, hint?, detail?,
// msgRef?, lobbyId?, maxSizeBytes?, limit?, retryAfterMs?} (wire-reference.md
// §3.4; docs/protocol.md, "Refusals"). The strings that may repeat the
// client's input (topic, detail, msgRef, lobbyId) go out as Echo has them:
// valid UTF-8, at most MaxEcho bytes.
func AppendError(b []byte, e *Error) []byte {
	n := uint32(2)
	for _, set := range [...]bool{e.Code != 0, e.HasTopic, e.Hint != "", e.Detail != "",
		e.MsgRef != "", e.LobbyID != "", e.MaxSizeBytes != 0, e.Limit != 0, e.RetryAfterMs != 0} {
		if set {
			n++
		}
	}
	b = msgp.AppendMapHeader(b, n)
	b = appendType(b, "error")
	if e.Code != 0 {
		b = msgp.AppendString(b, "code")
		b = appendInt(b, int64(e.Code))
	}
	b = appendStr(b, "error", e.Err)
	if e.HasTopic {
		b = appendStr(b, "topic", Echo(e.Topic))
	}
	if e.Hint != "" {
		b = appendStr(b, "hint", e.Hint)
	}
	if e.Detail != "" {
		b = appendStr(b, "detail", Echo(e.Detail))
	}
	if e.MsgRef != "" {
		b = appendStr(b, "msgRef", Echo(e.MsgRef))
	}
	if e.LobbyID != "" {
		b = appendStr(b, "lobbyId", Echo(e.LobbyID))
	}
	if e.MaxSizeBytes != 0 {
		b = msgp.AppendString(b, "maxSizeBytes")
		b = appendInt(b, int64(e.MaxSizeBytes))
	}
	if e.Limit != 0 {
		b = msgp.AppendString(b, "limit")
		b = appendInt(b, int64(e.Limit))
	}
	if e.RetryAfterMs != 0 {
		b = msgp.AppendString(b, "retryAfterMs")
		b = appendInt(b, int64(e.RetryAfterMs))
	}
	return b
}
