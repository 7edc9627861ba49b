package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/session"
)

// krakenEnv makes the test binary serve kraken with resumable sessions
// (expiry and cap from the environment), so the resume scenario measures
// a broker process of its own, as with bench/run.sh.
const krakenEnv = "LOADGEN_TEST_KRAKEN"

// krakenMain serves kraken on 127.0.0.1 with its /metrics and
// /debug/pprof/heap and its MQTT listener, prints "WS-URL METRICS-URL
// MQTT-ADDR" and serves until stdin closes.
func krakenMain() int {
	expiry, _ := strconv.Atoi(os.Getenv(krakenEnv + "_EXPIRY_MS"))
	maxSessions, _ := strconv.Atoi(os.Getenv(krakenEnv + "_MAX_SESSIONS"))
	n, err := node.New(node.Config{Hub: hub.Config{Workers: 2}, Session: session.Config{Auth: static.AllowAll{},
		RecordMessages: true, RateLimit: 100000,
		Resume: session.ResumeConfig{Enabled: true, Expiry: time.Duration(expiry) * time.Millisecond, MaxSessions: maxSessions}}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kraken:", err)
		return 1
	}
	srv, err := server.New(n, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kraken:", err)
		return 1
	}
	ml, err := listener.New(n, listener.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kraken mqtt:", err)
		return 1
	}
	if err := n.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "kraken:", err)
		return 1
	}
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "kraken:", err)
		return 1
	}
	if err := ml.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "kraken mqtt:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "kraken admin:", err)
		return 1
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", metrics.Handler(metrics.NewRegistry(metrics.Sources{Components: []metrics.Component{n.Metrics("allow_all", "local"), srv}})))
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	fmt.Printf("ws://%s/ws http://%s/metrics %s\n", srv.Addr(), ln.Addr(), ml.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = hs.Close()
	_ = srv.Shutdown(context.Background())
	return 0
}

// startKraken runs kraken in a child process with resumable sessions
// kept for expiry, at most maxSessions (0: the default), and returns its
// WebSocket URL, its metrics URL and its pid.
func startKraken(t *testing.T, expiry time.Duration, maxSessions int) (url, metricsURL string, pid int) {
	t.Helper()
	url, metricsURL, _, pid = startKrakenMQTT(t, expiry, maxSessions)
	return url, metricsURL, pid
}

// startKrakenMQTT is startKraken that also returns the address of the
// child's MQTT listener.
func startKrakenMQTT(t *testing.T, expiry time.Duration, maxSessions int) (url, metricsURL, mqttAddr string, pid int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), krakenEnv+"=1",
		fmt.Sprintf("%s_EXPIRY_MS=%d", krakenEnv, expiry.Milliseconds()),
		fmt.Sprintf("%s_MAX_SESSIONS=%d", krakenEnv, maxSessions))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	f := strings.Fields(line)
	if err != nil || len(f) != 3 {
		t.Fatalf("kraken child: %q, %v", line, err)
	}
	return f[0], f[1], f[2], cmd.Process.Pid
}

func TestSmokeResume(t *testing.T) {
	url, murl, pid := startKraken(t, 8*time.Second, 0)
	r := run(t, Config{URL: url, Scenario: "resume", N: 30, Batch: 12, Procs: 2, Live: 1, Missed: 2,
		Probe: 3, Expiry: 8 * time.Second, Linger: 200 * time.Millisecond, ForceGC: true,
		Settle: 100 * time.Millisecond, SteadyMax: 5 * time.Second, MetricsURL: murl, PID: pid, Spawn: testSpawn})
	wantEq(t, r, "resume_sessions", 30)
	wantEq(t, r, "resume_batches", 3)
	wantEq(t, r, "resume_held", 30)
	wantEq(t, r, "resume_connect_errors", 0)
	wantEq(t, r, "resume_live_missed", 0)
	wantEq(t, r, "resume_missed_per_session", 4)
	wantEq(t, r, "resume_probe_newest_restored", 3)
	// 3 sessions × (2 topics × 2 missed + the 2 live messages they were
	// sent and never acked before the reset: replayed, at-least-once).
	wantEq(t, r, "resume_probe_newest_replayed", 18)
	wantEq(t, r, "resume_probe_oldest_restored", 3)
	wantEq(t, r, "resume_probe_errors", 0)
	wantEq(t, r, "resume_held_expired", 0)
	wantEq(t, r, "resume_probe_after_expiry_expired", 3)
	wantPositive(t, r, "resume_rss_parked")
	wantPositive(t, r, "resume_heap_parked")
	wantPositive(t, r, "resume_rss_expired")
	wantPositive(t, r, "resume_heap_gc")
	wantPositive(t, r, "resume_heap_gc2")
	wantPositive(t, r, "resume_heap_reconnect_gc")
	wantPositive(t, r, "resume_heap_parked_gc")
	metric(t, r, "resume_heap_missed_gc_per_session")
	// start, then live and parked per batch, parked-gc, missed,
	// missed-gc, expired, later, after-gc, after-gc2, reconnect-gc
	if got := len(r.Resume); got != 1+2*3+8 {
		t.Errorf("resume points = %d, want 15: %+v", got, r.Resume)
	}
	for _, p := range r.Resume {
		if p.Phase == "parked" && p.Held != p.Parked {
			t.Errorf("point %+v: the broker holds %d sessions, want %d", p, p.Held, p.Parked)
		}
	}
}

// TestSmokeResumeCap parks more sessions than RESUME_MAX_SESSIONS: the
// broker holds the cap, and the oldest sessions are gone.
func TestSmokeResumeCap(t *testing.T) {
	url, murl, pid := startKraken(t, time.Minute, 20)
	r := run(t, Config{URL: url, Scenario: "resume", N: 30, Batch: 10, Probe: 3,
		Settle: 100 * time.Millisecond, SteadyMax: 5 * time.Second, MetricsURL: murl, PID: pid})
	wantEq(t, r, "resume_sessions", 30)
	wantEq(t, r, "resume_held", 20)
	wantEq(t, r, "resume_probe_newest_restored", 3)
	wantEq(t, r, "resume_probe_oldest_restored", 0)
	wantEq(t, r, "resume_probe_oldest_expired", 3)
	wantEq(t, r, "resume_probe_errors", 0)
}
