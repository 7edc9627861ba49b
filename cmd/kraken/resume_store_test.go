package main

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestResumeAcrossARestart: with STORE_BACKEND=jetstream (the embedded
// store under STORE_DIR) and resumable sessions, a subscriber that acked
// what it got drops; alice publishes 5 more; the broker is stopped (SIGTERM
// in one run, SIGKILL in the other: no goodbye, no last save) and started
// again on the same STORE_DIR; the subscriber reconnects with
// reconnect:true and the same clientId and gets its subscription back and
// the 5 messages it missed, in order, isReplay:true, complete:true, then
// live traffic. Messages it had already acked may come again first
// (at-least-once: its position is kept up to a couple of seconds behind,
// docs/protocol.md), never after the missed ones.
func TestResumeAcrossARestart(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "js")
			admin := "127.0.0.1:" + freePort(t)
			env := []string{"STORE_BACKEND=jetstream", "STORE_DIR=" + dir, "RESUME_SESSIONS=true"}
			b := startBroker(t, "", append(env, "ADMIN_ADDR="+admin)...)
			bob := testpeer.Dial(t, b.addr)
			bob.Auth("dev-token-bob", "clientId", "restart-1")
			bob.Send("type", "subscribe", "topic", "demo/general/r")
			bob.ExpectFields("type", "subscribed", "topic", "demo/general/r")
			alice := testpeer.Dial(t, b.addr)
			alice.Auth("dev-token-alice")
			publish := func(p *testpeer.Peer, i int) {
				t.Helper()
				p.Send("type", "publish", "topic", "demo/general/r", "data", fmt.Sprintf("m%d", i), "msgRef", fmt.Sprint(i))
				p.ExpectFields("type", "published", "msgRef", fmt.Sprint(i))
			}
			publish(alice, 0)
			m := bob.ExpectFields("type", "message", "data", "m0")
			bob.Send("type", "ack", "msgId", m.Map["msgId"])
			waitForMetric(t, admin, "kraken_resume_saved_total{result=\"ok\"}", 1) // bob's live session
			_ = bob.Conn.Close()
			waitForMetric(t, admin, "kraken_resume_sessions_parked", 1) // the broker saw the drop
			for i := 1; i <= 5; i++ {
				publish(alice, i)
			}
			waitForMetric(t, admin, "kraken_history_stored_messages", 6)
			stopAfterSave(t, b, sig)

			b2 := startBroker(t, "", env...)
			bob2 := testpeer.Dial(t, b2.addr)
			ok := bob2.Auth("dev-token-bob", "clientId", "restart-1", "reconnect", true)
			if !strings.Contains(ok.String(), "demo/general/r") {
				t.Fatalf("auth reply restores no subscription: %s", ok)
			}
			var got []string
			for _, f := range readReplay(t, bob2, "demo/general/r", b2.stderr) {
				got = append(got, fmt.Sprint(f.Map["data"]))
			}
			want := "m1 m2 m3 m4 m5"
			if s := strings.TrimPrefix(strings.Join(got, " "), "m0 "); s != want {
				t.Fatalf("replayed %q, want %q (after an optional m0)\n%s", got, want, b2.stderr)
			}
			alice2 := testpeer.Dial(t, b2.addr)
			alice2.Auth("dev-token-alice")
			publish(alice2, 6)
			f := bob2.ExpectFields("type", "message", "data", "m6")
			if f.Map["isReplay"] != nil {
				t.Fatalf("live message marked as a replay: %s", f)
			}
		})
	}
}

// stopAfterSave gives b the time to save the session parked last (within
// a second; SIGTERM saves it anyway; without it, after SIGKILL, the live
// record serves), then sends it sig and waits up to 20 s for its exit,
// which must be clean after SIGTERM.
func stopAfterSave(t *testing.T, b *broker, sig syscall.Signal) {
	t.Helper()
	time.Sleep(1200 * time.Millisecond)
	_ = b.cmd.Process.Signal(sig)
	select {
	case err := <-b.done:
		b.done <- err
		if sig == syscall.SIGTERM && err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, b.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit within 20 s of %v", sig)
	}
}

// readReplay reads a replay from p (replayStart, messages, replayEnd) and
// returns its messages, failing t unless each is a message on topic with
// isReplay:true and replayEnd says complete:true; logs is printed with a
// failure.
func readReplay(t *testing.T, p *testpeer.Peer, topic string, logs fmt.Stringer) []testpeer.Frame {
	t.Helper()
	p.ExpectType("replayStart")
	var got []testpeer.Frame
	for {
		f := p.Expect()
		if f.Type() == "replayEnd" {
			if f.Map["complete"] != true {
				t.Fatalf("replayEnd = %s, want complete:true\n%s", f, logs)
			}
			return got
		}
		if f.Type() != "message" || f.Map["isReplay"] != true || f.Map["topic"] != topic {
			t.Fatalf("in the replay: %s\n%s", f, logs)
		}
		got = append(got, f)
	}
}

// waitForMetric waits up to 10 s until the admin listener at admin shows
// the metric line name (with its labels) at least want.
func waitForMetric(t *testing.T, admin, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		_, body := get(t, "http://"+admin+"/metrics")
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, name+" "); ok {
				last = v
				if f, err := strconv.ParseFloat(v, 64); err == nil && f >= want {
					return
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s = %q after 10 s, want at least %v", name, last, want)
}
