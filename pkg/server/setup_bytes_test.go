package server

import (
	"bytes"
	"io"
	"syscall"
	"testing"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// The bytes a connection's setup gets are the ones the straightforward
// encodings give: the 101 that gobwas/ws writes for the request, and the
// binary frames of wire's payloads appended to nil (the auth answer,
// `subscribed`, and the too_many_subscriptions error the worker builds
// when it refuses).
func TestSetupRepliesAreTheSameBytes(t *testing.T) {
	sb := newSetupBench(t, func(c *testConfig) { c.Hub.MaxSubscriptions = 1 })
	var resp bytes.Buffer
	if _, err := (ws.Upgrader{}).Upgrade(struct {
		io.Reader
		io.Writer
	}{bytes.NewReader(sb.upgrade), &resp}); err != nil {
		t.Fatal(err)
	}
	want := [][]byte{
		resp.Bytes(),
		wsframe.Binary(wire.AppendAuthOK(nil, &wire.AuthOK{ActorTokenID: "dev-token-bob",
			ProjectID: "dev-project", ActorType: "user", ProtocolVersion: 1, Restored: []wire.Restored{}})),
		wsframe.Binary(wire.AppendSubscribed(nil, "demo/general/bench", false)),
		wsframe.Binary(wire.AppendError(nil, &wire.Error{Err: wire.ErrTooManySubscriptions,
			Topic: "demo/general/bench/2", HasTopic: true, Detail: session.DetailTooManySubscriptions})),
	}
	sb.record = true
	fd := sb.connect(t)
	defer syscall.Close(fd)
	got := sb.seen
	if len(got) != len(want) {
		t.Fatalf("got %d replies, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("reply %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}
