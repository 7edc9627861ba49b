package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/broker/natsbroker/natstest"
	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// TestServeKeepsPublishesInTheHistory: with STORE_BACKEND=jetstream and no
// NATS, the broker runs the embedded JetStream under STORE_DIR and keeps
// every accepted publish there; /metrics shows the history's figures;
// after SIGTERM the stream, opened on the same directory, holds the
// messages in order, each the message frame of the exact topic.
func TestServeKeepsPublishesInTheHistory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "js")
	admin := "127.0.0.1:" + freePort(t)
	b := startBroker(t, "", "STORE_BACKEND=jetstream", "STORE_DIR="+dir, "ADMIN_ADDR="+admin)
	alice := testpeer.Dial(t, b.addr)
	alice.Auth("dev-token-alice")
	const n = 5
	for i := range n {
		alice.Send("type", "publish", "topic", "demo/general/x", "data", fmt.Sprintf("hello %d", i), "msgRef", fmt.Sprint(i))
		alice.ExpectFields("type", "published", "topic", "demo/general/x", "msgRef", fmt.Sprint(i))
	}
	var metrics string
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, metrics = get(t, "http://"+admin+"/metrics")
		if strings.Contains(metrics, "kraken_history_stored_messages 5") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{"kraken_history_appended_total 5", "kraken_history_dropped_total 0",
		"kraken_history_errors_total 0", "kraken_history_stored_messages 5", "kraken_history_stored_bytes "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %q", want)
		}
	}
	if code, body := get(t, "http://"+admin+"/ready"); code != 200 {
		t.Errorf("/ready: %d %s", code, body)
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-b.done:
		b.done <- err
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, b.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no exit within 15 s of SIGTERM")
	}

	e, err := history.Embedded(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := history.Open(ctx, history.Config{Conn: e.Conn})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	entries, res, err := h.Read(ctx, []string{"#"}, 0, 100)
	if err != nil || !res.Complete {
		t.Fatalf("Read: %v, %+v", err, res)
	}
	if len(entries) != n {
		t.Fatalf("%d entries, want %d: %+v", len(entries), n, entries)
	}
	for i, en := range entries {
		m := decodeMap(t, en.Data)
		if en.Topic != "demo-app/demo/general/x" { // the routing key of alice's grant
			t.Errorf("entry %d: routing key %q", i, en.Topic)
		}
		if m["type"] != "message" || m["topic"] != "demo/general/x" || m["data"] != fmt.Sprintf("hello %d", i) ||
			m["from"] != "alice" || m["fromType"] != "actor" || m["msgId"] != en.MsgID || en.MsgID == "" ||
			m["requiresAck"] != true {
			t.Errorf("entry %d (%s): %v", i, en.Topic, m)
		}
		if ts := fmt.Sprint(m["timestamp"]); ts == "" || ts == "0" || strings.HasPrefix(ts, "-") || strings.Contains(ts, "nil") {
			t.Errorf("entry %d: timestamp %v", i, m["timestamp"])
		}
	}
}

// decodeMap decodes a msgpack map of strings, booleans and integers.
func decodeMap(t *testing.T, b []byte) map[string]any {
	t.Helper()
	v, _, err := msgp.ReadIntfBytes(b)
	if err != nil {
		t.Fatalf("entry does not decode: %v", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("entry is a %T, not a map", v)
	}
	return m
}

// TestServeRefusesAStoreDirThatIsAFile: STORE_DIR naming a file fails the
// start with exit 2 and a message naming STORE_DIR.
func TestServeRefusesAStoreDirThatIsAFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t))
	cmd.Env = append(os.Environ(), "STORE_BACKEND=jetstream", "STORE_DIR="+path, "WS_PORT="+freePort(t),
		"AUTH_FILE=../../examples/auth.json", "ADMIN_ADDR=off")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want status 2\n%s", err, out)
	}
	if !strings.Contains(string(out), "STORE_DIR="+path) {
		t.Fatalf("message should name STORE_DIR=%s:\n%s", path, out)
	}
}

// TestServeRefusesAStoreDirInUse: a second broker on the STORE_DIR of a
// running one exits with status 2, naming STORE_DIR and saying it is in
// use; once the first has stopped, the directory can be used again.
func TestServeRefusesAStoreDirInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "js")
	first := startBroker(t, "", "STORE_BACKEND=jetstream", "STORE_DIR="+dir)
	second := func() (string, error) {
		cmd := exec.Command(binary(t))
		cmd.Env = append(os.Environ(), "STORE_BACKEND=jetstream", "STORE_DIR="+dir, "WS_HOST=127.0.0.1",
			"WS_PORT="+freePort(t), "AUTH_FILE=../../examples/auth.json", "ADMIN_ADDR=off")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := second()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("exit = %v, want status 2\n%s", err, out)
	}
	if !strings.Contains(out, "STORE_DIR="+dir) || !strings.Contains(out, "in use by another kraken process") {
		t.Fatalf("message should name STORE_DIR=%s and say it is in use:\n%s", dir, out)
	}
	_ = first.cmd.Process.Signal(syscall.SIGTERM)
	if err := <-first.done; err != nil {
		t.Fatalf("first broker's exit: %v", err)
	}
	first.done <- nil
	again := startBroker(t, "", "STORE_BACKEND=jetstream", "STORE_DIR="+dir)
	if code, _ := get(t, "http://"+again.addr+"/health"); code != 200 {
		t.Fatalf("the directory is not usable again: /health %d", code)
	}
}

// TestHistoryReadyRule: the ready check `history` fails only once the
// stream has not been reached for historyDownAfter, and says that
// publishes keep flowing.
func TestHistoryReadyRule(t *testing.T) {
	b := &historyBackend{okAt: time.Now(), where: "embedded"}
	if err := b.ready(); err != nil {
		t.Fatalf("reachable: %v", err)
	}
	b.failedAt, b.lastErr = time.Now(), context.DeadlineExceeded
	if err := b.ready(); err != nil {
		t.Fatalf("failing for less than %v: %v", historyDownAfter, err)
	}
	b.okAt = time.Now().Add(-historyDownAfter)
	err := b.ready()
	if err == nil || !strings.Contains(err.Error(), "publishes keep flowing live") ||
		!strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Fatalf("unreachable for %v: %v", historyDownAfter, err)
	}
	b.okAt, b.failedAt, b.lastErr = time.Now(), time.Time{}, nil
	if err := b.ready(); err != nil {
		t.Fatalf("reachable again: %v", err)
	}
}

// TestServeKeepsTheHistoryOnTheNATSServers: with BROKER_BACKEND=nats the
// history is a stream on NATS_URL's servers, which every node appends to:
// two nodes' publishes are all there, read from the NATS server directly.
func TestServeKeepsTheHistoryOnTheNATSServers(t *testing.T) {
	url := natstest.RunJetStream(t).ClientURL()
	var peers []*testpeer.Peer
	for _, id := range []string{"node-a", "node-b"} {
		b := startBroker(t, "", "BROKER_BACKEND=nats", "NATS_URL="+url, "NODE_ID="+id, "STORE_BACKEND=jetstream",
			"STORE_DIR="+filepath.Join(t.TempDir(), "unused"))
		p := testpeer.Dial(t, b.addr)
		p.Auth("dev-token-alice")
		peers = append(peers, p)
	}
	for i, p := range peers {
		p.Send("type", "publish", "topic", "demo/general/n", "data", i, "msgRef", "r")
		p.ExpectFields("type", "published", "topic", "demo/general/n", "msgRef", "r")
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := history.Open(ctx, history.Config{Conn: nc})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var entries []history.Entry
	for deadline := time.Now().Add(5 * time.Second); len(entries) < 2 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if entries, _, err = h.Read(ctx, []string{"demo-app/demo/general/n"}, 0, 10); err != nil {
			t.Fatal(err)
		}
	}
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	got := map[string]bool{}
	for _, en := range entries {
		got[fmt.Sprint(decodeMap(t, en.Data)["data"])] = true
	}
	if !got["0"] || !got["1"] {
		t.Fatalf("entries' data %v, want 0 and 1", got)
	}
}
