package server

import (
	"context"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/store/memstore"
)

// TestAcksAreRecorded checks §6.4: a recorded message carries msgId and
// requiresAck, the store holds it, ack and batchAck mark it acked by the
// actor, malformed acks get bad_request, and nothing is re-sent.
func TestAcksAreRecorded(t *testing.T) {
	ms := memstore.New(memstore.Config{})
	t.Cleanup(func() { _ = ms.Close() })
	s := start(t, func(c *testConfig) { c.Store = ms })
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/acks")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/acks", "data", 1)
	alice.Send("type", "publish", "topic", "demo/general/acks", "data", 2)
	m1 := bob.ExpectFields("type", "message", "requiresAck", true)
	m2 := bob.ExpectFields("type", "message", "requiresAck", true)
	id1, id2 := m1.Map["msgId"].(string), m2.Map["msgId"].(string)

	bob.Send("type", "ack", "msgId", id1)
	bob.Send("type", "batchAck", "msgIds", []any{id2, "unknown-id"})
	waitFor(t, 5*time.Second, func() bool {
		_, by1, ok1 := ms.Get(context.Background(), id1)
		_, by2, ok2 := ms.Get(context.Background(), id2)
		return ok1 && ok2 && len(by1) == 1 && by1[0] == "bob" && len(by2) == 1
	})
	rec, _, _ := ms.Get(context.Background(), id1)
	if rec.Sender != "alice" || rec.Pattern != "demo/general/acks" || rec.Topic != "demo-app/demo/general/acks" {
		t.Fatalf("record = %+v", rec)
	}

	bob.Send("type", "batchAck", "msgIds", "not-an-array")
	bob.ExpectFields("type", "error", "error", "bad_request")
	bob.Send("type", "ack")
	bob.ExpectFields("type", "error", "error", "bad_request", "detail", "ack requires msgId")
	bob.ExpectNothing(200 * time.Millisecond)
}

// TestRecordingOff checks §6.4: without RECORD_MESSAGES messages carry
// neither msgId nor requiresAck.
func TestRecordingOff(t *testing.T) {
	s := start(t, func(c *testConfig) { c.RecordMessages = false })
	bob := authed(t, s, "dev-token-bob")
	subscribe(t, bob, "demo/general/x")
	alice := authed(t, s, "dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/x", "data", 1)
	f := bob.ExpectFields("type", "message")
	if _, ok := f.Map["msgId"]; ok {
		t.Fatalf("msgId without recording: %s", f)
	}
	if _, ok := f.Map["requiresAck"]; ok {
		t.Fatalf("requiresAck without recording: %s", f)
	}
}
