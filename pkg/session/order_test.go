package session

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// orderConn is a testConn whose reply lines also carry what tells the
// replies of one kind apart: a publish's msgRef, a subscription's topic.
type orderConn struct{ testConn }

func (t *orderConn) Frame(r Reply) []byte {
	line := r.Kind.String()
	for _, key := range []string{"msgRef", "topic"} {
		if v := stringField(r.Payload, key); v != "" {
			line += " " + v
			break
		}
	}
	return []byte(line + "\n")
}

func (t *orderConn) Write(r Reply) { t.Conn.WriteFlush(t.Frame(r)) }

// stringField returns the string value of key in the MessagePack map b.
func stringField(b []byte, key string) string {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return ""
	}
	for ; n > 0; n-- {
		var k string
		if k, b, err = msgp.ReadStringBytes(b); err != nil {
			return ""
		}
		if k == key {
			v, _, _ := msgp.ReadStringBytes(b)
			return v
		}
		if b, err = msgp.Skip(b); err != nil {
			return ""
		}
	}
	return ""
}

// TestRepliesInRequestOrderUnderBacklog: 10,000 requests of mixed kinds
// (a publish with msgRef, answered by the reader; a subscribe, answered by
// the connection's worker; a presence list, answered by the shared
// worker) sent while every worker is held busy are answered in request
// order, each once, without the reader ever waiting for a worker.
func TestRepliesInRequestOrderUnderBacklog(t *testing.T) {
	p := newProtocolWith(t, Config{RateLimit: 1 << 20, Auth: grants{"tok": {ActorTokenID: "bob", ProjectID: "p",
		Rules: acl.Rules{{Pattern: "demo/#", Topic: "demo", Permission: acl.PermPubSub, AppID: "app",
			RoomID: "room-1", RoomSlug: "lobby"}}}}})
	tc := &orderConn{}
	tc.Conn = p.Hub().Register(tc)
	tc.Conn.SetPhase(hub.PhaseOpen)
	t.Cleanup(func() { p.Hub().Closed(tc.Conn) })
	p.Handle(&tc.State, tc, &wire.Command{Type: "auth", HasToken: true, TokenIsString: true, Token: "tok"})
	tc.expect(t, "authOK")
	tc.out.Reset()

	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()                                        // a failure must not leave the workers held
	p.Hub().Run(tc.Conn, func(*hub.Conn) { <-release }) // the connection's worker
	p.Hub().RunShared(func(hub.Writer) { <-release })   // the presence worker
	const n = 10000
	var want strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < n; i++ {
			switch (i + 2) % 3 { // a subscribe first, so that a reply is owed from the start
			case 0:
				ref := fmt.Sprint("r", i)
				p.Handle(&tc.State, tc, &wire.Command{Type: "publish", HasTopic: true, Topic: "demo/x", MsgRef: ref, HasData: true, Data: []byte{0xc0}})
				fmt.Fprintf(&want, "published %s\n", ref)
			case 1:
				topic := fmt.Sprint("demo/s", i%500) // a re-subscribe replaces: under the cap of 1,000
				p.Handle(&tc.State, tc, &wire.Command{Type: "subscribe", HasTopic: true, Topic: topic})
				fmt.Fprintf(&want, "subscribed %s\n", topic)
			case 2:
				p.Handle(&tc.State, tc, &wire.Command{Type: "getPresence", HasRoomID: true, RoomID: "lobby"})
				want.WriteString("presenceList\n")
			}
		}
	}()
	select { // the reader never waits for the workers
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the reader waited for the held workers")
	}
	tc.mu.Lock()
	early := tc.out.Len()
	tc.mu.Unlock()
	if early != 0 {
		t.Fatalf("%d bytes written while the first reply was owed", early)
	}
	free()
	deadline := time.Now().Add(30 * time.Second)
	for {
		tc.mu.Lock()
		got := tc.out.String()
		tc.mu.Unlock()
		if len(got) >= want.Len() || time.Now().After(deadline) {
			if got != want.String() {
				i := 0
				for i < len(got) && i < want.Len() && got[i] == want.String()[i] {
					i++
				}
				t.Fatalf("replies out of order at byte %d: got %.60q, want %.60q", i, got[i:], want.String()[i:])
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
