package hub

import (
	"sync"
	"testing"
	"time"
	"unsafe"
)

// TestConnSize pins the sizes docs/ARCHITECTURE.md quotes for what an idle
// connection costs in the hub ("Why this shape"): a change that grows
// them must update the page (and be measured, bench/RESULTS.md). Conn is
// 160 bytes and a plain sub 64, both exactly a size class; Session is 45
// bytes of fields in the 48-byte class (without LimitOrg it would fit 32).
func TestConnSize(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"hub.Conn", unsafe.Sizeof(Conn{}), 160},
		{"hub.Session", unsafe.Sizeof(Session{}), 48},
		{"a subscription (sub)", unsafe.Sizeof(sub{}), 64},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d bytes, docs/ARCHITECTURE.md says %d", c.what, c.got, c.want)
		}
	}
}

// An MQTT keep-alive's idle timeout (at most 1.5 × 65,535 s) is kept in the
// phase word: setting it makes no side record. Only one longer than the
// word holds (a parked session's expiry of days) does.
func TestIdleTimeoutNeedsNoSideRecord(t *testing.T) {
	for _, d := range []time.Duration{time.Nanosecond, 1500 * time.Millisecond, 65535 * 1500 * time.Millisecond, idleMaxMS * time.Millisecond, -1} {
		var c Conn
		c.SetIdleTimeout(d)
		if c.x.Load() != nil {
			t.Errorf("SetIdleTimeout(%v) made a side record", d)
		}
		want := (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
		if d < 0 {
			want = -1
		}
		if got := time.Duration(c.ownIdle(c.phase.Load())); got != want {
			t.Errorf("SetIdleTimeout(%v): the sweep reads %v, want %v", d, got, want)
		}
	}
	var c Conn
	long := idleMaxMS*time.Millisecond + time.Millisecond
	c.SetIdleTimeout(long)
	if got := time.Duration(c.ownIdle(c.phase.Load())); got != long || c.x.Load() == nil {
		t.Errorf("SetIdleTimeout(%v): the sweep reads %v (side record %v)", long, got, c.x.Load() != nil)
	}
	c.SetIdleTimeout(0)
	if got := c.ownIdle(c.phase.Load()); got != 0 {
		t.Errorf("SetIdleTimeout(0) left %v", time.Duration(got))
	}
}

// The phase word's three parts (Phase, own idle timeout, hung-up mark) are
// set from different goroutines (the reader, a session's hang-up, a
// takeover); none may undo another's change. Run it under -race.
func TestPhaseWordPartsKeepEachOther(t *testing.T) {
	for round := 0; round < 200; round++ {
		var c Conn
		c.phase.Store(uint32(PhaseHandshake))
		var wg sync.WaitGroup
		wg.Add(3)
		go func() {
			defer wg.Done()
			c.SetPhase(PhaseOpen)
			c.SetPhase(PhaseAuthed)
		}()
		go func() {
			defer wg.Done()
			for d := time.Duration(1); d <= 64; d++ {
				c.SetIdleTimeout(d * time.Second)
			}
		}()
		go func() {
			defer wg.Done()
			c.MarkHungUp()
		}()
		wg.Wait()
		if c.Phase() != PhaseAuthed || !c.HungUp() || time.Duration(c.ownIdle(c.phase.Load())) != 64*time.Second {
			t.Fatalf("round %d: phase %v, hung up %v, idle %v; want authed, true, 64s",
				round, c.Phase(), c.HungUp(), time.Duration(c.ownIdle(c.phase.Load())))
		}
	}
}
