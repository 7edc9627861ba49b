package wire

import (
	"reflect"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// ParseMessage reads back every field AppendMessage writes, with the
// optional ones present and absent.
func TestParseMessageInvertsAppendMessage(t *testing.T) {
	data := msgp.AppendMapStrStr(nil, map[string]string{"text": "hello"})
	for _, m := range []Message{
		{Topic: "demo/general/messages", Data: data, From: "alice", FromType: "actor", Timestamp: 1764547200123},
		{Topic: "demo/+/messages", Data: data, MsgID: "m-1", Filter: "eu", From: "k1", FromType: "server",
			Timestamp: -5, SourceTopic: "demo/general/messages", IsReplay: true},
		{Topic: "t", Data: nil, From: "", FromType: "actor"},
	} {
		got, err := ParseMessage(AppendMessage(nil, &m))
		if err != nil {
			t.Fatalf("ParseMessage(%+v): %v", m, err)
		}
		want := m
		if want.Data == nil {
			want.Data = msgp.AppendNil(nil)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ParseMessage = %+v, want %+v", got, want)
		}
	}
}

// Anything but a message frame is refused with an error, never a panic.
func TestParseMessageRefusesOtherFrames(t *testing.T) {
	full := AppendMessage(nil, &Message{Topic: "a/b/c", Data: msgp.AppendInt(nil, 1), MsgID: "x"})
	bad := [][]byte{
		nil,
		{0xc0},
		msgp.AppendMapStrStr(nil, map[string]string{"type": "subscribed"}),
		msgp.AppendMapStrStr(nil, map[string]string{"topic": "a/b/c"}),
		append(msgp.AppendMapHeader(nil, 1), append(msgp.AppendString(nil, "topic"), msgp.AppendInt(nil, 3)...)...),
		full[:len(full)-3],
	}
	for _, b := range bad {
		if _, err := ParseMessage(b); err == nil {
			t.Errorf("ParseMessage(% x) = nil error", b)
		}
	}
}
