package resume

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/hub"
)

// BenchmarkParkedSessionMemory parks b.N sessions of one QoS 1
// subscription each (distinct topics, nothing missed yet) and reports the
// heap they hold once their live connections are gone (the registry
// entries, the parked hub connection, its subscription and table entry): `go test -run NONE -bench ParkedSessionMemory
// -benchtime 100000x ./pkg/resume` gives the figure for 100,000 sessions.
func BenchmarkParkedSessionMemory(b *testing.B) {
	var r *Registry
	h := hub.New(hub.Config{Workers: 2, OnClose: func(c *hub.Conn) { r.Closed(c) }})
	r = New(Config{Expiry: time.Hour, MaxSessions: b.N + 1}, h)
	h.Start()
	defer func() { _ = h.Shutdown(b.Context()) }()
	waitIdle(h)
	before := heap()
	live := make([]*hub.Conn, b.N)
	for i := range live {
		c := h.Register(nullTransport{})
		r.Attach(c, Identity("actor"+strconv.Itoa(i), ""), false, 0)
		spec := &hub.SubSpec{Pattern: "demo/general/t" + strconv.Itoa(i), Key: "app/demo/general/t" + strconv.Itoa(i), QoS: 1}
		h.Subscribe(c, spec)
		r.Subscribed(c, spec)
		live[i] = c
	}
	b.ResetTimer()
	for _, c := range live {
		h.Closed(c)
	}
	for r.Len() < b.N {
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	live = nil
	waitIdle(h)
	after := heap()
	b.ReportMetric(float64(int64(after)-int64(before))/float64(b.N), "B/session")
}

// waitIdle lets the workers finish the subscribe ops posted.
func waitIdle(h *hub.Hub) {
	done := make(chan struct{})
	h.RunShared(func(hub.Writer) { close(done) })
	<-done
	time.Sleep(100 * time.Millisecond)
}

func heap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
