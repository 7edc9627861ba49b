// Command loadgen measures a broker that speaks the kraken wire protocol at
// a WebSocket URL: memory per idle connection, fan-out throughput,
// publish-to-delivery latency, connection rate, a reconnect storm and a
// steady multi-topic stream. It speaks only the wire protocol, so it
// measures any broker that implements it.
//
// Usage:
//
//	loadgen --scenario idle|fanout|latency|connect|storm|stream --url ws://HOST:PORT/ws [flags]
//	loadgen table --names kraken,baseline a1.json b1.json [a2.json b2.json ...]
//
// Connections can be split over child processes (--procs), each with its
// own loopback source address 127.0.0.(2+i), to open more connections than
// one process's file limit allows.
package main

import (
	"context"
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
	fs.StringVar(&cfg.Topic, "topic", "demo/general/bench", "topic (idle also uses TOPIC/2; stream uses TOPIC/0..TOPIC/T-1)")
	fs.StringVar(&cfg.Scenario, "scenario", "idle", "idle, fanout, latency, connect, storm or stream")
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
	fs.IntVar(&cfg.Topics, "topics", 10, "stream: topics")
	fs.IntVar(&cfg.Subs, "subs", 0, "stream: subscribers per topic (default n/topics)")
	fs.IntVar(&cfg.Publishers, "publishers", 4, "stream: publisher connections")
	fs.IntVar(&cfg.Concurrency, "concurrency", 32, "handshakes in flight per process")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "handshake timeout, and how long to wait for missing deliveries")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", 20*time.Second, "heartbeat interval of every connection (0 = none)")
	fs.StringVar(&cfg.Label, "label", "", "name of the broker in the report")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	mdOut := fs.String("md", "", "write the report as a Markdown table to this file")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := fs.Parse(args); err != nil {
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

// tableMain prints one comparison table from pairs of JSON reports.
func tableMain(args []string) int {
	fs := newFlagSet("table")
	names := fs.String("names", "kraken,baseline", "names of the two brokers")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	files := fs.Args()
	if len(files) == 0 || len(files)%2 != 0 {
		fmt.Fprintln(os.Stderr, "loadgen table: give pairs of report files: A1.json B1.json [A2.json B2.json ...]")
		return 2
	}
	nm := strings.SplitN(*names, ",", 2)
	if len(nm) != 2 {
		fmt.Fprintln(os.Stderr, "loadgen table: --names A,B")
		return 2
	}
	var pairs [][2]*Report
	for i := 0; i < len(files); i += 2 {
		a, err := readJSON(files[i])
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen table:", err)
			return 1
		}
		b, err := readJSON(files[i+1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "loadgen table:", err)
			return 1
		}
		pairs = append(pairs, [2]*Report{a, b})
	}
	writeComparison(os.Stdout, nm[0], nm[1], pairs)
	return 0
}
