package wire

import (
	"testing"

	"github.com/tinylib/msgp/msgp"
)

func decodeAny(t *testing.T, b []byte) map[string]any {
	t.Helper()
	v, rest, err := msgp.ReadIntfBytes(b)
	if err != nil || len(rest) != 0 {
		t.Fatalf("decode %x: %v (%d left)", b, err, len(rest))
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("decode %x: %T", b, v)
	}
	return m
}

func TestReplayFrames(t *testing.T) {
	if m := decodeAny(t, AppendReplayStart(nil, 50)); m["type"] != "replayStart" || m["count"] != int64(50) || len(m) != 2 {
		t.Fatalf("replayStart = %v", m)
	}
	m := decodeAny(t, AppendReplayEnd(nil, &ReplayEnd{Replayed: 50, Complete: true}))
	if m["type"] != "replayEnd" || m["replayed"] != int64(50) || m["count"] != int64(50) || m["complete"] != true || len(m) != 4 {
		t.Fatalf("replayEnd = %v", m)
	}
	m = decodeAny(t, AppendReplayEnd(nil, &ReplayEnd{Reason: "session_expired"}))
	if m["complete"] != false || m["reason"] != "session_expired" || m["replayed"] != int64(0) || m["lost"] != nil {
		t.Fatalf("replayEnd = %v", m)
	}
	m = decodeAny(t, AppendReplayEnd(nil, &ReplayEnd{Replayed: 3, Reason: "backlog_limit", Lost: 7}))
	if m["complete"] != false || m["reason"] != "backlog_limit" || m["lost"] != int64(7) || len(m) != 6 {
		t.Fatalf("replayEnd with a counted loss = %v", m)
	}
	msg := sampleMessage()
	msg.IsReplay = true
	if m := decodeAny(t, AppendMessage(nil, msg)); m["isReplay"] != true || m["msgId"] != msg.MsgID {
		t.Fatalf("replayed message = %v", m)
	}
	if m := decodeAny(t, AppendMessage(nil, sampleMessage())); m["isReplay"] != nil {
		t.Fatalf("live message has isReplay: %v", m)
	}
}

func TestAuthClientID(t *testing.T) {
	var c Command
	if err := Decode(enc(kv{"type", "auth", "token", "t", "clientId", "phone-1"}), &c); err != nil || c.ClientID != "phone-1" {
		t.Fatalf("clientId = %q, %v", c.ClientID, err)
	}
	if err := Decode(enc(kv{"type", "auth", "token", "t", "clientId", 7}), &c); err != nil || c.ClientID != "" {
		t.Fatalf("a non-string clientId: %q, %v", c.ClientID, err)
	}
	if err := Decode(enc(kv{"type", "subscribe", "topic", "x", "clientId", "a"}), &c); err != nil || c.ClientID != "" {
		t.Fatalf("clientId outside auth: %q, %v", c.ClientID, err)
	}
}
