package hub

import "sync"

// TapMax and TapMaxBytes (of their data) bound the deliveries a tap
// keeps: past either the oldest go, and the tap says it overflowed.
const (
	TapMax      = 256
	TapMaxBytes = 1 << 20
)

// tap keeps the recent deliveries to an acking resumable connection that
// its client has not acked yet, so those lost in flight when its network
// went can be replayed (pkg/resume). Written by the worker per delivery,
// acked from the connection's reader.
type tap struct {
	mu       sync.Mutex
	ents     []tapEntry // oldest first
	bytes    int        // of the kept deliveries' data
	overflow bool
}

type tapEntry struct {
	p        *Publication
	display  string
	wildcard bool
	acked    bool
}

// Delivered is one delivery a tap kept: the message as the subscription
// with display topic Topic got it.
type Delivered struct {
	Msg   *Publication
	Topic string
	Wild  bool
	Acked bool
}

func (t *tap) add(p *Publication, display string, wildcard bool) {
	t.mu.Lock()
	t.ents = append(t.ents, tapEntry{p: p, display: display, wildcard: wildcard})
	t.bytes += len(p.Msg.Data)
	n := 0
	for len(t.ents)-n > TapMax || t.bytes > TapMaxBytes && len(t.ents)-n > 1 {
		t.bytes -= len(t.ents[n].p.Msg.Data)
		n++
	}
	if n > 0 {
		t.overflow = true
		t.dropHead(n)
	}
	t.mu.Unlock()
}

// StartTap makes c keep its deliveries from now on until they are acked
// (TapAck). Call it only from Hub.Run.
func (c *Conn) StartTap() {
	if c.tap.Load() == nil {
		c.tap.Store(&tap{ents: make([]tapEntry, 0, 16)})
	}
}

// TapAck marks the deliveries of msgIDs acked and forgets the acked ones at
// the head. Safe from any goroutine; a no-op without a tap.
func (c *Conn) TapAck(msgIDs ...string) {
	t := c.tap.Load()
	if t == nil {
		return
	}
	t.mu.Lock()
	for _, id := range msgIDs {
		for i := len(t.ents) - 1; i >= 0; i-- {
			if e := &t.ents[i]; e.p.Msg.MsgID == id {
				e.acked = true
			}
		}
	}
	n := 0
	for n < len(t.ents) && t.ents[n].acked {
		t.bytes -= len(t.ents[n].p.Msg.Data)
		n++
	}
	t.dropHead(n)
	t.mu.Unlock()
}

// dropHead forgets the n oldest entries, clearing their slots.
func (t *tap) dropHead(n int) {
	if n == 0 {
		return
	}
	copy(t.ents, t.ents[n:])
	clear(t.ents[len(t.ents)-n:])
	t.ents = t.ents[:len(t.ents)-n]
}

// Tapped returns what c's tap kept, oldest first, and whether the tap lost
// some to TapMax; nil without a tap.
func (c *Conn) Tapped() (d []Delivered, overflow bool) {
	t := c.tap.Load()
	if t == nil {
		return nil, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d = make([]Delivered, len(t.ents))
	for i, e := range t.ents {
		d[i] = Delivered{Msg: e.p, Topic: e.display, Wild: e.wildcard, Acked: e.acked}
	}
	return d, t.overflow
}
