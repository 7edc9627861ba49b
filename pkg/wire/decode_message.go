package wire

import (
	"errors"
	"fmt"

	"github.com/tinylib/msgp/msgp"
)

// ParseMessage decodes a `message` frame's MessagePack payload, as
// AppendMessage writes it (wire-reference.md §3.2), into a Message: the
// inverse of AppendMessage, for frames kept and sent again (a durable
// history's entries, replayed to a resumed session). Data is the `data`
// value's raw MessagePack, a sub-slice of b (copy it to keep it past b);
// the strings are copies. requiresAck is implied by msgId; keys that
// AppendMessage never writes are skipped. It fails on anything but a map
// with type "message", or on a field of the wrong type.
func ParseMessage(b []byte) (Message, error) {
	var m Message
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return m, fmt.Errorf("wire: message: %w", err)
	}
	typed := false
	for range n {
		var key []byte
		if key, b, err = msgp.ReadMapKeyZC(b); err != nil {
			return m, fmt.Errorf("wire: message key: %w", err)
		}
		var s *string
		switch string(key) {
		case "type":
			var t []byte
			if t, b, err = msgp.ReadStringZC(b); err != nil {
				return m, fmt.Errorf("wire: message type: %w", err)
			}
			if string(t) != "message" {
				return m, fmt.Errorf("wire: frame of type %q, not message", t)
			}
			typed = true
			continue
		case "data":
			rest, err := msgp.Skip(b)
			if err != nil {
				return m, fmt.Errorf("wire: message data: %w", err)
			}
			m.Data = b[:len(b)-len(rest)]
			b = rest
			continue
		case "timestamp":
			if m.Timestamp, b, err = msgp.ReadInt64Bytes(b); err != nil {
				return m, fmt.Errorf("wire: message timestamp: %w", err)
			}
			continue
		case "isReplay":
			if m.IsReplay, b, err = msgp.ReadBoolBytes(b); err != nil {
				return m, fmt.Errorf("wire: message isReplay: %w", err)
			}
			continue
		case "topic":
			s = &m.Topic
		case "msgId":
			s = &m.MsgID
		case "filter":
			s = &m.Filter
		case "from":
			s = &m.From
		case "fromType":
			s = &m.FromType
		case "sourceTopic":
			s = &m.SourceTopic
		default: // requiresAck, and keys of later versions
			if b, err = msgp.Skip(b); err != nil {
				return m, fmt.Errorf("wire: message %s: %w", key, err)
			}
			continue
		}
		if *s, b, err = msgp.ReadStringBytes(b); err != nil {
			return m, fmt.Errorf("wire: message %s: %w", key, err)
		}
	}
	if !typed {
		return m, errors.New("wire: message frame without type")
	}
	return m, nil
}
