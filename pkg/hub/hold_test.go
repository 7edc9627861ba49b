package hub

import (
	"strconv"
	"testing"
	"time"

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
	holdAndRelease(t, h, c, tr, "<replay><1 msg t from a src ><1 msg t from c src ><1 msg t from d src >")
}

// TestHoldDeliveriesHoldsAcknowledgedOnes: an Acker's QoS 1 deliveries
// are held too, and handed to the Acker on release, in order, but those
// skipped, behind what was written first (an MQTT session's replay).
func TestHoldDeliveriesHoldsAcknowledgedOnes(t *testing.T) {
	enc := &ackEncoding{textEncoding{id: 1}}
	h := startHub(t, Config{Workers: 1})
	tr := &ackTransport{testTransport: newTestTransport(enc), n: 10}
	c := authedConn(h, tr)
	subscribeAndWait(t, h, c, tr.testTransport, SubSpec{Pattern: "t", Key: "t", QoS: 1})
	holdAndRelease(t, h, c, tr.testTransport, "<replay><1 qos1 t id 1><1 qos1 t id 2><1 qos1 t id 3>")
	if n := len(tr.qosOf()); n != 3 {
		t.Fatalf("%d acknowledged deliveries, want 3", n)
	}
}

// holdAndRelease holds c's deliveries, publishes a, b and c on "t",
// checks that nothing was written, writes "<replay>" and releases them
// skipping b, publishes d, and checks that tr got want.
func holdAndRelease(t *testing.T, h *Hub, c *Conn, tr *testTransport, want string) {
	t.Helper()
	pub := func(from string) {
		h.Publish(&Publication{Key: "t", Topic: "t", Msg: wire.Message{Topic: "t", From: from, MsgID: from}})
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
	got := ""
	eventually(t, "released", func() bool { got += tr.written(); return len(got) >= len(want) })
	if got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
}

// TestTapKeepsUnackedDeliveries: once started, a tap keeps each delivery
// in order, reports the unacked ones (acked out of order or not), and
// forgets the acked ones at its head.
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
	if len(d) != 1 || d[0].Msg.Msg.MsgID != "b" || d[0].Acked || overflow {
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
	c := &Conn{}
	tp := &tap{}
	now := time.Now().UnixNano()
	big := make([]byte, TapMaxBytes/2+1)
	for i := 0; i < 3; i++ {
		c.tapDelivery(tp, &Publication{Msg: wire.Message{Data: big}}, "t", false, now)
	}
	if len(tp.ents) != 1 || !tp.overflow || tp.bytes != len(big) {
		t.Fatalf("bytes bound: %d kept, %d bytes, overflow %v", len(tp.ents), tp.bytes, tp.overflow)
	}
	tp = &tap{ackSeen: true} // TapMaxBeforeAck is TestTapBeforeTheFirstAck's
	for i := 0; i < TapMax+10; i++ {
		c.tapDelivery(tp, &Publication{Msg: wire.Message{MsgID: strconv.Itoa(i)}}, "t", false, now)
	}
	if len(tp.ents) != TapMax || tp.ents[0].p.Msg.MsgID != "10" || !tp.overflow {
		t.Fatalf("count bound: %d kept, oldest %s", len(tp.ents), tp.ents[0].p.Msg.MsgID)
	}
}

// TestTapLetsGoOfANonAcker: a client that reads on (frames arrive) for
// Config.TapAckWait past a delivery without ever acking is one that does not ack
// (wire-reference.md §12): nothing it was sent is reported for replay, and its
// next delivery lets go of the tap for good. One whose frames stopped
// coming (its network went) keeps its unacked deliveries, and so does one
// that has acked before.
func TestTapLetsGoOfANonAcker(t *testing.T) {
	h := New(Config{Workers: 1}) // not started: the test drives the worker-only methods itself
	now := time.Now().UnixNano()
	pub := func(id string) *Publication { return &Publication{Msg: wire.Message{MsgID: id}} }

	silent := &Conn{w: h.workers[0]}
	silent.StartTap()
	silent.Touch(now)
	silent.tapDelivery(silent.tapped(), pub("a"), "t", false, now)
	if d, _ := silent.Tapped(); len(d) != 1 {
		t.Fatalf("network gone right after the delivery: %d reported, want 1", len(d))
	}

	reader := &Conn{w: h.workers[0]}
	reader.StartTap()
	reader.tapDelivery(reader.tapped(), pub("a"), "t", false, now)
	reader.Touch(now + int64(DefaultTapAckWait) + 1) // a heartbeat, no ack
	if d, _ := reader.Tapped(); d != nil {
		t.Fatalf("a client reading on without acks: %d reported, want none", len(d))
	}
	reader.tapDelivery(reader.tapped(), pub("b"), "t", false, now+int64(DefaultTapAckWait)+2)
	if reader.tapped() != tapOff {
		t.Fatal("the non-acker's tap kept after its next delivery")
	}
	reader.StartTap()
	if reader.tapped() != tapOff {
		t.Fatal("StartTap restarted the tap of a non-acker")
	}

	acker := &Conn{w: h.workers[0]}
	acker.StartTap()
	acker.tapDelivery(acker.tapped(), pub("a"), "t", false, now)
	acker.TapAck("a")
	acker.tapDelivery(acker.tapped(), pub("b"), "t", false, now)
	acker.Touch(now + int64(DefaultTapAckWait) + 1)
	if d, _ := acker.Tapped(); len(d) != 1 || d[0].Msg.Msg.MsgID != "b" {
		t.Fatalf("an acking client's unacked delivery: %+v", d)
	}
}

// TestTapBeforeTheFirstAck: until its client acks anything, a tap keeps at
// most TapMaxBeforeAck deliveries (a client that does not ack holds little
// until it is found out); after an ack, up to TapMax.
func TestTapBeforeTheFirstAck(t *testing.T) {
	c := &Conn{}
	tp := &tap{}
	now := time.Now().UnixNano()
	for i := 0; i < TapMaxBeforeAck+10; i++ {
		c.tapDelivery(tp, &Publication{Msg: wire.Message{MsgID: strconv.Itoa(i)}}, "t", false, now)
	}
	if len(tp.ents) != TapMaxBeforeAck || !tp.overflow {
		t.Fatalf("before any ack: %d kept, overflow %v; want %d and true", len(tp.ents), tp.overflow, TapMaxBeforeAck)
	}
	tp.ackSeen = true
	for i := 0; i < TapMaxBeforeAck; i++ {
		c.tapDelivery(tp, &Publication{Msg: wire.Message{MsgID: "x" + strconv.Itoa(i)}}, "t", false, now)
	}
	if len(tp.ents) != 2*TapMaxBeforeAck {
		t.Fatalf("after an ack: %d kept, want %d", len(tp.ents), 2*TapMaxBeforeAck)
	}
}

// TestTapKeepsReplayedMessages: a message a replay wrote is kept like a
// delivery, reported with its payload until acked by its msgId.
func TestTapKeepsReplayedMessages(t *testing.T) {
	h := New(Config{Workers: 1}) // not started: the test drives the worker-only methods itself
	c := &Conn{w: h.workers[0]}
	c.StartTap()
	c.TapReplayed("r1", "t", []byte{0x80})
	c.TapReplayed("r2", "t", []byte{0x81})
	c.TapAck("r1")
	d, _ := c.Tapped()
	if len(d) != 1 || d[0].Msg != nil || d[0].MsgID != "r2" || d[0].Topic != "t" || string(d[0].Payload) != "\x81" {
		t.Fatalf("tapped %+v, want r2's payload only", d)
	}
}
