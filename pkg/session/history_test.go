package session

import (
	"sync"
	"testing"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// fakeHistory records the appends it is given.
type fakeHistory struct {
	mu      sync.Mutex
	entries []fakeEntry
}

type fakeEntry struct {
	topic, msgID string
	data         []byte
}

func (h *fakeHistory) Append(topic, msgID string, data []byte) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, fakeEntry{topic, msgID, append([]byte(nil), data...)})
	return true
}

// TestAcceptedPublishesGoToTheHistory: an accepted publish is appended
// under its routing key with its msgId, as the message frame of the exact
// topic; a refused one, and nothing else, is not; Inject's are too.
func TestAcceptedPublishesGoToTheHistory(t *testing.T) {
	h := &fakeHistory{}
	p := newProtocolWith(t, Config{RecordMessages: true, History: h, Auth: grants{"tok": {ActorTokenID: "bob", ProjectID: "p",
		Rules: acl.Rules{{Pattern: "demo/#", Topic: "demo", Permission: acl.PermPubSub, AppID: "app",
			RoomID: "room-1", RoomSlug: "lobby"}}}}})
	tc := &testConn{}
	tc.Conn = p.Hub().Register(tc)
	tc.Conn.SetPhase(hub.PhaseOpen)
	t.Cleanup(func() { p.Hub().Closed(tc.Conn) })
	p.Handle(&tc.State, tc, &wire.Command{Type: "auth", HasToken: true, TokenIsString: true, Token: "tok"})
	tc.expect(t, "authOK")
	data := msgp.AppendString(nil, "hello")
	p.Handle(&tc.State, tc, &wire.Command{Type: "publish", Topic: "demo/x", HasTopic: true, Data: data})
	p.Handle(&tc.State, tc, &wire.Command{Type: "publish", Topic: "other/x", HasTopic: true, Data: data})
	if err := p.Inject(&hub.Publication{Key: "app/room/y", Topic: "room/y",
		Msg: wire.Message{Topic: "room/y", Data: data, From: "server", FromType: "server", Timestamp: 42}}, SourceInternal); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.entries) != 2 {
		t.Fatalf("%d entries, want 2: %+v", len(h.entries), h.entries)
	}
	e := h.entries[0]
	if e.topic != "app/demo/x" || e.msgID == "" {
		t.Fatalf("entry %+v: want the routing key app/demo/x and a msgId", e)
	}
	for key, want := range map[string]string{"type": "message", "topic": "demo/x", "msgId": e.msgID, "from": "bob", "fromType": "actor"} {
		if got := stringField(e.data, key); got != want {
			t.Errorf("entry's %s = %q, want %q", key, got, want)
		}
	}
	if e := h.entries[1]; e.topic != "app/room/y" || e.msgID != "" || stringField(e.data, "topic") != "room/y" ||
		stringField(e.data, "fromType") != "server" {
		t.Errorf("injected entry %+v", e)
	}
}

// TestNoHistoryCostsNoAllocation: without a history, keep allocates
// nothing.
func TestNoHistoryCostsNoAllocation(t *testing.T) {
	p := &Protocol{}
	pub := &hub.Publication{Key: "a/b/c", Msg: wire.Message{Topic: "b/c", Data: []byte{0xc0}}}
	if n := testing.AllocsPerRun(100, func() { p.keep(pub) }); n != 0 {
		t.Fatalf("keep without a history: %v allocations, want 0", n)
	}
}

// BenchmarkKeep is the cost a history adds to a publish: the message frame
// encoded once into a pooled buffer and handed to Append.
func BenchmarkKeep(b *testing.B) {
	p := &Protocol{cfg: Config{History: discardHistory{}}}
	pub := &hub.Publication{Key: "app/room/t", Msg: wire.Message{Topic: "room/t", Data: make([]byte, 128),
		MsgID: "0b8e0c4a-3c1e-4f57-9a53-bb0e2f1f7a11", From: "bob", FromType: "actor", Timestamp: 1}}
	b.ReportAllocs()
	for b.Loop() {
		p.keep(pub)
	}
}

type discardHistory struct{}

func (discardHistory) Append(string, string, []byte) bool { return true }

func withDiscardHistory(c *Config) { c.History = discardHistory{} }
