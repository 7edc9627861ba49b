package reactor

import (
	"context"
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudwego/netpoll"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// The read loop on its own, with a made-up framing (testFraming) and an
// in-memory netpoll.Reader: what it keeps, bounds, times and discards.
// transports_test.go runs the same rules over real sockets, once per
// transport.

// testFraming is a frame of the unit tests: a 2-byte big-endian total
// length, header included, then a kind byte, then anything:
//
//	'm' a whole message   'b' the first fragment of a message (BeginMessage)
//	'c' a middle fragment 'e' the last fragment (EndMessage)
//	'p' a control frame   'x' a protocol error (Disconnect)
func testFrame(kind byte, total int) []byte {
	b := make([]byte, total)
	binary.BigEndian.PutUint16(b, uint16(total))
	b[2] = kind
	return b
}

// testFrames concatenates frames.
func testFrames(frames ...[]byte) []byte {
	var out []byte
	for _, f := range frames {
		out = append(out, f...)
	}
	return out
}

// testSocket is a socket never written (fd -1: a write fails and the hub
// drops the queue) whose read pause is recorded.
type testSocket struct{ paused *atomic.Bool }

func (testSocket) Fd() int                           { return -1 }
func (testSocket) RemoteAddr() net.Addr              { return nil }
func (testSocket) Close() error                      { return nil }
func (s testSocket) SetReadPaused(paused bool) error { s.paused.Store(paused); return nil }

// testConn is a transport's connection state for testFraming.
type testConn struct {
	Stream
	c      *hub.Conn
	reason disconnect.Reason // of the first Disconnect
	frames int               // complete frames handled
}

func (t *testConn) Record() *hub.Conn { return t.c }

func (t *testConn) Disconnect(d disconnect.Disconnect) {
	if t.reason == 0 {
		t.reason = d.Reason
	}
	t.CloseNow(t.c, d)
}

func (*testConn) Encoding() hub.Encoding { return wsframe.Encoding{} }

// testHandler parses testFraming.
type testHandler struct{ h *hub.Hub }

func (th testHandler) Open(sock Socket) *testConn {
	st := &testConn{Stream: NewStream(sock)}
	st.c = th.h.Register(st)
	st.c.SetPhase(hub.PhaseOpen)
	return st
}

func (testHandler) Process(st *testConn, buf []byte) (used int, complete bool) {
	for used < len(buf) && !st.Closing() {
		b := buf[used:]
		if len(b) < 3 {
			break
		}
		total := int(binary.BigEndian.Uint16(b))
		if total < 3 {
			st.Disconnect(disconnect.New(disconnect.ProtocolError))
			break
		}
		if len(b) < total {
			st.SetNeed(total)
			break
		}
		used += total
		complete = true
		st.frames++
		switch b[2] {
		case 'm', 'e':
			st.EndMessage()
		case 'b':
			st.BeginMessage(1)
		case 'x':
			st.Disconnect(disconnect.New(disconnect.ProtocolError))
		}
	}
	return used, complete
}

// testReader is a netpoll.Reader over bytes in memory: what the read loop
// calls of netpoll's buffer (Len, Peek, Next, Skip, Release).
type testReader struct {
	netpoll.Reader // the rest: not called
	mem, buf       []byte
}

// fill makes b, copied, what the reader holds.
func (r *testReader) fill(b []byte) {
	r.mem = append(r.mem[:0], b...)
	r.buf = r.mem
}

func (r *testReader) Len() int                   { return len(r.buf) }
func (r *testReader) Peek(n int) ([]byte, error) { return r.buf[:n], nil }
func (r *testReader) Skip(n int) error           { r.buf = r.buf[n:]; return nil }
func (r *testReader) Release() error             { return nil }

func (r *testReader) Next(n int) ([]byte, error) {
	p := r.buf[:n]
	r.buf = r.buf[n:]
	return p, nil
}

// testLoop returns a Loop of testFraming over a started hub of hc (one
// worker unless hc says otherwise), bounded at backlog bytes.
func testLoop(t testing.TB, hc hub.Config, backlog int) (*Loop[*testConn], *hub.Hub) {
	t.Helper()
	if hc.Workers == 0 {
		hc.Workers = 1
	}
	h := hub.New(hc)
	h.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = h.Shutdown(ctx)
	})
	l, err := New[*testConn](testHandler{h}, Config{Hub: h, MaxInputBacklog: backlog})
	if err != nil {
		t.Fatal(err)
	}
	return l, h
}

// open opens a connection on l, closed when the test ends.
func open(t testing.TB, l *Loop[*testConn]) *testConn {
	t.Helper()
	st := l.h.Open(testSocket{new(atomic.Bool)})
	t.Cleanup(func() { l.cfg.Hub.Closed(st.c) })
	return st
}

// feed reads b into st as one netpoll read.
func feed(l *Loop[*testConn], st *testConn, b []byte) {
	r := &testReader{}
	r.fill(b)
	l.read(st, true, r)
}

// TestPartialFrameIsSizedByItsDeclaredLength checks the one sizing policy
// of the partial buffer: a tail whose frame length is known gets room for
// that frame up to 4 KiB (it is copied once), a larger one is not reserved
// before it arrives, an unknown one gets exactly the tail, a buffer much
// larger than what remains is let go of, and none is kept once the frame
// completes.
func TestPartialFrameIsSizedByItsDeclaredLength(t *testing.T) {
	big := testFrame('m', 10_000)
	tests := []struct {
		name    string
		reads   [][]byte
		wantLen int
		wantCap int
	}{
		{"small frame: room for all of it", [][]byte{testFrame('m', 200)[:10]}, 10, 200},
		{"large frame: 4 KiB, not its length", [][]byte{big[:10]}, 10, partialKeep},
		{"header incomplete: the tail only", [][]byte{{0x01}}, 1, 1},
		{"bytes appended to the buffer kept", [][]byte{big[:10], big[10:5000]}, 5000, 0},
		{"completed: nothing kept", [][]byte{big[:10], big[10:]}, 0, 0},
		{"large buffer, small tail: let go of", [][]byte{big[:9000], append(big[9000:], testFrame('m', 100)[:5]...)}, 5, 100},
		{"complete frames in one read: nothing kept", [][]byte{testFrames(testFrame('m', 50), testFrame('p', 3))}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := testLoop(t, hub.Config{}, 1<<20)
			st := open(t, l)
			for _, b := range tt.reads {
				feed(l, st, b)
			}
			if len(st.part()) != tt.wantLen || tt.wantCap != 0 && cap(st.part()) != tt.wantCap {
				t.Fatalf("partial len %d cap %d, want len %d cap %d", len(st.part()), cap(st.part()), tt.wantLen, tt.wantCap)
			}
			if tt.wantLen == 0 && st.partial != nil {
				t.Fatalf("an empty partial buffer is kept (cap %d)", cap(st.part()))
			}
		})
	}
}

// TestInputBoundCountsThePartialFrame checks that the input bound counts
// what is received and not processed: netpoll's bytes and the partial
// frame kept from earlier reads, so a connection cannot hold more than
// the bound by keeping a frame half sent.
func TestInputBoundCountsThePartialFrame(t *testing.T) {
	const bound = 1000
	frame := testFrame('m', 3000)
	tests := []struct {
		name   string
		reads  [][]byte
		closed bool
	}{
		{"the bound itself", [][]byte{testFrames(testFrame('m', 500), testFrame('m', 500))}, false},
		{"one byte over", [][]byte{testFrames(testFrame('m', 500), testFrame('m', 501))}, true},
		{"partial and new input over", [][]byte{frame[:600], frame[600:1001]}, true},
		{"partial and new input within", [][]byte{frame[:600], frame[600:1000]}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, h := testLoop(t, hub.Config{}, bound)
			st := open(t, l)
			for _, b := range tt.reads {
				feed(l, st, b)
			}
			if closed := st.reason == disconnect.InputOverflow; closed != tt.closed {
				t.Fatalf("closed for input_overflow: %v, want %v (reason %v)", closed, tt.closed, st.reason)
			}
			if tt.closed && st.partial != nil {
				t.Fatal("the partial frame is kept after the overflow")
			}
			if tt.closed {
				waitFor(t, func() bool { return h.Stats().Closed[disconnect.InputOverflow] == 1 })
			}
		})
	}
}

// TestInputAfterACloseIsDiscarded checks that nothing is handled once the
// reader decided a close: neither the rest of the read that decided it
// nor any later read, and no partial frame is kept.
func TestInputAfterACloseIsDiscarded(t *testing.T) {
	l, _ := testLoop(t, hub.Config{}, 1<<20)
	st := open(t, l)
	feed(l, st, testFrames(testFrame('m', 10), testFrame('x', 3), testFrame('m', 10), testFrame('m', 20)[:5]))
	if st.frames != 2 || st.reason != disconnect.ProtocolError {
		t.Fatalf("%d frames handled, closed for %v; want 2, protocol_error", st.frames, st.reason)
	}
	if st.partial != nil {
		t.Fatalf("%d bytes kept after the close", len(st.part()))
	}
	r := &testReader{}
	r.fill(testFrame('m', 10))
	l.read(st, true, r)
	if st.frames != 2 || r.Len() != 0 {
		t.Fatalf("after the close: %d frames handled, %d bytes left unread; want 2, 0", st.frames, r.Len())
	}
}

// TestFrameInProgressIsTimedFromItsFirstByte checks hub.Conn.FrameStart
// after a sequence of reads: the read a frame or message in progress began
// in, kept while it goes on (a message spanning frames across the control
// frames between its fragments), moved when a message ended and another
// frame began in the same read, 0 when nothing is in progress; the
// handshake and a closing connection are not timed.
func TestFrameInProgressIsTimedFromItsFirstByte(t *testing.T) {
	f := testFrame('m', 100)
	tests := []struct {
		name      string
		handshake bool
		reads     [][]byte
		began     int // index of the read the frame in progress began in; -1: none
	}{
		{"complete frame", false, [][]byte{f}, -1},
		{"half a frame", false, [][]byte{f[:40]}, 0},
		{"more of it", false, [][]byte{f[:40], f[40:80]}, 0},
		{"its end and half of the next", false, [][]byte{f[:40], append(f[40:], f[:40]...)}, 1},
		{"its end only", false, [][]byte{f[:40], f[40:]}, -1},
		{"a message across a control frame", false, [][]byte{testFrame('b', 10), testFrame('p', 10)}, 0},
		{"a message across a fragment and a partial control frame", false,
			[][]byte{testFrame('b', 10), testFrames(testFrame('c', 10), testFrame('p', 10)[:5])}, 0},
		{"a message ended, another begun", false,
			[][]byte{testFrame('b', 10), testFrames(testFrame('e', 10), testFrame('b', 10))}, 1},
		{"a message ended", false, [][]byte{testFrame('b', 10), testFrame('e', 10)}, -1},
		{"in the handshake", true, [][]byte{f[:40]}, -1},
		{"after a close", false, [][]byte{testFrames(testFrame('x', 3), f[:40])}, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := testLoop(t, hub.Config{}, 1<<20)
			st := open(t, l)
			if tt.handshake {
				st.c.SetPhase(hub.PhaseHandshake)
			}
			var before, after []int64
			for _, b := range tt.reads {
				before = append(before, time.Now().UnixNano())
				feed(l, st, b)
				after = append(after, time.Now().UnixNano())
				time.Sleep(time.Millisecond)
			}
			start := st.c.FrameStart()
			switch {
			case tt.began < 0 && start != 0:
				t.Fatalf("frame start %d, want none", start)
			case tt.began >= 0 && (start < before[tt.began] || start > after[tt.began]):
				t.Fatalf("frame start %d, want within read %d [%d, %d]", start, tt.began, before[tt.began], after[tt.began])
			}
		})
	}
}

// TestInputAllowanceAfterAResume checks the input flow control of a read:
// over the bound while the hub is behind, the socket is paused instead of
// closed; once resumed, what came in at once is worked through up to 4 ×
// the bound; once it is, the bound applies again.
func TestInputAllowanceAfterAResume(t *testing.T) {
	const bound = 1000
	over := func(n int) []byte { return testFrame('p', n) }
	tests := []struct {
		name   string
		after  [][]byte // reads after the resume
		closed bool
	}{
		{"4 × the bound at the resume", [][]byte{over(4 * bound)}, false},
		{"more than 4 × the bound", [][]byte{over(4*bound + 1)}, true},
		{"over the bound once drained", [][]byte{over(2 * bound), over(bound + 1)}, true},
		{"within the bound once drained", [][]byte{over(2 * bound), over(bound)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, h := testLoop(t, hub.Config{MaxPendingPublications: 64}, bound)
			st := open(t, l)
			release := behind(t, h)
			feed(l, st, over(bound+1))
			if st.reason != 0 || !st.c.InputHeld() || !h.InputPaused(st.c) {
				t.Fatalf("over the bound while behind: closed for %v, held %v, paused %v; want paused, not closed",
					st.reason, st.c.InputHeld(), h.InputPaused(st.c))
			}
			close(release)
			waitFor(t, func() bool { return !h.InputPaused(st.c) })
			for _, b := range tt.after {
				feed(l, st, b)
			}
			if closed := st.reason == disconnect.InputOverflow; closed != tt.closed {
				t.Fatalf("closed for input_overflow: %v, want %v", closed, tt.closed)
			}
			if !tt.closed && st.c.InputHeld() {
				t.Fatal("all input worked through, but still held")
			}
		})
	}
}

// behind makes h's only worker fall behind (Hub.Behind) until the returned
// channel is closed: a publication waits behind a job that blocks it.
func behind(t *testing.T, h *hub.Hub) chan<- struct{} {
	t.Helper()
	sub := &testConn{Stream: NewStream(testSocket{new(atomic.Bool)})}
	sub.c = h.Register(sub)
	t.Cleanup(func() { h.Closed(sub.c) })
	h.Subscribe(sub.c, &hub.SubSpec{Pattern: "k", Key: "k"})
	release, blocked := make(chan struct{}), make(chan struct{})
	h.RunShared(func(hub.Writer) { close(blocked); <-release })
	<-blocked
	h.Publish(&hub.Publication{Key: "k", Topic: "k"})
	if !h.Behind() {
		t.Fatal("the hub is not behind")
	}
	return release
}

// TestReadOfCompleteFramesAllocatesNothing: a read of complete frames,
// replies flushed, allocates nothing of the reactor's.
func TestReadOfCompleteFramesAllocatesNothing(t *testing.T) {
	l, _ := testLoop(t, hub.Config{}, 1<<20)
	st := open(t, l)
	data := testFrames(testFrame('m', 40), testFrame('p', 3), testFrame('b', 30), testFrame('e', 30))
	r := &testReader{}
	if n := testing.AllocsPerRun(100, func() { r.fill(data); l.read(st, true, r) }); n != 0 {
		t.Fatalf("%.1f allocations per read", n)
	}
}

// BenchmarkRead measures one read of 100 complete frames of 40 bytes.
func BenchmarkRead(b *testing.B) {
	l, _ := testLoop(b, hub.Config{}, 1<<20)
	st := open(b, l)
	var data []byte
	for range 100 {
		data = append(data, testFrame('m', 40)...)
	}
	r := &testReader{}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r.fill(data)
		l.read(st, true, r)
	}
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
	}
}
