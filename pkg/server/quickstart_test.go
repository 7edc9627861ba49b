package server

import (
	"testing"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestQuickstartExchange is the quickstart's exchange as the JS SDK sends it
// (the public quickstart, wire-reference.md §11, §12.1): bob subscribes, alice publishes.
func TestQuickstartExchange(t *testing.T) {
	s := start(t, nil)
	addr := s.Addr().String()
	bob := testpeer.Dial(t, addr)
	auth := bob.Auth("dev-token-bob")
	for k, want := range map[string]any{"actorTokenId": "bob", "projectId": "demo-project", "actorType": "user", "protocolVersion": int64(1)} {
		if auth.Map[k] != want {
			t.Fatalf("auth reply %s = %v, want %v", k, auth.Map[k], want)
		}
	}
	bob.Send("type", "subscribe", "topic", "demo/general/messages", "qos", 1)
	bob.ExpectFields("type", "subscribed", "topic", "demo/general/messages", "loadBalance", false)

	alice := testpeer.Dial(t, addr)
	alice.Auth("dev-token-alice")
	alice.Send("type", "publish", "topic", "demo/general/messages",
		"data", map[string]any{"text": "hello from alice"}, "qos", 1, "echo", true)
	m := bob.ExpectFields("type", "message", "topic", "demo/general/messages",
		"data", map[string]any{"text": "hello from alice"}, "requiresAck", true, "from", "alice", "fromType", "actor")
	if id, _ := m.Map["msgId"].(string); len(id) != 36 {
		t.Fatalf("msgId = %q, want a UUID", id)
	}
	alice.ExpectNothing(200e6)
}
