package hub

import (
	"strconv"
	"testing"

	"github.com/NoLagApp/kraken/pkg/wire"
)

// TestHoldDeliveriesKeepsThemBackInOrder: while held, nothing is written;
// on release the held deliveries follow what the caller wrote first, in
// order, but those it skips; afterwards deliveries go straight out.
func TestHoldDeliveriesKeepsThemBackInOrder(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 1})
	tr := newTestTransport(enc)
	c := authedConn(h, tr)
	subscribeAndWait(t, h, c, tr, SubSpec{Pattern: "t", Key: "t"})
	pub := func(from string) {
		p := &Publication{Key: "t", Topic: "t", Msg: wire.Message{Topic: "t", From: from, MsgID: from}}
		h.Publish(p)
	}
	done := make(chan struct{})
	h.Run(c, func(c *Conn) { c.HoldDeliveries() })
	pub("a")
	pub("b")
	pub("c")
	h.Run(c, func(c *Conn) {
		if got := tr.written(); got != "" {
			t.Errorf("written while held: %q", got)
		}
		c.Write([]byte("<replay>"))
		c.ReleaseDeliveries(func(p *Publication) bool { return p.Msg.MsgID == "b" })
		close(done)
	})
	<-done
	pub("d")
	want := "<replay><1 msg t from a src ><1 msg t from c src ><1 msg t from d src >"
	got := ""
	eventually(t, "released", func() bool { got += tr.written(); return len(got) >= len(want) })
	if got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
}

// TestTapKeepsUnackedDeliveries: once started, a tap keeps each delivery
// in order and forgets the acked ones at its head.
func TestTapKeepsUnackedDeliveries(t *testing.T) {
	enc := &textEncoding{id: 1}
	h := startHub(t, Config{Workers: 1})
	tr := newTestTransport(enc)
	c := authedConn(h, tr)
	subscribeAndWait(t, h, c, tr, SubSpec{Pattern: "t", Key: "t"})
	h.Run(c, (*Conn).StartTap)
	for _, id := range []string{"a", "b", "c"} {
		h.Publish(&Publication{Key: "t", Topic: "t", Msg: wire.Message{Topic: "t", MsgID: id}})
	}
	eventually(t, "tapped", func() bool { d, _ := c.Tapped(); return len(d) == 3 })
	c.TapAck("a", "c")
	d, overflow := c.Tapped()
	if len(d) != 2 || d[0].Msg.Msg.MsgID != "b" || d[0].Acked || !d[1].Acked || overflow {
		t.Fatalf("after acks: %+v overflow=%v", d, overflow)
	}
	c.TapAck("b")
	if d, _ := c.Tapped(); len(d) != 0 {
		t.Fatalf("all acked, %d kept", len(d))
	}
}

// TestTapBounds: past TapMax deliveries or TapMaxBytes of data the oldest
// go and the tap says so.
func TestTapBounds(t *testing.T) {
	tp := &tap{}
	big := make([]byte, TapMaxBytes/2+1)
	for i := 0; i < 3; i++ {
		tp.add(&Publication{Msg: wire.Message{Data: big}}, "t", false)
	}
	if len(tp.ents) != 1 || !tp.overflow || tp.bytes != len(big) {
		t.Fatalf("bytes bound: %d kept, %d bytes, overflow %v", len(tp.ents), tp.bytes, tp.overflow)
	}
	tp = &tap{}
	for i := 0; i < TapMax+10; i++ {
		tp.add(&Publication{Msg: wire.Message{MsgID: strconv.Itoa(i)}}, "t", false)
	}
	if len(tp.ents) != TapMax || tp.ents[0].p.Msg.MsgID != "10" || !tp.overflow {
		t.Fatalf("count bound: %d kept, oldest %s", len(tp.ents), tp.ents[0].p.Msg.MsgID)
	}
}
