package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// RFC 6455 framing and the frame kinds of wire-reference.md §1.3
// (decisions.md D-5, OQ-44, OQ-45).

func TestPingIsAnsweredWithPongOfTheSamePayload(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	expectPong(t, p) // before auth
	p.Auth("dev-token-alice")
	p.SendFrame(ws.NewPingFrame(nil))
	if f := p.Expect(); f.OpCode != ws.OpPong || len(f.Payload) != 0 {
		t.Fatalf("reply to an empty ping = %s, want an empty pong", f)
	}
}

func TestUnsolicitedPongIsIgnored(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewPongFrame([]byte("unsolicited")))
	expectPong(t, p)
}

func TestCloseIsEchoedWithTheSameCode(t *testing.T) {
	for _, tt := range []struct {
		name   string
		code   ws.StatusCode
		reason string
	}{
		{name: "normal", code: ws.StatusNormalClosure, reason: "bye"},
		{name: "going away", code: ws.StatusGoingAway},
		{name: "application", code: 3000, reason: "app"},
		{name: "private", code: 4000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(tt.code, tt.reason)))
			expectCloseCode(t, p, tt.code, "*")
			p.ExpectEOF(5 * time.Second)
		})
	}
}

func TestCloseWithoutPayloadIsAnsweredWith1000(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewCloseFrame(nil))
	f := p.Expect()
	if f.OpCode != ws.OpClose {
		t.Fatalf("expected a close frame, got %s", f)
	}
	// D-5: 1005 never goes on the wire; an empty close or 1000 is fine.
	if len(f.Payload) != 0 {
		if code, _ := ws.ParseCloseFrameData(f.Payload); code != ws.StatusNormalClosure {
			t.Fatalf("close code = %d, want 1000 or none", code)
		}
	}
}

func TestCloseWithAnInvalidCodeIs1002(t *testing.T) {
	for _, code := range []ws.StatusCode{999, 1005, 1006, 1015, 2999} {
		t.Run(itoa(int(code)), func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendFrame(ws.NewCloseFrame(ws.NewCloseFrameBody(code, "")))
			expectCloseCode(t, p, ws.StatusProtocolError, "*")
		})
	}
}

func TestCloseWithAOneBytePayloadIs1002(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewCloseFrame([]byte{0x03}))
	expectCloseCode(t, p, ws.StatusProtocolError, "*")
}

func TestCloseWithANonUTF8ReasonIs1007(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewCloseFrame([]byte{0x03, 0xe8, 0xff, 0xfe}))
	expectCloseCode(t, p, ws.StatusInvalidFramePayloadData, "*")
}

func TestUnmaskedFrameIs1002(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	ping := ws.MustCompileFrame(ws.NewPingFrame([]byte("naked"))) // no mask bit
	p.SendRaw(ping)
	expectCloseCode(t, p, ws.StatusProtocolError, "*")
}

func TestReservedBitsAre1002(t *testing.T) {
	for _, rsv := range []byte{0x40, 0x20, 0x10} {
		t.Run(itoa(int(rsv)), func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendRaw(append(rawHeader(0x80|rsv|byte(ws.OpBinary), 1), 0xc0))
			expectCloseCode(t, p, ws.StatusProtocolError, "*")
		})
	}
}

func TestReservedOpcodeIs1002(t *testing.T) {
	for _, op := range []byte{0x3, 0x7, 0xb, 0xf} {
		t.Run(itoa(int(op)), func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendRaw(append(rawHeader(0x80|op, 1), 0xc0))
			expectCloseCode(t, p, ws.StatusProtocolError, "*")
		})
	}
}

func TestContinuationWithoutAStartedMessageIs1002(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewFrame(ws.OpContinuation, true, testpeer.Map("type", "x")))
	expectCloseCode(t, p, ws.StatusProtocolError, "*")
}

func TestNewMessageInsideAFragmentedMessageIs1002(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewFrame(ws.OpBinary, false, []byte{0x81}))
	p.SendFrame(ws.NewFrame(ws.OpBinary, true, testpeer.Map("type", "x")))
	expectCloseCode(t, p, ws.StatusProtocolError, "*")
}

func TestInvalidControlFramesAre1002(t *testing.T) {
	for _, tt := range []struct {
		name string
		give []byte
	}{
		{name: "fragmented ping", give: append(rawHeader(byte(ws.OpPing), 1), 'x')},
		{name: "ping over 125 bytes", give: append(rawHeader(0x80|byte(ws.OpPing), 126), make([]byte, 126)...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendRaw(tt.give)
			expectCloseCode(t, p, ws.StatusProtocolError, "*")
		})
	}
}

func TestFragmentedMessageWithAnInterleavedPingIsReassembled(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	msg := testpeer.Map("type", "auth", "token", "dev-token-alice")
	third := len(msg) / 3
	p.SendFrame(ws.NewFrame(ws.OpBinary, false, msg[:third]))
	p.SendFrame(ws.NewPingFrame([]byte("between")))
	p.SendFrame(ws.NewFrame(ws.OpContinuation, false, msg[third:2*third]))
	p.SendFrame(ws.NewFrame(ws.OpContinuation, true, msg[2*third:]))
	if f := p.Expect(); f.OpCode != ws.OpPong || string(f.Payload) != "between" {
		t.Fatalf("expected the pong first, got %s", f)
	}
	p.ExpectFields("type", "auth", "success", true, "actorTokenId", "alice")
}

func TestFragmentsAddingUpOverTheCapClose1009(t *testing.T) {
	s := start(t, func(c *testConfig) { c.MaxFrameSize = 4096 })
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewFrame(ws.OpBinary, false, make([]byte, 3000)))
	p.SendFrame(ws.NewFrame(ws.OpContinuation, true, make([]byte, 3000)))
	expectCloseCode(t, p, ws.StatusMessageTooBig, "*")
}

func TestFrameArrivingOneByteAtATimeIsProcessed(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	for _, b := range binFrame("type", "auth", "token", "dev-token-alice") {
		p.SendRaw([]byte{b})
		time.Sleep(500 * time.Microsecond) // pace the bytes so they arrive in separate reads
	}
	p.ExpectFields("type", "auth", "success", true)
}

func TestSeveralFramesInOneWriteAreAllProcessedInOrder(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	var b []byte
	b = append(b, binFrame("type", "auth", "token", "dev-token-alice")...)
	b = append(b, binFrame("type", "subscribe", "topic", "demo/general/batch")...)
	b = append(b, binFrame("type", "publish", "topic", "demo/general/batch", "data", "x")...)
	p.SendRaw(b)
	p.ExpectFields("type", "auth", "success", true)
	p.ExpectFields("type", "subscribed", "topic", "demo/general/batch")
	p.ExpectFields("type", "message", "topic", "demo/general/batch", "data", "x")
}

// TestRepliesFollowRequestOrder pipelines a subscribe and a publish on the
// same topic whose publish fails: the subscribe's reply must come first, as
// each frame is handled to completion in turn (wire-reference.md §3.3). The
// Python SDK fails a pending subscribe when an error frame for its topic
// arrives (decisions.md OQ-55), so the order is visible.
func TestRepliesFollowRequestOrder(t *testing.T) {
	s := start(t, func(c *testConfig) { c.MaxMessageSize = 10 })
	p := authed(t, s, "dev-token-alice")
	var b []byte
	b = append(b, binFrame("type", "subscribe", "topic", "demo/general/order")...)
	b = append(b, binFrame("type", "publish", "topic", "demo/general/order", "data", "far more than ten bytes", "msgRef", "m")...)
	p.SendRaw(b)
	p.ExpectFields("type", "subscribed", "topic", "demo/general/order")
	p.ExpectFields("type", "error", "code", 42930, "topic", "demo/general/order", "msgRef", "m")
}

func TestTextFrameWithJSONAuthGetsABinaryReply(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	p.SendFrame(ws.NewTextFrame([]byte(`{"type":"auth","token":"dev-token-alice","protocolVersion":2}`)))
	f := p.ExpectFields("type", "auth", "success", true, "actorTokenId", "alice", "protocolVersion", 2)
	if f.OpCode != ws.OpBinary {
		t.Fatalf("reply opcode = %v, want binary", f.OpCode)
	}
	p.SendFrame(ws.NewTextFrame([]byte(`{"type":"subscribe","topic":"demo/general/json"}`)))
	p.ExpectFields("type", "subscribed", "topic", "demo/general/json")
}

func TestTextFrameWithInvalidJSONGetsInvalidJSONAndStaysOpen(t *testing.T) {
	for _, tt := range []struct {
		name string
		give string
	}{
		{name: "truncated", give: `{"type":"auth","token":`},
		{name: "trailing", give: `{"type":"auth"} x`},
		{name: "not json", give: `hello`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := testpeer.Dial(t, s.Addr().String())
			p.SendFrame(ws.NewTextFrame([]byte(tt.give)))
			p.ExpectFields("type", "error", "error", "invalid_json")
			p.SendFrame(ws.NewTextFrame([]byte(`{"type":"auth","token":"dev-token-alice"}`)))
			p.ExpectFields("type", "auth", "success", true)
		})
	}
}

func TestEmptyTextFrameDoesNotCloseTheConnection(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewTextFrame(nil))
	p.SendFrame(ws.NewPingFrame([]byte("after")))
	// OQ-45: answer invalid_json or ignore, never close.
	f := p.Expect()
	if f.OpCode == ws.OpBinary {
		if f.Type() != "error" || f.Map["error"] != "invalid_json" {
			t.Fatalf("empty text frame answered %s, want invalid_json or nothing", f)
		}
		f = p.Expect()
	}
	if f.OpCode != ws.OpPong || string(f.Payload) != "after" {
		t.Fatalf("expected the pong, got %s", f)
	}
}

func TestTextFrameWithInvalidUTF8Is1007(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendFrame(ws.NewTextFrame([]byte{'{', 0xff, 0xfe, '}'}))
	expectCloseCode(t, p, ws.StatusInvalidFramePayloadData, "*")
}

func TestMalformedMsgpackGetsBadRequestAndStaysOpen(t *testing.T) {
	for _, tt := range []struct {
		name string
		give []byte
	}{
		{name: "reserved byte", give: []byte{0xc1}},
		{name: "truncated", give: []byte{0x82, 0xa4, 't', 'y'}},
		{name: "trailing bytes", give: append(testpeer.Map("type", "x"), 0xc0)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.SendBinary(tt.give)
			f := p.ExpectFields("type", "error", "error", "bad_request")
			if d, _ := f.Map["detail"].(string); d == "" {
				t.Fatalf("bad_request without detail: %s", f)
			}
			expectPong(t, p)
		})
	}
}

func TestMsgpackArrayBeforeAuthIsNotAuthenticated(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	p.SendBinary([]byte{0x92, 0x01, 0x02}) // [1, 2]
	p.ExpectFields("type", "error", "error", "not_authenticated")
}

func TestMsgpackArrayAfterAuthIsIgnored(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.SendBinary([]byte{0x92, 0x01, 0x02})
	expectPong(t, p) // nothing came before the pong
}

func TestUnknownMessageTypeAfterAuthIsIgnored(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	p.Send("type", "somethingFromTheFuture", "topic", "demo/general/x")
	expectPong(t, p)
}

func TestKnownTypeMissingItsTopicGetsBadRequest(t *testing.T) {
	for _, typ := range []string{"subscribe", "unsubscribe", "publish"} {
		t.Run(typ, func(t *testing.T) {
			s := start(t, nil)
			p := authed(t, s, "dev-token-alice")
			p.Send("type", typ, "data", "x")
			f := p.ExpectFields("type", "error", "error", "bad_request")
			if d, _ := f.Map["detail"].(string); d == "" {
				t.Fatalf("bad_request without detail: %s", f)
			}
		})
	}
}

func TestFragmentedTextWithAUTF8CharacterSplitAcrossFragmentsIsValid(t *testing.T) {
	s := start(t, nil)
	p := testpeer.Dial(t, s.Addr().String())
	msg := []byte(`{"type":"auth","token":"dev-token-alice","projectId":"é"}`)
	cut := bytes.IndexByte(msg, 0xc3) + 1 // inside the two bytes of é
	p.SendFrame(ws.NewFrame(ws.OpText, false, msg[:cut]))
	p.SendFrame(ws.NewFrame(ws.OpContinuation, true, msg[cut:]))
	p.ExpectFields("type", "auth", "success", true)
}

func TestLargeFrameSpanningManyReadsIsProcessed(t *testing.T) {
	s := start(t, nil)
	p := authed(t, s, "dev-token-alice")
	var b []byte
	b = append(b, binFrame("type", "publish", "topic", "demo/general/big", "data", testpeer.Raw(binOfSize(900_000)), "msgRef", "big")...)
	b = append(b, binFrame("type", "publish", "topic", "demo/general/big", "data", "small", "msgRef", "small")...)
	p.SendRaw(b)
	p.ExpectFields("type", "published", "msgRef", "big")
	p.ExpectFields("type", "published", "msgRef", "small")
}
