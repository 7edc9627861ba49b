package hub

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// TestConnSize pins the sizes docs/ARCHITECTURE.md quotes for what an idle
// connection costs in the hub ("Why this shape"): a change that grows
// them must update the page (and be measured, bench/RESULTS.md). Conn is
// 160 bytes and a plain sub 48, both exactly a size class; Session is 45
// bytes of fields in the 48-byte class (without LimitOrg it would fit 32).
func TestConnSize(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"hub.Conn", unsafe.Sizeof(Conn{}), 160},
		{"hub.Session", unsafe.Sizeof(Session{}), 48},
		{"a subscription (sub)", unsafe.Sizeof(sub{}), 48},
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
	for _, long := range []time.Duration{idleMaxMS*time.Millisecond + 1, math.MaxInt64 - 1, math.MaxInt64} {
		c.SetIdleTimeout(long)
		if got := time.Duration(c.ownIdle(c.phase.Load())); got != long || c.x.Load() == nil {
			t.Errorf("SetIdleTimeout(%v): the sweep reads %v (side record %v)", long, got, c.x.Load() != nil)
		}
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

// A subscription's display pattern is the tail of its routing key when it
// is one (the common case: the key is the pattern behind an app and scope
// prefix), and costs no string and no side record then; any other pattern
// is kept whole in the side record. Either way sub.pattern returns what
// the client sent, and the key's sharing in the table keeps it.
func TestSubPatternIsTheKeysTailOrKeptApart(t *testing.T) {
	c := &Conn{ID: 1}
	for _, tc := range []struct {
		pattern, key string
		apart        bool
	}{
		{"general/chat", "app/general/chat", false},
		{"chat", "app/room/chat", false},
		{"app/room/chat", "app/room/chat", false},
		{"", "app/room/chat", false},
		{"room/chat", "app/other/chat", true},
		{"app/room/chat/longer", "room/chat", true},
		{"x", strings.Repeat("k", patternInX) + "x", true},
		{"x", strings.Repeat("k", patternInX-1) + "x", false},
	} {
		s := newSub(c, &SubSpec{Pattern: tc.pattern, Key: tc.key})
		if got := s.pattern(); got != tc.pattern {
			t.Errorf("pattern %q key %q: sub.pattern() = %q", tc.pattern, tc.key, got)
		}
		if apart := s.x != nil; apart != tc.apart {
			t.Errorf("pattern %q key %q: side record %v, want %v", tc.pattern, tc.key, apart, tc.apart)
		}
	}
	tab := newTable()
	a := newSub(c, &SubSpec{Pattern: "general/chat", Key: "app/general/chat"})
	b := newSub(c, &SubSpec{Pattern: "chat", Key: "app/" + "general/chat"})
	tab.insert(a)
	tab.insert(b)
	if b.pattern() != "chat" || unsafe.StringData(b.key) != unsafe.StringData(a.key) {
		t.Errorf("the second subscription to a key: pattern %q, key shared %v", b.pattern(), unsafe.StringData(b.key) == unsafe.StringData(a.key))
	}
}
