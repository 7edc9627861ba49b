package session

import (
	"testing"

	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/acl"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// BenchmarkPublish is the publish path of an authenticated connection,
// from the decoded command to the hub's queue, with no subscriber: the
// checks, the resolution, the message and, with a history, its entry.
func BenchmarkPublish(b *testing.B) {
	for _, tt := range []struct {
		name string
		cfg  func(*Config)
	}{{"history=off", func(*Config) {}}, {"history=discard", withDiscardHistory}} {
		b.Run(tt.name, func(b *testing.B) {
			cfg := Config{RecordMessages: true, RateLimit: 1 << 30, Auth: grants{"tok": {ActorTokenID: "bob", ProjectID: "p",
				Rules: acl.Rules{{Pattern: "demo/#", Topic: "demo", Permission: acl.PermPubSub, AppID: "app",
					RoomID: "room-1", RoomSlug: "lobby"}}}}}
			tt.cfg(&cfg)
			p, err := started(cfg, hub.Config{Workers: 2})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = shutdown(b.Context(), p) })
			tc := &testConn{}
			tc.Conn = p.Hub().Register(tc)
			tc.Conn.SetPhase(hub.PhaseOpen)
			b.Cleanup(func() { p.Hub().Closed(tc.Conn) })
			p.Handle(&tc.State, tc, &wire.Command{Type: "auth", HasToken: true, TokenIsString: true, Token: "tok"})
			tc.expect(b, "authOK")
			cmd := &wire.Command{Type: "publish", Topic: "demo/x", HasTopic: true, Data: msgp.AppendBytes(nil, make([]byte, 128))}
			b.ReportAllocs()
			for b.Loop() {
				p.Handle(&tc.State, tc, cmd)
			}
		})
	}
}
