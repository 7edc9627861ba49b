package history

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
)

// connect starts a networked JetStream server for t and connects to it.
func connect(t *testing.T) (*nats.Conn, func()) {
	t.Helper()
	nc, srv := natstest.ConnectJetStream(t)
	return nc, func() { srv.Shutdown(); srv.WaitForShutdown() }
}

// open opens a History on nc with cfg, closed when t ends.
func open(t *testing.T, nc *nats.Conn, cfg Config) *History {
	t.Helper()
	cfg.Conn = nc
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

// settle waits until no append of h waits for its acknowledgement and
// fails t if one failed.
func settle(t testing.TB, h *History) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.Stats().Pending > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("appends still pending: %+v", h.Stats())
		}
		time.Sleep(time.Millisecond)
	}
	if s := h.Stats(); s.Errors > 0 || s.Dropped > 0 {
		t.Fatalf("appends failed: %+v", s)
	}
}

func read(t *testing.T, h *History, topics []string, after uint64, limit int) ([]Entry, ReadResult) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	entries, res, err := h.Read(ctx, topics, after, limit)
	if err != nil {
		t.Fatalf("Read(%q, %d, %d): %v", topics, after, limit, err)
	}
	return entries, res
}

// topicsOf lists the topics and payloads of entries, checking that their
// sequences increase.
func topicsOf(t *testing.T, entries []Entry) []string {
	t.Helper()
	var out []string
	for i, e := range entries {
		if i > 0 && e.Seq <= entries[i-1].Seq {
			t.Fatalf("entry %d: seq %d after %d", i, e.Seq, entries[i-1].Seq)
		}
		if e.Time.IsZero() || time.Since(e.Time) > time.Minute {
			t.Fatalf("entry %d: time %v", i, e.Time)
		}
		out = append(out, e.Topic+"="+string(e.Data))
	}
	return out
}

func TestReadReturnsTheTopicsAskedForOldestFirst(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	appends := []string{"app/r1/msgs", "app/r2/msgs", "app/r1/typing", "other/x/msgs", "app/r1", "app/r1/msgs/deep", "app/r1/msgs", "a.b/*/>"}
	for i, topic := range appends {
		if !h.Append(topic, fmt.Sprintf("id%d", i), []byte(fmt.Sprint(i))) {
			t.Fatalf("Append(%q) dropped", topic)
		}
	}
	settle(t, h)
	tests := []struct {
		topics []string
		want   []string
	}{
		{[]string{"app/r1/msgs"}, []string{"app/r1/msgs=0", "app/r1/msgs=6"}},
		{[]string{"app/+/msgs"}, []string{"app/r1/msgs=0", "app/r2/msgs=1", "app/r1/msgs=6"}},
		{[]string{"app/r1/#"}, []string{"app/r1/msgs=0", "app/r1/typing=2", "app/r1=4", "app/r1/msgs/deep=5", "app/r1/msgs=6"}},
		{[]string{"+/+/msgs", "app/r1"}, []string{"app/r1/msgs=0", "app/r2/msgs=1", "other/x/msgs=3", "app/r1=4", "app/r1/msgs=6"}},
		// Overlapping topics: each entry once.
		{[]string{"app/#", "app/r1/msgs", "app/+/msgs", "app/#"}, []string{"app/r1/msgs=0", "app/r2/msgs=1", "app/r1/typing=2", "app/r1=4", "app/r1/msgs/deep=5", "app/r1/msgs=6"}},
		{[]string{"a.b/*/>"}, []string{"a.b/*/>=7"}},
		{[]string{"a.b/+/#"}, []string{"a.b/*/>=7"}},
		{[]string{"#"}, []string{"app/r1/msgs=0", "app/r2/msgs=1", "app/r1/typing=2", "other/x/msgs=3", "app/r1=4", "app/r1/msgs/deep=5", "app/r1/msgs=6", "a.b/*/>=7"}},
		{[]string{"nothing/here"}, nil},
	}
	for _, tt := range tests {
		entries, res := read(t, h, tt.topics, 0, 100)
		if got := topicsOf(t, entries); !slices.Equal(got, tt.want) {
			t.Errorf("Read(%q) = %q, want %q", tt.topics, got, tt.want)
		}
		if !res.Complete || res.Reason != "" || res.Lost != 0 || res.Next != 0 || res.Last != uint64(len(appends)) {
			t.Errorf("Read(%q): %+v, want complete up to %d", tt.topics, res, len(appends))
		}
	}
	entries, _ := read(t, h, []string{"app/r1/msgs"}, 0, 100)
	if entries[0].Seq != 1 || entries[1].Seq != 7 || entries[0].MsgID != "id0" || entries[1].MsgID != "id6" {
		t.Errorf("entries %+v: want seqs 1 and 7, ids id0 and id6", entries)
	}
}

func TestReadPagesWithAfterAndNext(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	for i := 0; i < 30; i++ {
		h.Append("a/b/c", "", []byte(fmt.Sprint(i)))
		h.Append("x/y/z", "", []byte("other"))
	}
	settle(t, h)
	var all []Entry
	after, pages := uint64(0), 0
	for {
		entries, res := read(t, h, []string{"a/+/c"}, after, 7)
		pages++
		if !res.Complete || res.Last != 60 {
			t.Fatalf("page %d: %+v", pages, res)
		}
		all = append(all, entries...)
		if res.Next == 0 {
			break
		}
		if len(entries) != 7 || res.Next != entries[6].Seq {
			t.Fatalf("page %d: %d entries, Next %d", pages, len(entries), res.Next)
		}
		after = res.Next
	}
	if pages != 5 || len(all) != 30 {
		t.Fatalf("%d pages, %d entries; want 5 and 30", pages, len(all))
	}
	for i, e := range all {
		if string(e.Data) != fmt.Sprint(i) || e.Seq != uint64(2*i+1) {
			t.Fatalf("entry %d: seq %d data %q", i, e.Seq, e.Data)
		}
	}
	// From a position: what follows it only.
	entries, res := read(t, h, []string{"a/b/c"}, 40, 100)
	if len(entries) != 10 || entries[0].Seq != 41 || !res.Complete || res.Next != 0 {
		t.Fatalf("after 40: %d entries from %v, %+v", len(entries), entries[0].Seq, res)
	}
	// At the end: nothing, complete.
	entries, res = read(t, h, []string{"a/b/c"}, 60, 100)
	if len(entries) != 0 || !res.Complete || res.Last != 60 {
		t.Fatalf("after 60: %d entries, %+v", len(entries), res)
	}
	// A limit of exactly what is left: no Next.
	entries, res = read(t, h, []string{"a/b/c"}, 40, 10)
	if len(entries) != 10 || res.Next != 0 {
		t.Fatalf("after 40, limit 10: %d entries, %+v", len(entries), res)
	}
}

func TestAppendWithTheSameMsgIDIsStoredOnce(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	h.Append("a/b", "m1", []byte("first"))
	h.Append("a/b", "m1", []byte("again"))
	h.Append("a/b", "m2", []byte("second"))
	h.Append("a/b", "", []byte("no id"))
	h.Append("a/b", "", []byte("no id"))
	settle(t, h)
	entries, _ := read(t, h, []string{"a/b"}, 0, 100)
	if got := topicsOf(t, entries); !slices.Equal(got, []string{"a/b=first", "a/b=second", "a/b=no id", "a/b=no id"}) {
		t.Fatalf("entries %q", got)
	}
	if s := h.Stats(); s.Appended != 5 || s.Sent != 5 || s.Acked != 5 {
		t.Fatalf("stats %+v: want 5 appended and acknowledged", s)
	}
}

func TestAppendCopiesData(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	buf := []byte("one")
	h.Append("a/b", "", buf)
	copy(buf, "two")
	settle(t, h)
	entries, _ := read(t, h, []string{"a/b"}, 0, 10)
	if len(entries) != 1 || string(entries[0].Data) != "one" {
		t.Fatalf("entries %+v", entries)
	}
}

func TestMaxMsgsPerTopicIsReported(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{MaxMsgsPerTopic: 10})
	h.Append("x/other", "", []byte("o")) // seq 1: the stream's first sequence stays 1
	for i := 0; i < 25; i++ {
		h.Append("t/a", "", []byte(fmt.Sprint(i))) // seqs 2..26; 2..16 removed by the bound
	}
	settle(t, h)
	check := func(topics []string, after uint64, wantN int, wantFirst uint64, complete bool, lost int) {
		t.Helper()
		entries, res := read(t, h, topics, after, 100)
		if len(entries) != wantN || wantN > 0 && entries[0].Seq != wantFirst {
			t.Fatalf("Read(%q, %d): %d entries (%+v), want %d from %d", topics, after, len(entries), entries, wantN, wantFirst)
		}
		wantReason := ""
		if !complete {
			wantReason = ReasonLimit
		}
		if res.Complete != complete || res.Reason != wantReason || res.Lost != lost || res.Last != 26 {
			t.Fatalf("Read(%q, %d): %+v, want complete %v, lost %d", topics, after, res, complete, lost)
		}
	}
	check([]string{"t/a"}, 0, 10, 17, false, -1)
	check([]string{"t/+"}, 10, 10, 17, false, -1) // 11..16 were t/a's
	check([]string{"t/a"}, 16, 10, 17, true, 0)   // the position is covered: nothing lost after it
	check([]string{"t/a"}, 20, 6, 21, true, 0)
	check([]string{"x/other"}, 0, 1, 1, true, 0) // below its bound: complete
	check([]string{"#"}, 0, 11, 1, false, 15)    // every topic: counted
	check([]string{"#"}, 16, 10, 17, true, 0)
	check([]string{"#"}, 10, 10, 17, false, 6)
}

func TestMaxMsgsPerTopicAtTheFrontIsReported(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{MaxMsgsPerTopic: 10})
	for i := 0; i < 25; i++ {
		h.Append("t/a", "", []byte(fmt.Sprint(i)))
	}
	settle(t, h)
	entries, res := read(t, h, []string{"t/a"}, 0, 100)
	if len(entries) != 10 || entries[0].Seq != 16 || string(entries[0].Data) != "15" {
		t.Fatalf("%d entries from %+v", len(entries), entries)
	}
	if res.Complete || res.Reason != ReasonLimit || res.Lost != -1 {
		t.Fatalf("%+v: want history_limit, lost unknown", res)
	}
	if _, res = read(t, h, []string{"#"}, 0, 100); res.Complete || res.Lost != 15 {
		t.Fatalf("#: %+v, want 15 lost", res)
	}
	if _, res = read(t, h, []string{"t/a"}, 15, 100); !res.Complete {
		t.Fatalf("after 15: %+v, want complete", res)
	}
	// A page stopped by limit speaks of the entries up to Next.
	entries, res = read(t, h, []string{"#"}, 0, 4)
	if len(entries) != 4 || res.Next != 19 || res.Lost != 15 {
		t.Fatalf("# limit 4: %d entries, %+v", len(entries), res)
	}
}

// appendAndAgeOut appends n entries to a/b and waits until the stream's
// MaxAge has removed every entry.
func appendAndAgeOut(t *testing.T, h *History, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		h.Append("a/b", "", []byte("old"))
	}
	settle(t, h)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := h.st.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.Msgs == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("entries older than MaxAge still stored: %+v", info.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestMaxAgeIsReported(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{MaxAge: time.Second})
	appendAndAgeOut(t, h, 5)
	entries, res := read(t, h, []string{"a/b"}, 0, 100)
	if len(entries) != 0 || res.Complete || res.Reason != ReasonLimit || res.Lost != -1 || res.Last != 5 {
		t.Fatalf("empty stream: %d entries, %+v", len(entries), res)
	}
	h.Append("a/b", "", []byte("new"))
	h.Append("c/d", "", []byte("new"))
	settle(t, h)
	entries, res = read(t, h, []string{"a/b"}, 0, 100)
	if got := topicsOf(t, entries); !slices.Equal(got, []string{"a/b=new"}) || entries[0].Seq != 6 || res.Complete || res.Reason != ReasonLimit {
		t.Fatalf("after expiry: %q, %+v", got, res)
	}
	if _, res = read(t, h, []string{"#"}, 2, 100); res.Lost != 3 {
		t.Fatalf("# after 2: %+v, want 3 lost", res)
	}
	if _, res = read(t, h, []string{"a/b"}, 5, 100); !res.Complete {
		t.Fatalf("after 5: %+v, want complete", res)
	}
}

func TestReadPastTheLastSequenceIsAReset(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	h.Append("a/b", "", []byte("x"))
	settle(t, h)
	entries, res := read(t, h, []string{"a/b"}, 7, 100)
	if len(entries) != 0 || res.Complete || res.Reason != ReasonReset || res.Lost != -1 || res.Last != 1 {
		t.Fatalf("%d entries, %+v", len(entries), res)
	}
}

func TestReadRefusesBadArguments(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	if _, _, err := h.Read(context.Background(), []string{"a"}, 0, 0); err == nil {
		t.Error("limit 0: no error")
	}
	if _, _, err := h.Read(context.Background(), nil, 0, 10); err == nil {
		t.Error("no topics: no error")
	}
}

func TestLastSeqAndStats(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	ctx := context.Background()
	if seq, err := h.LastSeq(ctx); err != nil || seq != 0 {
		t.Fatalf("LastSeq of a new stream = %d, %v", seq, err)
	}
	for i := 0; i < 3; i++ {
		h.Append("a/b", "", []byte("0123456789"))
	}
	settle(t, h)
	if seq, err := h.LastSeq(ctx); err != nil || seq != 3 {
		t.Fatalf("LastSeq = %d, %v; want 3", seq, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := h.Stats()
		if s.StoredMsgs == 3 && s.StoredBytes > 30 && !s.StoredAt.IsZero() {
			if s.Appended != 3 || s.Sent != 3 || s.Acked != 3 || s.Dropped != 0 || s.Errors != 0 || s.Pending != 0 {
				t.Fatalf("stats %+v", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats never show the stored entries: %+v", s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.Close()
	if h.Append("a/b", "", nil) || h.Stats().Dropped != 1 {
		t.Fatalf("Append after Close: %+v", h.Stats())
	}
}

func TestOpenUpdatesTheBounds(t *testing.T) {
	nc, _ := connect(t)
	open(t, nc, Config{Prefix: "p.x"})
	h := open(t, nc, Config{Prefix: "p.x", MaxMsgsPerTopic: 5, MaxAge: time.Minute})
	info, err := h.st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := info.Config
	if c.Name != "p_x_HISTORY" || c.Subjects[0] != "p.x.h.>" || c.MaxMsgsPerSubject != 5 || c.MaxAge != time.Minute ||
		c.Duplicates != time.Minute || c.MaxBytes != DefaultMaxBytes {
		t.Fatalf("stream config %+v", c)
	}
	if Stream("") != "KRAKEN_HISTORY" || Stream("kraken") != "KRAKEN_HISTORY" {
		t.Fatal("default stream name")
	}
}

// Append never waits for a server that is gone: past MaxPending it drops,
// counts, and logs the drops once per 10 s.
func TestAppendNeverBlocksWithoutTheServer(t *testing.T) {
	nc, stop := connect(t)
	core, logs := observer.New(zap.WarnLevel)
	h := open(t, nc, Config{MaxPending: 100, Logger: zap.New(core)})
	h.closeWait = 200 * time.Millisecond
	stop()
	deadline := time.Now().Add(5 * time.Second)
	for nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("still connected")
		}
		time.Sleep(5 * time.Millisecond)
	}
	const n = 10000
	data := make([]byte, 100)
	start := time.Now()
	var slowest time.Duration
	for i := 0; i < n; i++ {
		t0 := time.Now()
		h.Append("a/b", fmt.Sprint(i), data)
		slowest = max(slowest, time.Since(t0))
	}
	took := time.Since(start)
	t.Logf("%d appends in %v (slowest %v): %+v", n, took, slowest, h.Stats())
	if took > 2*time.Second || slowest > 100*time.Millisecond {
		t.Fatalf("appends took %v, slowest %v", took, slowest)
	}
	// The writer publishes MaxPending entries (into the connection's
	// reconnect buffer), then waits for acknowledgements with the next one
	// in hand; Append queues MaxPending more and drops the rest.
	deadline = time.Now().Add(5 * time.Second)
	for h.Stats().Sent < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: want 100 sent", h.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	s := h.Stats()
	if s.Sent != 100 || s.Appended < 100 || s.Appended > 201 || s.Dropped != n-s.Appended || s.Pending != int(s.Appended) {
		t.Fatalf("stats %+v: want 100 sent, at most 101 more queued or held, the rest dropped", s)
	}
	if got := logs.FilterMessage("history entries dropped").Len(); got != 1 {
		t.Fatalf("%d log lines about the %d drops, want 1 (at most one per 10 s)", got, s.Dropped)
	}
	start = time.Now()
	h.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %v", took)
	}
	if s := h.Stats(); s.Errors != 100 || s.Dropped != n-100 || s.Pending != 0 {
		t.Fatalf("after Close: %+v, want the 100 sent counted as errors, the rest as dropped", s)
	}
}

func TestSubsetOf(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"k.a", "k.a", true},
		{"k.a", "k.*", true},
		{"k.*", "k.a", false},
		{"k.a.b", "k.>", true},
		{"k", "k.>", false},
		{"k.>", "k.>", true},
		{"k.>", "k.*", false},
		{"k.*.c", "k.a.*", false},
		{"k.a", "k.a.b", false},
		{"k.a.b", "k.a", false},
		{"k.*", "k.>", true},
	}
	for _, tt := range tests {
		if got := subsetOf(tt.a, tt.b); got != tt.want {
			t.Errorf("subsetOf(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}

// A client may come back on another node: entries appended through one
// server of a cluster are read through another, the stream replicated on
// three.
func TestReadOnAnotherServerOfTheCluster(t *testing.T) {
	servers := natstest.Cluster(t, 3)
	var hs []*History
	for _, i := range []int{0, 2} {
		nc, err := nats.Connect(servers[i].ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		hs = append(hs, open(t, nc, Config{Replicas: 3}))
	}
	for i := 0; i < 20; i++ {
		hs[0].Append("app/room/msgs", fmt.Sprint("m", i), []byte(fmt.Sprint(i)))
	}
	settle(t, hs[0])
	last, err := hs[1].LastSeq(context.Background())
	if err != nil || last != 20 {
		t.Fatalf("LastSeq on the other server = %d, %v", last, err)
	}
	entries, res := read(t, hs[1], []string{"app/+/msgs"}, 5, 100)
	if len(entries) != 15 || entries[0].Seq != 6 || string(entries[14].Data) != "19" || !res.Complete {
		t.Fatalf("%d entries, %+v", len(entries), res)
	}
}

// TestMaxPendingBytesBoundsTheMemoryHeld: with the server gone, the
// entries held in memory (queued, or sent and waiting for their
// acknowledgement) never pass MaxPendingBytes, whatever their count: past
// it Append drops.
func TestMaxPendingBytesBoundsTheMemoryHeld(t *testing.T) {
	nc, stop := connect(t)
	h := open(t, nc, Config{MaxPending: 1000, MaxPendingBytes: 10_000})
	h.closeWait = 200 * time.Millisecond
	stop()
	deadline := time.Now().Add(5 * time.Second)
	for nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("still connected")
		}
		time.Sleep(5 * time.Millisecond)
	}
	data := make([]byte, 1000)
	kept := 0
	for i := 0; i < 50; i++ {
		if h.Append("a/b", fmt.Sprint(i), data) {
			kept++
		}
	}
	if kept != 10 || h.Stats().Dropped != 40 || h.held.Load() != 10_000 {
		t.Fatalf("kept %d, stats %+v, held %d bytes: want 10 kept (10,000 bytes), 40 dropped", kept, h.Stats(), h.held.Load())
	}
}

// TestCountSaysWhatAReadLeftOut: Count gives the entries of the topics in
// (after, last] that a Read stopped at its limit did not return, exactly
// up to its max, and says when there are more.
func TestCountSaysWhatAReadLeftOut(t *testing.T) {
	nc, _ := connect(t)
	h := open(t, nc, Config{})
	for i := 0; i < 30; i++ {
		h.Append("a/b/c", "", []byte(fmt.Sprint(i)))
		h.Append("x/y/z", "", []byte("other"))
	}
	settle(t, h)
	_, res := read(t, h, []string{"a/+/c"}, 0, 7)
	if res.Next == 0 || res.Last != 60 {
		t.Fatalf("read: %+v", res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, tt := range []struct {
		topics     []string
		after      uint64
		last       uint64
		max, wantN int
		wantExact  bool
	}{
		{[]string{"a/+/c"}, res.Next, res.Last, 1000, 23, true}, // what the Read left
		{[]string{"a/b/c", "x/#"}, 0, 60, 1000, 60, true},
		{[]string{"a/b/c"}, 0, 20, 1000, 10, true}, // only up to last
		{[]string{"a/b/c"}, 0, 60, 5, 5, false},    // more than max
		{[]string{"nothing/here"}, 0, 60, 1000, 0, true},
		{[]string{"a/b/c"}, 60, 60, 1000, 0, true},
	} {
		n, exact, err := h.Count(ctx, tt.topics, tt.after, tt.last, tt.max)
		if err != nil || n != tt.wantN || exact != tt.wantExact {
			t.Errorf("Count(%q, %d, %d, %d) = %d, %v, %v; want %d, %v", tt.topics, tt.after, tt.last, tt.max, n, exact, err, tt.wantN, tt.wantExact)
		}
	}
}
