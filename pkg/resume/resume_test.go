package resume

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// nullTransport is a live connection that takes and forgets everything.
type nullTransport struct{}

func (nullTransport) Writev(b [][]byte) (int, error) {
	n := 0
	for _, x := range b {
		n += len(x)
	}
	return n, nil
}
func (nullTransport) CloseWrite() error      { return nil }
func (nullTransport) Close() error           { return nil }
func (nullTransport) Encoding() hub.Encoding { return wsframe.Encoding{} }

func newRegistry(t *testing.T, cfg Config) (*Registry, *hub.Hub, *clock) {
	t.Helper()
	clk := &clock{t: time.Unix(1_800_000_000, 0)}
	cfg.Now = clk.now
	var r *Registry
	h := hub.New(hub.Config{Workers: 2, OnClose: func(c *hub.Conn) { r.Closed(c) }})
	r = New(cfg, h)
	h.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return r, h, clk
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met")
		}
		time.Sleep(time.Millisecond)
	}
}

func publish(h *hub.Hub, key, id string) {
	p := &hub.Publication{Key: key, Topic: key}
	p.Msg = wire.Message{Topic: key, Data: []byte{0x01}, MsgID: id, From: "a", FromType: "actor"}
	h.Publish(p)
}

func TestIdentity(t *testing.T) {
	for _, tt := range []struct{ actor, client, want string }{
		{"bob", "", "bob\x00"},
		{"bob", "phone-1_A", "bob\x00phone-1_A"},
		{"bob", "ph one/é!", "bob\x00phone"},
		{"bob", strings.Repeat("x", 80), "bob\x00" + strings.Repeat("x", 64)},
	} {
		if got := Identity(tt.actor, tt.client); got != tt.want {
			t.Errorf("Identity(%q, %q) = %q, want %q", tt.actor, tt.client, got, tt.want)
		}
	}
}

// park attaches a live connection to id with one QoS 1 subscription to key
// and closes it, so that id is parked.
func park(t *testing.T, r *Registry, h *hub.Hub, id, key string) {
	t.Helper()
	c := h.Register(nullTransport{})
	if _, ok := r.Attach(c, id, false, 0); !ok {
		t.Fatalf("Attach(%q) refused", id)
	}
	spec := &hub.SubSpec{Pattern: key, Key: key, QoS: 1}
	h.Subscribe(c, spec)
	r.Subscribed(c, spec)
	h.Closed(c)
	waitUntil(t, func() bool { return !r.Resumable(c) })
}

func TestParkCollectsAndTakes(t *testing.T) {
	r, h, _ := newRegistry(t, Config{})
	park(t, r, h, "s", "k")
	waitUntil(t, func() bool { // the parked subscription is in place
		publish(h, "k", "probe")
		r.mu.Lock()
		pk := r.parked["s"]
		r.mu.Unlock()
		pk.t.mu.Lock()
		defer pk.t.mu.Unlock()
		return len(pk.t.frames) > 0
	})
	for _, id := range []string{"m1", "m2", "m3"} {
		publish(h, "k", id)
	}
	c := h.Register(nullTransport{})
	pk, ok := r.Attach(c, "s", true, 0)
	if !ok || pk == nil || len(pk.Specs) != 1 || pk.Specs[0].Pattern != "k" {
		t.Fatalf("Attach = %+v, %v", pk, ok)
	}
	got := make(chan []Missed, 1)
	r.Replay(c, pk, func(_ *hub.Conn, m []Missed, gap Gap) {
		if gap != (Gap{}) {
			t.Errorf("gap = %+v", gap)
		}
		got <- m
	})
	m := <-got
	var ids []string
	for _, x := range m {
		if x.MsgID != "probe" {
			ids = append(ids, x.MsgID)
		}
		if !strings.Contains(string(x.Payload), "isReplay") {
			t.Errorf("payload of %s without isReplay", x.MsgID)
		}
	}
	if strings.Join(ids, ",") != "m1,m2,m3" {
		t.Fatalf("replayed %v", ids)
	}
	if r.Len() != 0 {
		t.Fatalf("Len = %d after the take", r.Len())
	}
}

func TestInUseExpiryAndCap(t *testing.T) {
	r, h, clk := newRegistry(t, Config{Expiry: time.Minute, MaxSessions: 2})
	a, b := h.Register(nullTransport{}), h.Register(nullTransport{})
	if _, ok := r.Attach(a, "x", false, 0); !ok {
		t.Fatal("first connection refused")
	}
	if _, ok := r.Attach(b, "x", false, 0); ok {
		t.Fatal("second live connection of one identity attached")
	}
	if pk, ok := r.Attach(b, "x", true, 0); !ok || pk == nil || pk.reason != ReasonTakenOver || r.Resumable(a) {
		t.Fatalf("reconnect while the old connection looks live: %+v, %v", pk, ok)
	}
	park(t, r, h, "s1", "k")
	park(t, r, h, "s2", "k")
	clk.add(30 * time.Second)
	park(t, r, h, "s3", "k") // over MaxSessions: s1 goes
	if r.Len() != 2 {
		t.Fatalf("Len = %d, want 2", r.Len())
	}
	if pk, _ := r.Attach(h.Register(nullTransport{}), "s1", true, 0); pk != nil {
		t.Fatal("s1 resumed after being dropped for the cap")
	}
	clk.add(31 * time.Second) // s2 expired, s3 not yet
	r.Sweep(clk.now())
	if r.Len() != 1 {
		t.Fatalf("Len = %d after the sweep, want 1", r.Len())
	}
	clk.add(time.Minute)
	if pk, _ := r.Attach(h.Register(nullTransport{}), "s3", true, 0); pk != nil {
		t.Fatal("s3 resumed after its expiry")
	}
}

func TestDroppedTellsExpired(t *testing.T) {
	tr := &transport{max: 100}
	_, _ = tr.Writev([][]byte{{1, 'a', 0, 0, 0x80}})
	tr.drop()
	if m, gap := tr.take(); len(m) != 0 || gap.Reason != ReasonExpired {
		t.Fatalf("take after drop = %v, %+v", m, gap)
	}
}

func TestByteBound(t *testing.T) {
	tr := &transport{max: 10}
	n, _ := tr.Writev([][]byte{make([]byte, 6), make([]byte, 6), make([]byte, 4)})
	if n != 16 || len(tr.frames) != 1 || !tr.overflow {
		t.Fatalf("n=%d frames=%d overflow=%v", n, len(tr.frames), tr.overflow)
	}
}

// TestMessageBound: past MaxMessages (STORE_MAX_MESSAGES) a session keeps
// no more and says so, with how many it did not keep.
func TestMessageBound(t *testing.T) {
	tr := &transport{max: 1 << 20, maxN: 2}
	_, _ = tr.Writev([][]byte{{1, 'a', 0, 0, 0x80}, {1, 'b', 0, 0, 0x80}, {1, 'c', 0, 0, 0x80}, {1, 'd', 0, 0, 0x80}})
	m, gap := tr.take()
	if len(m) != 2 || m[0].MsgID != "a" || m[1].MsgID != "b" || gap != (Gap{Reason: ReasonOverflow, Lost: 2}) {
		t.Fatalf("take = %v, %+v; want a, b and %s with 2 lost", m, gap, ReasonOverflow)
	}
}

// TestMaxAgeCapsExpiry: a token's own longer expiry is cut to MaxAge
// (STORE_TTL_SECONDS): its session is not resumed past it.
func TestMaxAgeCapsExpiry(t *testing.T) {
	r, h, clk := newRegistry(t, Config{Expiry: time.Minute, MaxAge: 2 * time.Minute})
	c := h.Register(nullTransport{})
	c.SetPhase(hub.PhaseAuthed)
	if _, ok := r.Attach(c, "s", false, time.Hour); !ok {
		t.Fatal("not attached")
	}
	r.Subscribed(c, &hub.SubSpec{Pattern: "k", Key: "k", QoS: 1})
	h.Closed(c)
	waitUntil(t, func() bool { return r.Len() == 1 })
	clk.add(2*time.Minute + time.Second)
	if pk, _ := r.Attach(h.Register(nullTransport{}), "s", true, time.Hour); pk != nil {
		t.Fatal("resumed past MaxAge")
	}
}

// TestExpirySweptByTheHub: with no connect or drop to sweep it, an expired
// session is ended by the hub's own sweep (its parked connection goes idle
// at the expiry) and let go of.
func TestExpirySweptByTheHub(t *testing.T) {
	var r *Registry
	h := hub.New(hub.Config{Workers: 1, Tick: 10 * time.Millisecond, IdleTimeout: 50 * time.Millisecond,
		OnClose: func(c *hub.Conn) { r.Closed(c) }})
	r = New(Config{Expiry: 300 * time.Millisecond, IdleTimeout: 50 * time.Millisecond}, h)
	h.Start()
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	c := h.Register(nullTransport{})
	c.SetPhase(hub.PhaseAuthed)
	r.Attach(c, "s", false, 0)
	spec := &hub.SubSpec{Pattern: "k", Key: "k", QoS: 1}
	h.Subscribe(c, spec)
	r.Subscribed(c, spec)
	parkedAt := time.Now()
	h.Closed(c)
	waitUntil(t, func() bool { return r.Len() == 1 })
	time.Sleep(100 * time.Millisecond)
	if r.Len() != 1 {
		t.Fatal("dropped before its expiry")
	}
	waitUntil(t, func() bool { return r.Len() == 0 })
	if d := time.Since(parkedAt); d < 300*time.Millisecond {
		t.Fatalf("dropped after %v, before the expiry", d)
	}
}

// fifoLen is the number of places in r's fifo.
func fifoLen(r *Registry) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.fifo)
}

// TestExpiredSessionsLeaveNothing: sessions that expire through the hub's
// sweep, on a broker where nothing else connects, leave no place behind
// in the parking order (each place pinned its session's connection,
// transport and subscriptions until the next attach: about 1 KB per
// expired session in bench/RESULTS.md's 100,000-session run).
func TestExpiredSessionsLeaveNothing(t *testing.T) {
	var r *Registry
	h := hub.New(hub.Config{Workers: 2, Tick: 10 * time.Millisecond, IdleTimeout: 50 * time.Millisecond,
		OnClose: func(c *hub.Conn) { r.Closed(c) }})
	r = New(Config{Expiry: 3 * time.Second, IdleTimeout: 50 * time.Millisecond}, h)
	h.Start()
	t.Cleanup(func() { _ = h.Shutdown(context.Background()) })
	for i := range 200 {
		park(t, r, h, "s"+strconv.Itoa(i), "k")
	}
	if n := fifoLen(r); n != 200 {
		t.Fatalf("%d places for 200 parked sessions", n)
	}
	waitUntil(t, func() bool { return r.Len() == 0 })
	waitUntil(t, func() bool { return fifoLen(r) == 0 })
}

// TestResumedSessionsLeaveAtMostTwiceTheKept: sessions that end out of
// parking order (resumed here, while the oldest is kept for an hour) leave
// places that are dropped once they outnumber the kept sessions.
func TestResumedSessionsLeaveAtMostTwiceTheKept(t *testing.T) {
	r, h, _ := newRegistry(t, Config{Expiry: time.Hour})
	for i := range 300 {
		park(t, r, h, "s"+strconv.Itoa(i), "k")
	}
	for i := 1; i < 300; i++ { // every one but the oldest comes back
		if pk, ok := r.Attach(h.Register(nullTransport{}), "s"+strconv.Itoa(i), true, 0); !ok || pk == nil {
			t.Fatalf("s%d not resumed", i)
		}
	}
	if r.Len() != 1 {
		t.Fatalf("Len = %d, want the oldest only", r.Len())
	}
	if n := fifoLen(r); n > 2*1+64 {
		t.Fatalf("%d places kept for 1 parked session, want at most %d", n, 2*1+64)
	}
}

// TestLostInFlightStillCollects: a session whose unacked deliveries from
// before the drop overflowed the tap's bounds says backlog_limit, and
// still keeps everything published while it is away (the flag used to be
// the byte bound's, which stops keeping).
func TestLostInFlightStillCollects(t *testing.T) {
	tr := &transport{max: 1 << 20, lost: true}
	_, _ = tr.Writev([][]byte{{1, 'a', 0, 0, 0x80}, {1, 'b', 0, 0, 0x80}})
	if m, gap := tr.take(); len(m) != 2 || gap != (Gap{Reason: ReasonOverflow}) {
		t.Fatalf("take = %v, %+v; want both and %s, lost not counted", m, gap, ReasonOverflow)
	}
}

// TestNothingKeptWithoutSubscriptions: a resumable connection that closes
// holding no subscription (a publisher) leaves no session behind.
func TestNothingKeptWithoutSubscriptions(t *testing.T) {
	r, h, _ := newRegistry(t, Config{})
	c := h.Register(nullTransport{})
	c.SetPhase(hub.PhaseAuthed)
	r.Attach(c, "pub", false, 0)
	h.Closed(c)
	waitUntil(t, func() bool { return !r.Resumable(c) })
	if r.Len() != 0 {
		t.Fatalf("%d sessions kept for a connection without subscriptions", r.Len())
	}
}
