package broker

import (
	"errors"

	"github.com/tinylib/msgp/msgp"
)

// request holds the fields of a client frame the baseline understands.
type request struct {
	typ      string
	token    string
	hasToken bool
	topic    string
	hasTopic bool
	// data is the raw msgpack value of "data", passed through unchanged.
	data   []byte
	echo   bool
	msgRef string
}

var errNotMap = errors.New("frame is not a map")

// decodeRequest reads one msgpack map; unknown keys are skipped.
func decodeRequest(b []byte) (request, error) {
	req := request{echo: true}
	if msgp.NextType(b) != msgp.MapType {
		return req, errNotMap
	}
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return req, err
	}
	for i := uint32(0); i < n; i++ {
		var key []byte
		key, b, err = msgp.ReadMapKeyZC(b)
		if err != nil {
			return req, err
		}
		switch string(key) {
		case "type":
			req.typ, b, err = readString(b)
		case "token":
			req.token, b, err = readString(b)
			req.hasToken = err == nil
		case "topic":
			req.topic, b, err = readString(b)
			req.hasTopic = err == nil
		case "msgRef":
			req.msgRef, b, err = readString(b)
			if err != nil {
				req.msgRef, err = "", nil
				b, err = msgp.Skip(b)
			}
		case "echo":
			if msgp.NextType(b) == msgp.BoolType {
				var v bool
				v, b, err = msgp.ReadBoolBytes(b)
				req.echo = v
			} else {
				b, err = msgp.Skip(b)
			}
		case "data":
			rest, serr := msgp.Skip(b)
			if serr != nil {
				return req, serr
			}
			req.data = b[:len(b)-len(rest)]
			b = rest
		default:
			b, err = msgp.Skip(b)
		}
		if err != nil {
			return req, err
		}
	}
	return req, nil
}

// readString reads a str or bin value as a string.
func readString(b []byte) (string, []byte, error) {
	switch msgp.NextType(b) {
	case msgp.StrType:
		return msgp.ReadStringBytes(b)
	case msgp.BinType:
		v, rest, err := msgp.ReadBytesZC(b)
		return string(v), rest, err
	default:
		rest, err := msgp.Skip(b)
		if err != nil {
			return "", rest, err
		}
		return "", rest, msgp.TypeError{Method: msgp.StrType, Encoded: msgp.NextType(b)}
	}
}

func encodeAuthOK(token string) []byte {
	b := make([]byte, 0, 128+len(token))
	b = msgp.AppendMapHeader(b, 7)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "auth")
	b = msgp.AppendString(b, "success")
	b = msgp.AppendBool(b, true)
	b = msgp.AppendString(b, "actorTokenId")
	b = msgp.AppendString(b, token)
	b = msgp.AppendString(b, "projectId")
	b = msgp.AppendString(b, "bench")
	b = msgp.AppendString(b, "actorType")
	b = msgp.AppendString(b, "user")
	b = msgp.AppendString(b, "protocolVersion")
	b = msgp.AppendInt(b, 1)
	b = msgp.AppendString(b, "restoredSubscriptions")
	b = msgp.AppendArrayHeader(b, 0)
	return b
}

func encodeError(code string) []byte {
	b := make([]byte, 0, 32+len(code))
	b = msgp.AppendMapHeader(b, 2)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "error")
	b = msgp.AppendString(b, "error")
	b = msgp.AppendString(b, code)
	return b
}

func encodeSubscribed(topic string) []byte {
	b := make([]byte, 0, 48+len(topic))
	b = msgp.AppendMapHeader(b, 3)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "subscribed")
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, topic)
	b = msgp.AppendString(b, "loadBalance")
	b = msgp.AppendBool(b, false)
	return b
}

func encodeTopicReply(typ, topic string) []byte {
	b := make([]byte, 0, 32+len(typ)+len(topic))
	b = msgp.AppendMapHeader(b, 2)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, typ)
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, topic)
	return b
}

func encodePublished(topic, msgRef string) []byte {
	b := make([]byte, 0, 48+len(topic)+len(msgRef))
	b = msgp.AppendMapHeader(b, 3)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "published")
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, topic)
	b = msgp.AppendString(b, "msgRef")
	b = msgp.AppendString(b, msgRef)
	return b
}

// encodeMessage builds the delivery frame once; every subscriber gets the
// same bytes.
func encodeMessage(topic string, data []byte, msgID, from string, tsMillis int64) []byte {
	b := make([]byte, 0, 96+len(topic)+len(data)+len(msgID)+len(from))
	b = msgp.AppendMapHeader(b, 6)
	b = msgp.AppendString(b, "type")
	b = msgp.AppendString(b, "message")
	b = msgp.AppendString(b, "topic")
	b = msgp.AppendString(b, topic)
	b = msgp.AppendString(b, "data")
	b = append(b, data...)
	b = msgp.AppendString(b, "msgId")
	b = msgp.AppendString(b, msgID)
	b = msgp.AppendString(b, "from")
	b = msgp.AppendString(b, from)
	b = msgp.AppendString(b, "timestamp")
	b = msgp.AppendInt64(b, tsMillis)
	return b
}
