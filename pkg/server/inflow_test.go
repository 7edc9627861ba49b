package server

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// A publisher sending 10 KiB at 2,000/s while the workers are held busy
// is slowed down by TCP (its input is not read while the hub is behind,
// hub.Hub.HoldInput), not closed with input_overflow, and every publish it
// sent is answered `published` once the workers catch up; the
// subscribers get every message.
func TestFastPublisherIsSlowedNotClosedWhileTheWorkersAreBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("seconds of load")
	}
	s := start(t, func(c *testConfig) {
		c.RateLimit = 1 << 20
		c.Hub.Workers = 1
		c.Hub.OutboundMaxBytes = 256 << 20 // the subscribers lag while the worker is held
	})
	const topic, subscribers = "demo/general/flow", 10
	got := make([]atomic.Int64, subscribers)
	for i := range subscribers {
		p := authed(t, s, "dev-token-bob")
		subscribe(t, p, topic)
		go func() {
			for {
				f, err := p.Read(30 * time.Second)
				if err != nil {
					return
				}
				if f.Type() == "message" {
					got[i].Add(1)
				}
			}
		}()
	}
	pub := authed(t, s, "dev-token-alice")
	frame := compiled(ws.NewBinaryFrame(testpeer.Map("type", "publish", "topic", topic,
		"data", bytes.Repeat([]byte{'x'}, 10<<10), "msgRef", "m", "echo", false)))

	release := make(chan struct{})
	s.hub.RunShared(func(hub.Writer) { <-release }) // the only worker is busy
	var answered, refused atomic.Int64
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			f, err := pub.Read(30 * time.Second)
			if err != nil {
				return
			}
			switch f.Type() {
			case "published":
				answered.Add(1)
			case "error":
				refused.Add(1)
			}
		}
	}()
	const offered = 4000 // 2 s at 2,000 a second
	var written atomic.Int64
	writeErr := make(chan error, 1)
	go func() { // paced; a write blocks while TCP pushes back
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for written.Load() < offered {
			<-tick.C
			for range 2 {
				if _, err := pub.Conn.Write(frame); err != nil {
					writeErr <- err
					return
				}
				written.Add(1)
			}
		}
		writeErr <- nil
	}()
	time.Sleep(2 * time.Second)
	heldWritten := written.Load()
	if s.hub.InputPauses() == 0 {
		t.Fatal("the publisher's input was never paused")
	}
	if heldWritten >= offered*3/4 {
		t.Fatalf("%d of %d publishes written in 2 s while the worker was held: not slowed down", heldWritten, offered)
	}
	close(release)
	select { // once the worker catches up the publisher is read again and goes on
	case err := <-writeErr:
		if err != nil {
			t.Fatalf("the publisher's connection failed: %v (closes by reason %v)", err, s.hub.Stats().Closed)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the publisher is still blocked after %d publishes", written.Load())
	}
	n := written.Load()
	waitFor(t, 60*time.Second, func() bool { return answered.Load()+refused.Load() >= n })
	if r := refused.Load(); r != 0 {
		t.Fatalf("%d of %d publishes refused", r, n)
	}
	if a := answered.Load(); a != n {
		t.Fatalf("%d of %d publishes answered", a, n)
	}
	waitFor(t, 60*time.Second, func() bool {
		for i := range got {
			if got[i].Load() < n {
				return false
			}
		}
		return true
	})
	if st := s.hub.Stats(); st.Closed != [len(st.Closed)]uint64{} {
		t.Fatalf("connections closed: %v", st.Closed)
	}
	t.Logf("written while held: %d of 4000 offered; pauses %d; then %d answered", heldWritten, s.hub.InputPauses(), n)
}
