package hub

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// testTransport is an in-memory Transport (in the style of centrifuge's
// testTransport): it records what the hub writes and how it closes, and can
// be made to take only some bytes (a full socket) or to fail (a broken one).
type testTransport struct {
	enc        Encoding
	mu         sync.Mutex
	out        bytes.Buffer
	room       int // bytes it takes before it is full; < 0: unbounded
	broken     bool
	closeWrite int
	closed     int
}

func newTestTransport(enc Encoding) *testTransport { return &testTransport{enc: enc, room: -1} }

func (t *testTransport) Encoding() Encoding { return t.enc }

func (t *testTransport) Writev(bufs [][]byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.broken {
		return 0, errors.New("broken pipe")
	}
	n := 0
	for _, b := range bufs {
		if t.room >= 0 && len(b) > t.room-n {
			b = b[:t.room-n]
		}
		t.out.Write(b)
		n += len(b)
		if t.room >= 0 && n == t.room {
			break
		}
	}
	if t.room >= 0 {
		t.room -= n
	}
	return n, nil
}

func (t *testTransport) CloseWrite() error { t.mu.Lock(); t.closeWrite++; t.mu.Unlock(); return nil }
func (t *testTransport) Close() error      { t.mu.Lock(); t.closed++; t.mu.Unlock(); return nil }

// written returns what was written so far, and empties the record.
func (t *testTransport) written() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.out.String()
	t.out.Reset()
	return s
}

func (t *testTransport) size() int { t.mu.Lock(); defer t.mu.Unlock(); return t.out.Len() }

func (t *testTransport) setRoom(n int) { t.mu.Lock(); t.room = n; t.mu.Unlock() }

func (t *testTransport) counts() (closeWrite, closed int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closeWrite, t.closed
}

// textEncoding frames everything as readable text, counting the message
// frames it builds. id tells two of them apart in the frame cache.
type textEncoding struct {
	id    uint8
	built atomic.Int64
}

func (e *textEncoding) ID() uint8 { return e.id }
func (e *textEncoding) Message(m *wire.Message) []byte {
	e.built.Add(1)
	return fmt.Appendf(nil, "<%d msg %s from %s src %s>", e.id, m.Topic, m.From, m.SourceTopic)
}
func (e *textEncoding) Close(d disconnect.Disconnect) []byte {
	return fmt.Appendf(nil, "<%d close %d %s>", e.id, d.StatusCode(), d.Message())
}
func (e *textEncoding) HandshakeTimeout() []byte { return fmt.Appendf(nil, "<%d timeout>", e.id) }

func startHub(t *testing.T, cfg Config) *Hub {
	t.Helper()
	h := New(cfg)
	h.Start()
	t.Cleanup(func() { _ = h.Shutdown(t.Context()) })
	return h
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// authedConn registers a connection on tr, authenticated.
func authedConn(h *Hub, tr Transport) *Conn {
	c := h.Register(tr)
	c.SetSession(&Session{Version: 2})
	c.SetPhase(PhaseAuthed)
	return c
}

// subscribeAndWait subscribes c and waits for its reply to be written.
func subscribeAndWait(t *testing.T, h *Hub, c *Conn, tr *testTransport, spec SubSpec) {
	t.Helper()
	spec.Reply = []byte("<subscribed " + spec.Pattern + ">")
	h.Subscribe(c, &spec)
	// Answered (no reply pending) comes before written: the worker
	// flushes at the end of its batch.
	eventually(t, "subscribed "+spec.Pattern, func() bool { return c.PendingReplies() == 0 && tr.size() > 0 })
	if got := tr.written(); got != string(spec.Reply) {
		t.Fatalf("reply %q, want %q", got, spec.Reply)
	}
}

func publication(topic string) *Publication {
	p := &Publication{Key: "app/" + topic, Topic: topic, Echo: true,
		Msg: wire.Message{Topic: topic, From: "alice", Data: []byte{0xc0}}}
	return p
}

// Every connection gets the publication in its own encoding; each frame is
// built once per publication, encoding and display topic.
func TestDeliveryIsFramedOncePerEncodingAndDisplayTopic(t *testing.T) {
	h := startHub(t, Config{Workers: 1})
	ws, other := &textEncoding{id: 0}, &textEncoding{id: 1}
	type peer struct {
		c  *Conn
		tr *testTransport
	}
	var peers []peer
	for _, spec := range []struct {
		enc      Encoding
		pattern  string
		wildcard bool
	}{
		{ws, "r/x", false}, {ws, "r/x", false}, {ws, "r/+", true}, {ws, "r/+", true},
		{other, "r/x", false}, {other, "r/x", false}, {other, "r/+", true},
	} {
		tr := newTestTransport(spec.enc)
		c := authedConn(h, tr)
		key := "app/" + spec.pattern
		subscribeAndWait(t, h, c, tr, SubSpec{Pattern: spec.pattern, Key: key, Wildcard: spec.wildcard})
		peers = append(peers, peer{c, tr})
	}
	h.Publish(publication("r/x"))
	want := []string{
		"<0 msg r/x from alice src >", "<0 msg r/x from alice src >",
		"<0 msg r/+ from alice src r/x>", "<0 msg r/+ from alice src r/x>",
		"<1 msg r/x from alice src >", "<1 msg r/x from alice src >",
		"<1 msg r/+ from alice src r/x>",
	}
	for i, p := range peers {
		eventually(t, fmt.Sprint("delivery to peer ", i), func() bool {
			p.tr.mu.Lock()
			defer p.tr.mu.Unlock()
			return p.tr.out.Len() > 0
		})
		if got := p.tr.written(); got != want[i] {
			t.Errorf("peer %d got %q, want %q", i, got, want[i])
		}
	}
	for _, e := range []*textEncoding{ws, other} {
		if n := e.built.Load(); n != 2 {
			t.Errorf("encoding %d built %d frames, want 2 (one per display topic: the exact one at publication, the wildcard's on the worker)", e.id, n)
		}
	}
}

// TestEachFormIsEncodedOncePerPublication: a publication to 1,000
// subscribers of a plain encoding and 1,000 acknowledged (QoS 1)
// subscribers of another, spread over four workers, is encoded once per
// form, before any worker fans it out, whatever the number of workers that
// deliver it; an encoding nobody subscribes with is not encoded at all.
func TestEachFormIsEncodedOncePerPublication(t *testing.T) {
	h := startHub(t, Config{Workers: 4})
	ws, mq, idle := &textEncoding{id: 0}, &ackEncoding{textEncoding{id: 1}}, &textEncoding{id: 2}
	_ = authedConn(h, newTestTransport(idle)) // registered, subscribed to nothing
	var wsOut, mqOut []*testTransport
	for range 1000 {
		tr := newTestTransport(ws)
		h.Subscribe(authedConn(h, tr), &SubSpec{Pattern: "r/x", Key: "app/r/x"})
		wsOut = append(wsOut, tr)
		at := &ackTransport{testTransport: newTestTransport(mq), n: 10}
		h.Subscribe(authedConn(h, at), &SubSpec{Pattern: "r/x", Key: "app/r/x", QoS: 1})
		mqOut = append(mqOut, at.testTransport)
	}
	eventually(t, "2,000 subscriptions", func() bool { return h.Stats().Subscriptions == 2000 })
	h.Publish(publication("r/x"))
	for i := range 1000 {
		for _, d := range []struct {
			tr   *testTransport
			want string
		}{{wsOut[i], "<0 msg r/x from alice src >"}, {mqOut[i], "<1 qos1 r/x id 1>"}} {
			eventually(t, "a delivery", func() bool { return d.tr.size() > 0 })
			if got := d.tr.written(); got != d.want {
				t.Fatalf("subscriber %d got %q, want %q", i, got, d.want)
			}
		}
	}
	if n := ws.built.Load(); n != 1 {
		t.Errorf("plain form built %d times, want 1", n)
	}
	if n := mq.built.Load(); n != 1 {
		t.Errorf("acknowledged form built %d times, want 1 (and no plain form of it)", n)
	}
	if n := idle.built.Load(); n != 0 {
		t.Errorf("an encoding without subscriptions was built %d times", n)
	}
	for _, f := range []struct {
		enc   uint8
		acked bool
		want  uint64
	}{{0, false, 1}, {1, true, 1}, {1, false, 0}, {2, false, 0}} {
		if got := h.FramesEncoded(f.enc, f.acked); got != f.want {
			t.Errorf("FramesEncoded(%d, %v) = %d, want %d", f.enc, f.acked, got, f.want)
		}
	}
}

// A close puts the encoding's closing frame after what is queued, then
// ends the write side, and releases the transport at the close deadline.
// WriteTimeout is short: on a loaded machine the queue may still be
// pending at the close deadline, and the release then lingers for the
// peer (lingerOn) up to WriteTimeout after the last byte went out.
func TestCloseWritesTheEncodingsFrameAfterTheQueueThenFIN(t *testing.T) {
	h := startHub(t, Config{Workers: 1, CloseTimeout: 50 * time.Millisecond, Tick: 10 * time.Millisecond,
		WriteTimeout: 200 * time.Millisecond})
	enc := &textEncoding{id: 3}
	tr := newTestTransport(enc)
	tr.setRoom(4) // the socket takes 4 bytes, then is full
	c := authedConn(h, tr)
	c.WriteFlush([]byte("<first>"))
	c.Write([]byte("<second>"))
	h.Close(c, disconnect.New(disconnect.IdleTimeout))
	time.Sleep(30 * time.Millisecond)
	if cw, _ := tr.counts(); cw != 0 {
		t.Fatal("the write side was shut before the queue was written")
	}
	tr.setRoom(-1) // the peer reads again: the worker's retry writes the rest
	eventually(t, "FIN after the close frame", func() bool { cw, _ := tr.counts(); return cw == 1 })
	want := "<first><second><3 close 4000 idle_timeout>"
	if got := tr.written(); got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
	eventually(t, "released at the close deadline", func() bool { _, cl := tr.counts(); return cl == 1 })
	if c.Write([]byte("late")) {
		t.Fatal("a write after the close was queued")
	}
}

// A connection whose queue outgrows OutboundMaxBytes is a slow consumer:
// its queue is cut to the partly written head and the encoding's 1008
// frame follows it.
func TestSlowConsumerQueueIsCutAndClosedInItsEncoding(t *testing.T) {
	h := startHub(t, Config{Workers: 1, OutboundMaxBytes: 64})
	enc := &textEncoding{id: 2}
	tr := newTestTransport(enc)
	tr.setRoom(3)
	c := authedConn(h, tr)
	c.WriteFlush([]byte("<0123456789>"))
	for c.Write(bytes.Repeat([]byte("x"), 10)) {
	}
	tr.setRoom(-1)
	eventually(t, "closing frame written", func() bool { cw, _ := tr.counts(); return cw == 1 })
	want := "<0123456789><2 close 1008 slow_consumer>"
	if got := tr.written(); got != want {
		t.Fatalf("written %q, want %q", got, want)
	}
	if r := c.CloseReason(); r != disconnect.SlowConsumer {
		t.Fatalf("close reason %v", r)
	}
}

// A broken transport drops the queue; nothing more is written.
func TestBrokenTransportDropsTheQueue(t *testing.T) {
	h := startHub(t, Config{Workers: 1})
	tr := newTestTransport(&textEncoding{})
	c := authedConn(h, tr)
	tr.mu.Lock()
	tr.broken = true
	tr.mu.Unlock()
	if !c.WriteFlush([]byte("lost")) {
		t.Fatal("a write to an open connection was refused")
	}
	c.wmu.Lock()
	queued := c.queuedBytes()
	c.wmu.Unlock()
	if queued != 0 {
		t.Fatalf("%d bytes still queued after the transport failed", queued)
	}
}

// A handshake that does not complete in time gets the encoding's answer
// and no closing frame (there is no session to close yet). WriteTimeout is
// short too: on a loaded machine the answer may still be queued at the
// close deadline, and the release then lingers for it (lingerOn).
func TestHandshakeTimeoutWritesTheEncodingsAnswer(t *testing.T) {
	h := startHub(t, Config{Workers: 1, HandshakeTimeout: 20 * time.Millisecond, Tick: 10 * time.Millisecond,
		CloseTimeout: 20 * time.Millisecond, WriteTimeout: 100 * time.Millisecond})
	tr := newTestTransport(&textEncoding{id: 5})
	h.Register(tr)
	// Released at every tick until the transport reports it closed
	// (Hub.Closed, which this test transport never calls): at least once.
	eventually(t, "released", func() bool { _, cl := tr.counts(); return cl >= 1 })
	if got := tr.written(); got != "<5 timeout>" {
		t.Fatalf("written %q, want only the handshake timeout answer", got)
	}
}

// A connection's own idle timeout replaces the hub's (an MQTT keep-alive):
// a shorter one closes it first, a negative one never does.
func TestPerConnectionIdleTimeout(t *testing.T) {
	h := startHub(t, Config{Workers: 1, IdleTimeout: time.Hour, Tick: 5 * time.Millisecond,
		CloseTimeout: 10 * time.Millisecond})
	short, never := newTestTransport(&textEncoding{id: 5}), newTestTransport(&textEncoding{id: 5})
	cs, cn := authedConn(h, short), authedConn(h, never)
	cs.SetIdleTimeout(30 * time.Millisecond)
	cn.SetIdleTimeout(-1)
	// The sweep releases it at every tick until the transport reports it
	// closed (Hub.Closed, which this test transport never calls): at least
	// once is what counts.
	eventually(t, "short idle released", func() bool { _, cl := short.counts(); return cl >= 1 })
	if r := cs.CloseReason(); r != disconnect.IdleTimeout {
		t.Fatalf("close reason %v, want idle_timeout", r)
	}
	h2 := startHub(t, Config{Workers: 1, IdleTimeout: 20 * time.Millisecond, Tick: 5 * time.Millisecond})
	cn2 := authedConn(h2, never)
	cn2.SetIdleTimeout(-1)
	time.Sleep(100 * time.Millisecond)
	if cn2.Closed() || cn.Closed() {
		t.Fatal("a connection without an idle timeout was closed")
	}
}

// ackEncoding is a textEncoding that can deliver at QoS 1.
type ackEncoding struct{ textEncoding }

func (e *ackEncoding) MessageQoS1(m *wire.Message) (head, tail []byte) {
	e.built.Add(1)
	return fmt.Appendf(nil, "<%d qos1 %s id ", e.id, m.Topic), []byte(">")
}

// ackTransport is a testTransport that is an Acker with a window of n:
// it sends each delivery at once (Conn.WriteParts) with its QoS and a
// counter as its identifier, and refuses one past the window.
type ackTransport struct {
	*testTransport
	mu   sync.Mutex
	n    int
	next int
	qos  []uint8 // of each delivery
}

func (t *ackTransport) Deliver(c *Conn, head, tail []byte, qos uint8) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return false
	}
	t.n--
	t.next++
	t.qos = append(t.qos, qos)
	c.WriteParts(head, fmt.Appendf(nil, "%d", t.next), tail)
	return true
}

func (t *ackTransport) qosOf() []uint8 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]uint8(nil), t.qos...)
}

// A QoS 1 subscription on an Acker transport gets head + its own
// identifier + tail, built once per publication; a QoS 0 subscription and
// an at-most-once publication get the plain message; a full window closes
// the connection as a slow consumer.
func TestQoS1Deliveries(t *testing.T) {
	h := startHub(t, Config{Workers: 1, Tick: 10 * time.Millisecond, CloseTimeout: 10 * time.Millisecond})
	enc := &ackEncoding{textEncoding{id: 1}}
	tr := &ackTransport{testTransport: newTestTransport(enc), n: 2}
	c := authedConn(h, tr)
	subscribeAndWait(t, h, c, tr.testTransport, SubSpec{Pattern: "a/b", Key: "app/a/b", QoS: 1})
	plain := newTestTransport(enc)
	c0 := authedConn(h, plain)
	subscribeAndWait(t, h, c0, plain, SubSpec{Pattern: "a/b", Key: "app/a/b", QoS: 0})

	h.Publish(publication("a/b"))
	eventually(t, "qos 1 delivery", func() bool { return tr.size() > 0 && plain.size() > 0 })
	if got := tr.written(); got != "<1 qos1 a/b id 1>" {
		t.Fatalf("QoS 1 delivery %q", got)
	}
	if got := plain.written(); got != "<1 msg a/b from alice src >" {
		t.Fatalf("QoS 0 delivery %q", got)
	}
	once := publication("a/b")
	once.AtMostOnce = true
	h.Publish(once)
	eventually(t, "at most once", func() bool { return tr.size() > 0 })
	if got := tr.written(); got != "<1 msg a/b from alice src >" {
		t.Fatalf("an at-most-once publication came as %q", got)
	}
	h.Publish(publication("a/b")) // id 2, the last of the window
	h.Publish(publication("a/b")) // the window is full
	eventually(t, "closed", func() bool { return c.CloseReason() == disconnect.SlowConsumer })
	if got := tr.written(); got != "<1 qos1 a/b id 2><1 close 1008 slow_consumer>" {
		t.Fatalf("written %q", got)
	}
}

// A topic beginning with '$' is not delivered to, nor retained for, a
// subscription whose pattern begins with a wildcard [MQTT-4.7.2-1]; a
// pattern beginning with '$' gets it.
func TestDollarTopicsSkipLeadingWildcards(t *testing.T) {
	h := startHub(t, Config{Workers: 1})
	enc := &textEncoding{id: 0}
	hash, plus, sys := newTestTransport(enc), newTestTransport(enc), newTestTransport(enc)
	for _, s := range []struct {
		tr      *testTransport
		pattern string
	}{{hash, "#"}, {plus, "+/x"}, {sys, "$SYS/#"}} {
		c := authedConn(h, s.tr)
		subscribeAndWait(t, h, c, s.tr, SubSpec{Pattern: s.pattern, Key: "app/" + s.pattern, Wildcard: true})
	}
	p := publication("$SYS/x")
	p.Retain = true
	h.Publish(p)
	h.Publish(publication("a/x"))
	eventually(t, "deliveries", func() bool { return sys.size() > 0 && hash.size() > 0 && plus.size() > 0 })
	time.Sleep(20 * time.Millisecond)
	if got := sys.written(); got != "<0 msg $SYS/# from alice src $SYS/x>" {
		t.Fatalf("$SYS/# got %q", got)
	}
	for name, tr := range map[string]*testTransport{"#": hash, "+/x": plus} {
		if got := tr.written(); got != "<0 msg "+name+" from alice src a/x>" {
			t.Fatalf("%s got %q, want only a/x", name, got)
		}
	}
	late := newTestTransport(enc)
	c := authedConn(h, late)
	subscribeAndWait(t, h, c, late, SubSpec{Pattern: "#", Key: "app/#", Wildcard: true})
	time.Sleep(20 * time.Millisecond)
	if got := late.written(); got != "" {
		t.Fatalf("a new # subscription got the retained $SYS/x: %q", got)
	}
}

// OnClosing is told once per connection, at the first close decision,
// whoever makes it (the reader's CloseNow, a worker's Close, the sweep),
// on the deciding goroutine: by the time CloseNow returns it has run.
func TestOnClosingIsToldOnceAtTheCloseDecision(t *testing.T) {
	var told sync.Map // *Conn → *atomic.Int32
	h := startHub(t, Config{Workers: 1, Tick: 10 * time.Millisecond, IdleTimeout: 50 * time.Millisecond,
		OnClosing: func(c *Conn) {
			n, _ := told.LoadOrStore(c, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
		}})
	count := func(c *Conn) int32 {
		if n, ok := told.Load(c); ok {
			return n.(*atomic.Int32).Load()
		}
		return 0
	}
	byReader := authedConn(h, newTestTransport(&textEncoding{id: 1}))
	byReader.CloseNow(disconnect.New(disconnect.TooManyErrors))
	if n := count(byReader); n != 1 {
		t.Fatalf("told %d times when CloseNow returned, want 1", n)
	}
	h.Close(byReader, disconnect.New(disconnect.Shutdown)) // a second decision: not told again
	bySweep := authedConn(h, newTestTransport(&textEncoding{id: 1}))
	eventually(t, "the idle connection closed by the sweep", func() bool { return count(bySweep) == 1 })
	ran := make(chan struct{})
	h.Run(byReader, func(*Conn) { close(ran) }) // behind the second Close
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not get to the op")
	}
	if n := count(byReader); n != 1 {
		t.Fatalf("told %d times, want 1", n)
	}
}

// A delivery's QoS is the minimum of the publication's and the
// subscription's (MQTT 3.1.1 §3.8.4): an ExactlyOnce publication reaches
// a QoS 2 subscription at 2 and a QoS 1 one at 1; a plain one reaches a
// QoS 2 subscription at 1.
func TestDeliveryQoSIsTheMinimum(t *testing.T) {
	h := startHub(t, Config{Workers: 1})
	enc := &ackEncoding{textEncoding{id: 1}}
	two := &ackTransport{testTransport: newTestTransport(enc), n: 10}
	one := &ackTransport{testTransport: newTestTransport(enc), n: 10}
	subscribeAndWait(t, h, authedConn(h, two), two.testTransport, SubSpec{Pattern: "a/b", Key: "app/a/b", QoS: 2})
	subscribeAndWait(t, h, authedConn(h, one), one.testTransport, SubSpec{Pattern: "a/b", Key: "app/a/b", QoS: 1})
	exactly := publication("a/b")
	exactly.ExactlyOnce = true
	h.Publish(exactly)
	h.Publish(publication("a/b"))
	eventually(t, "two deliveries each", func() bool { return len(two.qosOf()) == 2 && len(one.qosOf()) == 2 })
	if got := fmt.Sprint(two.qosOf(), one.qosOf()); got != "[2 1] [1 1]" {
		t.Fatalf("delivery QoS (QoS 2 subscriber, QoS 1 subscriber) = %s, want [2 1] [1 1]", got)
	}
}

// A connection that acknowledges deliveries (MQTT) gets one copy of a
// publication matching several of its subscriptions, at the highest QoS
// among them [MQTT-3.3.5-1]; a WebSocket connection gets one per
// subscription (wire-reference.md §6.1).
func TestOverlappingSubscriptionsGiveMQTTOneCopy(t *testing.T) {
	h := startHub(t, Config{Workers: 2})
	enc := &ackEncoding{textEncoding{id: 1}}
	mq := &ackTransport{testTransport: newTestTransport(enc), n: 100}
	c := authedConn(h, mq)
	subscribeAndWait(t, h, c, mq.testTransport, SubSpec{Pattern: "a/b", Key: "app/a/b", QoS: 0})
	subscribeAndWait(t, h, c, mq.testTransport, SubSpec{Pattern: "a/#", Key: "app/a/#", Wildcard: true, QoS: 1})
	subscribeAndWait(t, h, c, mq.testTransport, SubSpec{Pattern: "+/b", Key: "app/+/b", Wildcard: true, QoS: 0})
	ws := newTestTransport(&textEncoding{id: 0})
	w := authedConn(h, ws)
	subscribeAndWait(t, h, w, ws, SubSpec{Pattern: "a/b", Key: "app/a/b"})
	subscribeAndWait(t, h, w, ws, SubSpec{Pattern: "a/#", Key: "app/a/#", Wildcard: true})

	for range 3 {
		h.Publish(publication("a/b"))
	}
	eventually(t, "websocket copies", func() bool { return strings.Count(ws.peek(), "<0 msg") == 6 })
	eventually(t, "mqtt copies", func() bool { return len(mq.qosOf()) == 3 })
	time.Sleep(20 * time.Millisecond) // room for a wrong extra copy
	if got := mq.written(); got != "<1 qos1 a/# id 1><1 qos1 a/# id 2><1 qos1 a/# id 3>" {
		t.Fatalf("MQTT connection got %q, want three copies at QoS 1 on the a/# subscription", got)
	}
	h.Publish(publication("x/b")) // matches one subscription only
	eventually(t, "single match", func() bool { return mq.size() > 0 })
	if got := mq.written(); got != "<1 msg +/b from alice src x/b>" {
		t.Fatalf("single match %q", got)
	}
}

// peek returns what was written without consuming it.
func (t *testTransport) peek() string { t.mu.Lock(); defer t.mu.Unlock(); return t.out.String() }

// A publication no subscription takes any form of allocates no forms:
// they are the shared, empty noForms.
func TestFormsOfAnUnwantedPublicationAllocateNothing(t *testing.T) {
	h := startHub(t, Config{Workers: 1})
	h.forms.register(&textEncoding{id: 0}) // an encoding in use, with no subscription
	p := publication("a/b")
	allocs := testing.AllocsPerRun(100, func() {
		p.forms = nil
		h.forms.build(p)
	})
	if allocs != 0 || p.forms != noForms {
		t.Fatalf("build with no form in use: %v allocations, forms %p (noForms %p)", allocs, p.forms, noForms)
	}
}
