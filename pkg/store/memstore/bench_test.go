package memstore

import (
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/NoLagApp/kraken/pkg/store"
)

// benchIDs are distinct message ids; a benchmark cycles through them, and
// with the default limit an id has long been pruned before it comes round.
var benchIDs = func() []string {
	ids := make([]string, 1<<17)
	for i := range ids {
		ids[i] = id(i)
	}
	return ids
}()

// BenchmarkAppend measures Append on the publish path from many goroutines,
// with the default bounds, so pruning is included.
func BenchmarkAppend(b *testing.B) {
	s := New(Config{})
	b.Cleanup(func() { _ = s.Close() })
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := store.Record{ProjectID: "p", AppID: "a", RoomID: "r", Topic: "p/a/r/chat", Pattern: "chat", Sender: "actor", PayloadSize: 64, Timestamp: t0}
		for pb.Next() {
			r.MsgID = benchIDs[next.Add(1)&(1<<17-1)]
			if err := s.Append(ctx, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAck measures single acks of held records from many goroutines.
func BenchmarkAck(b *testing.B) {
	s := New(Config{})
	b.Cleanup(func() { _ = s.Close() })
	for _, msgID := range benchIDs[:DefaultMaxMessages] {
		r := store.Record{MsgID: msgID}
		if err := s.Append(ctx, &r); err != nil {
			b.Fatal(err)
		}
	}
	actors := make([]string, 64)
	for i := range actors {
		actors[i] = "actor-" + strconv.Itoa(i)
	}
	var next atomic.Uint64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			if err := s.Ack(ctx, actors[n%64], benchIDs[n%DefaultMaxMessages]); err != nil {
				b.Fatal(err)
			}
		}
	})
}
