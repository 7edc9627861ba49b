package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func embedded(tb testing.TB, dir string) *EmbeddedServer {
	tb.Helper()
	e, err := Embedded(dir, zaptest.NewLogger(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

func TestEmbeddedHistorySurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	e := embedded(t, dir)
	if e.Server.Addr() != nil {
		t.Fatalf("embedded server listens on %v", e.Server.Addr())
	}
	h := open(t, e.Conn, Config{})
	for i := 0; i < 100; i++ {
		h.Append(fmt.Sprintf("app/room%d/msgs", i%3), fmt.Sprint("m", i), []byte(fmt.Sprint(i)))
	}
	settle(t, h)
	h.Close()
	e.Close()
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatalf("no store under %s: %v", dir, err)
	}

	e = embedded(t, dir)
	defer e.Close()
	h = open(t, e.Conn, Config{})
	entries, res := read(t, h, []string{"app/+/msgs"}, 0, 1000)
	if len(entries) != 100 || !res.Complete || res.Last != 100 {
		t.Fatalf("after restart: %d entries, %+v", len(entries), res)
	}
	for i, en := range entries {
		if en.Seq != uint64(i+1) || string(en.Data) != fmt.Sprint(i) || en.MsgID != fmt.Sprint("m", i) ||
			en.Topic != fmt.Sprintf("app/room%d/msgs", i%3) {
			t.Fatalf("entry %d: %+v", i, en)
		}
	}
	// Appends go on after the last sequence, and the ids of before the
	// restart are still known (duplicate window).
	h.Append("app/room0/msgs", "m99", []byte("dup"))
	h.Append("app/room0/msgs", "m100", []byte("100"))
	settle(t, h)
	if seq, err := h.LastSeq(context.Background()); err != nil || seq != 101 {
		t.Fatalf("LastSeq = %d, %v; want 101", seq, err)
	}
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	e := embedded(t, t.TempDir())
	h, err := Open(context.Background(), Config{Conn: e.Conn})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		h.Append("a/b", "", []byte("x"))
	}
	h.Stats() // starts a refresh of the stored counts
	settle(t, h)
	if entries, _ := read(t, h, []string{"a/b"}, 0, 100); len(entries) != 10 {
		t.Fatalf("%d entries", len(entries))
	}
	h.Close()
	e.Close()
	goleak.VerifyNone(t, ignore)
}

func TestEmbeddedRefusesNoDir(t *testing.T) {
	if _, err := Embedded("", nil); err == nil {
		t.Fatal("no error")
	}
}

// BenchmarkAppend measures Append of 200-byte entries on an embedded
// server until the stream has acknowledged every entry (appends/s; the
// time in the Append calls alone is call-ns/op), against core NATS
// publishes of the same payloads (no stream, no acknowledgement:
// nats-publish) and the loop alone (loop).
func BenchmarkAppend(b *testing.B) {
	data := make([]byte, 200)
	b.Run("history", func(b *testing.B) {
		e := embedded(b, b.TempDir())
		defer e.Close()
		h, err := Open(context.Background(), Config{Conn: e.Conn})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		ids := make([]string, b.N)
		for i := range ids {
			ids[i] = fmt.Sprint("id", i)
		}
		b.ResetTimer()
		start := time.Now()
		for i := 0; i < b.N; i++ {
			h.Append("demo-app/general/messages", ids[i], data)
		}
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "call-ns/op")
		settle(b, h)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	})
	b.Run("nats-publish", func(b *testing.B) {
		e := embedded(b, b.TempDir())
		defer e.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := e.Conn.PublishMsg(&nats.Msg{Subject: "kraken.m.demo-app.general.messages", Data: append([]byte(nil), data...)}); err != nil {
				b.Fatal(err)
			}
		}
		if err := e.Conn.Flush(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	})
	b.Run("loop", func(b *testing.B) {
		sink := 0
		for i := 0; i < b.N; i++ {
			sink += len(append([]byte(nil), data...))
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
		_ = sink
	})
}
