// Command loadgen measures a broker that speaks the kraken wire protocol at
// a WebSocket URL: memory per idle connection, fan-out throughput,
// publish-to-delivery latency, connection rate, a reconnect storm, a
// steady multi-topic stream and the memory of parked resumable sessions. It speaks only the wire protocol, so it
// measures any broker that implements it.
//
// Usage:
//
//	loadgen --scenario idle|fanout|latency|connect|storm|stream|resume --url ws://HOST:PORT/ws [flags]
//	loadgen --scenario idle --transport mqtt --mqtt-addr HOST:PORT --url ws://HOST:PORT/ws [flags]
//	loadgen table --names kraken,baseline a1.json b1.json [a2.json b2.json ...]
//	loadgen median --out m.json run1.json run2.json run3.json
//
// Connections can be split over child processes (--procs), each with its
// own loopback source address 127.0.0.(2+i), to open more connections than
// one process's file limit allows.
//
// With --transport mqtt the idle scenario's subscribers are MQTT 3.1.1
// connections to the broker's MQTT listener (mqtt.go); the publisher stays
// a WebSocket connection.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "worker":
			os.Exit(workerMain(os.Args[2:]))
		case "table":
			os.Exit(tableMain(os.Args[2:]))
		case "median":
			os.Exit(medianMain(os.Args[2:]))
		}
	}
	os.Exit(runMain(os.Args[1:]))
}

func newFlagSet(name string) *flag.FlagSet {
	return flag.NewFlagSet(name, flag.ContinueOnError)
}

func runMain(args []string) int {
	var cfg Config
	fs := newFlagSet("loadgen")
	fs.StringVar(&cfg.URL, "url", "ws://127.0.0.1:8080/ws", "broker WebSocket URL")
	fs.StringVar(&cfg.Token, "token", "dev-token-bob", "access token sent in the auth frame")
	fs.IntVar(&cfg.Tokens, "tokens", 0, "distinct tokens: with K > 1 connection g sends TOKEN-<g mod K> (K >= n: one each); 0 or 1: TOKEN for all")
	fs.StringVar(&cfg.AuthStats, "auth-stats", "", "connect: URL of the auth service's counters (bench/authsvc GET /stats), read before and after")
	fs.StringVar(&cfg.Topic, "topic", "demo/general/bench", "topic (idle also uses TOPIC/2; stream uses TOPIC/0..TOPIC/T-1)")
	fs.StringVar(&cfg.Scenario, "scenario", "idle", "idle, fanout, latency, connect, storm, stream or resume")
	fs.StringVar(&cfg.Transport, "transport", "websocket", "idle: the subscriber connections' transport, websocket or mqtt (MQTT 3.1.1 to --mqtt-addr; the publisher stays on --url)")
	fs.StringVar(&cfg.MQTTAddr, "mqtt-addr", "", "with --transport mqtt: the broker's MQTT listener, HOST:PORT (kraken: MQTT_PORT)")
	fs.IntVar(&cfg.N, "n", 1000, "subscriber connections")
	fs.IntVar(&cfg.Procs, "procs", 1, "child processes to split the connections over (each with source address 127.0.0.(2+i)); 1 = in this process")
	fs.StringVar(&cfg.SourceIP, "source-ip", "", "local address when --procs is 1")
	fs.IntVar(&cfg.PID, "pid", 0, "broker process to sample (RSS from /proc/PID/status, CPU from /proc/PID/stat)")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "publishing time of latency and stream")
	fs.Float64Var(&cfg.Rate, "rate", 0, "publishes per second (latency default 100, stream default 1000 in total)")
	fs.IntVar(&cfg.Payload, "payload", 100, "message payload in bytes (at least 31: the stamp)")
	fs.IntVar(&cfg.Messages, "messages", 20, "fanout: messages published back to back")
	fs.IntVar(&cfg.Steps, "steps", 4, "idle: RSS sample points (at least 3)")
	fs.IntVar(&cfg.Start, "start", 0, "idle: connections at the first point (default n/steps)")
	fs.DurationVar(&cfg.Settle, "settle", 2*time.Second, "idle: wait before each RSS sample; storm: how long the RSS must hold within 1% to count as steady")
	fs.IntVar(&cfg.Rounds, "rounds", 1, "storm: storms in a row (reset all connections, reconnect all)")
	fs.DurationVar(&cfg.SteadyMax, "steady-max", 60*time.Second, "storm: longest wait for a steady RSS")
	fs.IntVar(&cfg.Batch, "batch", 10000, "resume: sessions connected and reset per batch (at most what the broker's descriptors allow)")
	fs.IntVar(&cfg.Live, "live", 1, "resume: messages per topic delivered to each connection before its reset")
	fs.IntVar(&cfg.Missed, "missed", 0, "resume: messages per topic published to the parked sessions")
	fs.DurationVar(&cfg.Expiry, "expiry", 0, "resume: the broker's RESUME_EXPIRY_SECONDS; wait that long after the last reset and sample again (0 = do not wait)")
	fs.DurationVar(&cfg.Linger, "linger", 0, "resume: keep sampling this long after the expiry (every 10 s)")
	fs.IntVar(&cfg.Probe, "probe", 10, "resume: reconnect this many of the oldest and of the newest sessions with reconnect:true to check what the broker kept")
	fs.StringVar(&cfg.MetricsURL, "metrics-url", "", "resume: the broker's Prometheus endpoint (kraken: http://ADMIN_ADDR/metrics) for its heap and the sessions it holds; stream: for its durable-history counters (kraken_history_*_total), read before and after the publishing")
	fs.BoolVar(&cfg.ForceGC, "force-gc", false, "resume: at the end, make the broker collect (GET /debug/pprof/heap?gc=1 beside --metrics-url) and sample once more")
	fs.IntVar(&cfg.Topics, "topics", 10, "stream: topics")
	fs.IntVar(&cfg.Subs, "subs", 0, "stream: subscribers per topic (default n/topics)")
	fs.IntVar(&cfg.Publishers, "publishers", 4, "stream: publisher connections")
	fs.IntVar(&cfg.Concurrency, "concurrency", 32, "handshakes in flight per process")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "handshake timeout, and how long to wait for missing deliveries")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", 20*time.Second, "heartbeat interval of every connection (0 = none)")
	fs.StringVar(&cfg.Label, "label", "", "name of the broker in the report")
	urls := fs.String("urls", "", "subscriber URLs, comma-separated: worker process i connects to URL i mod count (--procs a multiple of the count); the publisher uses --url")
	cpuPids := fs.String("cpu-pids", "", "processes whose CPU is the broker's, NAME=PID,... (the nodes and NATS server of a cluster); default --pid")
	fs.StringVar(&cfg.NATSStats, "nats-stats", "", "fanout, latency: URL of bench/natsd's GET /stats, read before and after the measured window")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	mdOut := fs.String("md", "", "write the report as a Markdown table to this file")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	cfg.SubURLs = splitURLs(*urls)
	var err error
	if cfg.CPUPids, err = parsePIDs(*cpuPids); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 2
	}
	if !*quiet {
		cfg.Log = os.Stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rep, err := Run(ctx, cfg)
	if rep != nil {
		if *jsonOut != "" {
			if werr := writeJSON(*jsonOut, rep); werr != nil {
				fmt.Fprintln(os.Stderr, "loadgen:", werr)
			}
		}
		if *mdOut != "" {
			f, ferr := os.Create(*mdOut)
			if ferr == nil {
				writeMarkdown(f, rep)
				_ = f.Close()
			}
		}
		if err == nil {
			writeMarkdown(os.Stdout, rep)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		return 1
	}
	return 0
}

// tableMain prints one comparison table from groups of JSON reports, one
// report per name in each group.
func tableMain(args []string) int {
	fs := newFlagSet("table")
	names := fs.String("names", "kraken,baseline", "names of the brokers or setups, comma-separated; ratios are against the last")
	keys := fs.String("metrics", "", "only these metric keys, comma-separated (default all)")
	spread := fs.Bool("spread", false, "show the range over the repetitions of median reports")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	nm := strings.Split(*names, ",")
	if len(nm) < 2 {
		fmt.Fprintln(os.Stderr, "loadgen table: --names A,B[,C...]")
		return 2
	}
	files := fs.Args()
	if len(files) == 0 || len(files)%len(nm) != 0 {
		fmt.Fprintf(os.Stderr, "loadgen table: give groups of %d report files, one per name: A1.json B1.json [A2.json B2.json ...]\n", len(nm))
		return 2
	}
	opt := tableOptions{spread: *spread}
	if *keys != "" {
		opt.keys = map[string]bool{}
		for _, k := range strings.Split(*keys, ",") {
			opt.keys[strings.TrimSpace(k)] = true
		}
	}
	var groups [][]*Report
	for i := 0; i < len(files); i += len(nm) {
		var g []*Report
		for _, f := range files[i : i+len(nm)] {
			r, err := readJSON(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "loadgen table:", err)
				return 1
			}
			g = append(g, r)
		}
		groups = append(groups, g)
	}
	writeComparisonN(os.Stdout, nm, groups, opt)
	return 0
}

// medianMain writes the median report of repetitions of one case.
func medianMain(args []string) int {
	fs := newFlagSet("median")
	out := fs.String("out", "", "write the median report here (default stdout)")
	label := fs.String("label", "", "label of the median report (default the first report's)")
	maxDist := fs.Float64("max-disturbance", 0, "leave out runs in which other processes and the hypervisor (steal) took more than this many cores (0 = keep all; needs runs with --cpu-pids)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "loadgen median: give the report files of the repetitions")
		return 2
	}
	var rs []*Report
	for _, f := range fs.Args() {
		r, err := readJSON(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen median:", err)
			return 1
		}
		rs = append(rs, r)
	}
	kept, left := quietRuns(rs, *maxDist)
	all := len(kept) == 0
	if all {
		kept = rs
	}
	m := medianReport(*label, kept)
	switch {
	case all:
		m.note("all %d runs were disturbed: other processes and steal took more than %v cores; median of them all", len(rs), *maxDist)
	case left > 0:
		m.note("median of the %d of %d runs in which other processes and steal took at most %v cores", len(kept), len(rs), *maxDist)
	}
	if *out == "" {
		b, _ := json.MarshalIndent(m, "", "  ")
		fmt.Printf("%s\n", b)
		return 0
	}
	if err := writeJSON(*out, m); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen median:", err)
		return 1
	}
	return 0
}
