package sessionkv

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/history"
)

// connect starts a networked JetStream server for t and connects to it.
func connect(t *testing.T) *nats.Conn {
	t.Helper()
	nc, _ := natstest.ConnectJetStream(t)
	return nc
}

// open opens a Store on nc with cfg, closed when t ends.
func open(t *testing.T, nc *nats.Conn, cfg Config) *Store {
	t.Helper()
	cfg.Conn = nc
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func load(t *testing.T, s *Store, id string) (Record, bool) {
	t.Helper()
	r, ok, err := s.Load(ctxT(t), id)
	if err != nil {
		t.Fatalf("Load(%q): %v", id, err)
	}
	return r, ok
}

// sameRecord reports whether a and b are equal, times compared with
// Equal (JSON keeps neither the monotonic reading nor the location).
func sameRecord(a, b Record) bool {
	if !a.Position.Equal(b.Position) || !a.Saved.Equal(b.Saved) {
		return false
	}
	a.Position, a.Saved, b.Position, b.Saved = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}

func sample(id, node string) Record {
	now := time.Now()
	return Record{ID: id, Node: node, Live: true,
		Specs: []Spec{
			{Pattern: "app/room/msgs", Key: "app/room/msgs"},
			{Pattern: "app/+/typing", Key: "app/+/typing", Wildcard: true, Filters: []string{"a=1", "é"}, QoS: 1,
				LoadBalance: true, Group: "g1"},
			{Pattern: "ünï/#", Key: "ünï/#", Wildcard: true, QoS: 2},
		},
		Position: now.Add(-time.Second), Saved: now, Expiry: 90 * time.Second}
}

func TestSaveLoadKeepsEveryField(t *testing.T) {
	nc := connect(t)
	s := open(t, nc, Config{})
	if s.Bucket() != "KRAKEN_SESSIONS" {
		t.Fatalf("bucket %q", s.Bucket())
	}
	recs := []Record{
		sample("actor\x00client-1", "node-a"),
		sample("актёр\x00クライアント", "node.b/*>"),
		{ID: "", Node: "n"},             // zero times, no specs
		{ID: "\xff\xfe\x00", Node: "n"}, // not UTF-8: stored replaced, Load gives the ID asked for
		{ID: "x\x00\x00y", Node: "n", Live: false, Specs: []Spec{}, Position: time.Unix(1, 2), Saved: time.Unix(3, 4).UTC(), Expiry: time.Nanosecond},
	}
	if err := s.Save(ctxT(t), recs); err != nil {
		t.Fatal(err)
	}
	for _, want := range recs {
		got, ok := load(t, s, want.ID)
		if !ok {
			t.Fatalf("Load(%q): none", want.ID)
		}
		if want.Specs == nil || len(want.Specs) == 0 {
			want.Specs, got.Specs = nil, nil // JSON null and [] both decode to an empty list
		}
		if !sameRecord(got, want) {
			t.Errorf("Load(%q) = %+v, want %+v", want.ID, got, want)
		}
	}
	if r := recs[0]; !r.Expires().Equal(r.Saved.Add(90 * time.Second)) {
		t.Errorf("Expires = %v", r.Expires())
	}
	// Saving again replaces.
	r := recs[0]
	r.Node, r.Live, r.Specs = "node-c", false, r.Specs[:1]
	if err := s.Save(ctxT(t), []Record{r}); err != nil {
		t.Fatal(err)
	}
	if got, ok := load(t, s, r.ID); !ok || !sameRecord(got, r) {
		t.Errorf("after a second Save: %+v, %v", got, ok)
	}
}

func TestSaveOfManyRecordsInOneCall(t *testing.T) {
	nc := connect(t)
	s := open(t, nc, Config{Prefix: "my.app"})
	if s.Bucket() != "my_app_SESSIONS" {
		t.Fatalf("bucket %q", s.Bucket())
	}
	recs := make([]Record, 2000)
	for i := range recs {
		recs[i] = sample(fmt.Sprintf("actor%d\x00client", i), fmt.Sprint("node", i%3))
	}
	start := time.Now()
	if err := s.Save(ctxT(t), recs); err != nil {
		t.Fatal(err)
	}
	t.Logf("Save of %d records: %v", len(recs), time.Since(start))
	for _, i := range []int{0, 1, 999, 1998, 1999} {
		got, ok := load(t, s, recs[i].ID)
		if !ok || !sameRecord(got, recs[i]) {
			t.Errorf("record %d: %+v, %v", i, got, ok)
		}
	}
	st, err := s.js.Stream(ctxT(t), "KV_"+s.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := st.Info(ctxT(t)); err != nil || info.State.Msgs != 2000 {
		t.Fatalf("stream state: %+v, %v", info.State, err)
	}
	// A context that has ended.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Save(done, recs[:10]); err == nil {
		t.Error("Save with an ended context: no error")
	}
}

func TestDeleteAndLoadMissing(t *testing.T) {
	nc := connect(t)
	s := open(t, nc, Config{})
	if _, ok := load(t, s, "nobody"); ok {
		t.Fatal("Load of a record never saved: found")
	}
	if err := s.Delete(ctxT(t), "nobody"); err != nil {
		t.Fatalf("Delete of a missing record: %v", err)
	}
	r := sample("a\x00b", "n1")
	if err := s.Save(ctxT(t), []Record{r, sample("a\x00c", "n1")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctxT(t), r.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := load(t, s, r.ID); ok {
		t.Fatal("Load after Delete: found")
	}
	if _, ok := load(t, s, "a\x00c"); !ok {
		t.Fatal("the other record is gone")
	}
	if err := s.Delete(ctxT(t), r.ID); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	// Saved again after a Delete.
	if err := s.Save(ctxT(t), []Record{r}); err != nil {
		t.Fatal(err)
	}
	if _, ok := load(t, s, r.ID); !ok {
		t.Fatal("Load after saving again: none")
	}
	s.Close()
	if _, _, err := s.Load(ctxT(t), r.ID); err != ErrClosed {
		t.Fatalf("Load after Close: %v", err)
	}
	if err := s.Save(ctxT(t), []Record{r}); err != ErrClosed {
		t.Fatalf("Save after Close: %v", err)
	}
}

func TestTakeOverReachesTheNamedNodeOnly(t *testing.T) {
	nc := connect(t)
	s := open(t, nc, Config{})
	// Another connection, as another node.
	nc2, err := nats.Connect(nc.ConnectedUrl())
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	s2 := open(t, nc2, Config{})

	var mu sync.Mutex
	got := map[string][]string{}
	listen := func(st *Store, node string) func() {
		stop, err := st.Listen(node, func(id string) {
			mu.Lock()
			got[node] = append(got[node], id)
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		return stop
	}
	stopA := listen(s, "node.a")
	listen(s2, "node>b")
	// Sent right after Listen, from the other connection.
	ids := []string{"x\x001", "ü\x002", ""}
	for _, id := range ids {
		if err := s2.TakeOver("node.a", id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TakeOver("node>b", "y"); err != nil {
		t.Fatal(err)
	}
	if err := s.TakeOver("node-c", "z"); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"node.a": ids, "node>b": {"y"}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		done := reflect.DeepEqual(got, want)
		snapshot := fmt.Sprintf("%q", got)
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("notices %s, want %q", snapshot, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s.TakeoverSubject("node.a") != "kraken.session.takeover.node%2Ea" {
		t.Errorf("subject %q", s.TakeoverSubject("node.a"))
	}
	// After stop, no more notices.
	stopA()
	stopA()
	if err := s2.TakeOver("node.a", "late"); err != nil {
		t.Fatal(err)
	}
	if err := s2.TakeOver("node>b", "last"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n, a := len(got["node>b"]), len(got["node.a"])
		mu.Unlock()
		if a != len(ids) {
			t.Fatalf("notice after stop: %q", got["node.a"])
		}
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("second notice to node>b never came")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTTLRemovesRecordsNotSavedAgain(t *testing.T) {
	nc := connect(t)
	s := open(t, nc, Config{TTL: time.Second})
	if err := s.Save(ctxT(t), []Record{sample("old", "n")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := load(t, s, "old"); !ok {
		t.Fatal("not saved")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := load(t, s, "old"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("record older than the TTL still there")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestEmbeddedServerKeepsRecordsOverARestart(t *testing.T) {
	dir := t.TempDir()
	e, err := history.Embedded(dir, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	s := open(t, e.Conn, Config{})
	r := sample("actor\x00client", "solo")
	if err := s.Save(ctxT(t), []Record{r}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	e.Close()

	e, err = history.Embedded(dir, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s = open(t, e.Conn, Config{})
	got, ok := load(t, s, r.ID)
	if !ok || !sameRecord(got, r) {
		t.Fatalf("after restart: %+v, %v", got, ok)
	}
}

func TestOpenRefusesNoConn(t *testing.T) {
	if _, err := Open(context.Background(), Config{}); err == nil {
		t.Fatal("no error")
	}
}
