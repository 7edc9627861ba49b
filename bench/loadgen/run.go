package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Config is one load-generator run.
type Config struct {
	URL   string
	Token string
	// Tokens is how many distinct tokens the connections send: with K > 1
	// connection g sends Token-<g mod K>; 0 or 1 means Token for all.
	Tokens   int
	Topic    string
	Scenario string
	// Transport is the subscriber connections' transport: "websocket"
	// (the default) or "mqtt" (idle only): MQTT 3.1.1 clients of the
	// broker's MQTT listener at MQTTAddr (mqtt.go); the publisher stays a
	// WebSocket connection to URL.
	Transport string
	MQTTAddr  string
	// N is the number of subscriber connections (idle, fanout, latency,
	// connect); stream uses Topics × Subs.
	N     int
	Procs int
	// SourceIP is the local address of an in-process run (Procs <= 1).
	SourceIP string
	// PID is the broker process sampled from /proc (0 = none).
	PID      int
	Duration time.Duration
	Rate     float64
	Payload  int
	Messages int
	// Idle ramp: Steps points from Start to N.
	Steps  int
	Start  int
	Settle time.Duration
	// Storm: rounds of reset-all/reconnect-all, and the longest wait for
	// the broker's RSS to be steady (storm waits for Settle of steady RSS).
	Rounds    int
	SteadyMax time.Duration
	// Resume: sessions parked in batches of Batch connections, Live
	// messages per topic delivered before the drop, Missed per topic
	// published while parked; Expiry is the broker's session expiry (0:
	// do not wait for it), Linger how long to keep sampling after it;
	// Probe sessions reconnected to check what was kept; MetricsURL the
	// broker's Prometheus endpoint (heap, sessions held).
	Batch      int
	Live       int
	Missed     int
	Expiry     time.Duration
	Linger     time.Duration
	Probe      int
	MetricsURL string
	// ForceGC asks the broker for a collection (its /debug/pprof/heap?gc=1
	// beside MetricsURL) at the end, after Linger.
	ForceGC bool
	// Stream shape.
	Topics     int
	Subs       int
	Publishers int
	// Concurrency is handshakes in flight per worker.
	Concurrency int
	Timeout     time.Duration
	Heartbeat   time.Duration
	Label       string
	// AuthStats is the URL of an auth service's counters (bench/authsvc
	// GET /stats), read before and after connect.
	AuthStats string
	// SubURLs are the URLs the subscriber workers connect to: worker i
	// (of Procs) uses SubURLs[i mod len]; empty means URL. Publishers
	// always connect to URL.
	SubURLs []string
	// CPUPids are the processes whose CPU is the broker's (the nodes of a
	// cluster and its NATS server); empty means PID.
	CPUPids []namedPID
	// NATSStats is the URL of bench/natsd's GET /stats, read before and
	// after the measured window of fanout and latency.
	NATSStats string
	// Spawn makes a child worker command (nil = this executable).
	Spawn spawnFunc
	// Log receives progress lines (nil = discard).
	Log io.Writer
}

func (c *Config) defaults() {
	if c.Token == "" {
		c.Token = "dev-token-bob"
	}
	if c.Topic == "" {
		c.Topic = "demo/general/bench"
	}
	if c.Procs < 1 {
		c.Procs = 1
	}
	if c.Payload <= 0 {
		c.Payload = 100
	}
	if c.Messages <= 0 {
		c.Messages = 20
	}
	if c.Steps < 3 {
		c.Steps = 3
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 32
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if c.Topics <= 0 {
		c.Topics = 10
	}
	if c.Publishers <= 0 {
		c.Publishers = 4
	}
	if c.SteadyMax <= 0 {
		c.SteadyMax = 60 * time.Second
	}
	if c.Transport == "" {
		c.Transport = "websocket"
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	if c.Spawn == nil {
		c.Spawn = defaultSpawn
	}
}

func (c *Config) logf(format string, args ...any) {
	fmt.Fprintf(c.Log, "loadgen: "+format+"\n", args...)
}

// env is what a scenario runs with.
type env struct {
	cfg  Config
	subs []workerClient // subscriber workers
	pubW *worker        // publishers, in this process
	rep  *Report
}

// Run runs one scenario and returns its report.
func Run(ctx context.Context, cfg Config) (rep *Report, err error) {
	cfg.defaults()
	if cfg.URL == "" {
		return nil, errors.New("no --url")
	}
	d, err := newDialer(cfg.URL, cfg.Token, cfg.Tokens, cfg.SourceIP, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	if err := cfg.checkSubURLs(); err != nil {
		return nil, err
	}
	mqttAddr := ""
	switch cfg.Transport {
	case "websocket":
	case "mqtt":
		if cfg.Scenario != "idle" {
			return nil, fmt.Errorf("--transport mqtt: only the idle scenario, not %q", cfg.Scenario)
		}
		if cfg.MQTTAddr == "" {
			return nil, errors.New("--transport mqtt needs --mqtt-addr")
		}
		if len(cfg.SubURLs) > 0 {
			return nil, errors.New("--transport mqtt: no --urls")
		}
		mqttAddr = cfg.MQTTAddr
	default:
		return nil, fmt.Errorf("unknown transport %q (websocket, mqtt)", cfg.Transport)
	}
	e := &env{cfg: cfg, pubW: newWorker(0, 1, d, cfg.Heartbeat)}
	defer e.pubW.close()
	if cfg.Procs <= 1 {
		sd := d
		if u := cfg.subURL(0); u != cfg.URL {
			if sd, err = newDialer(u, cfg.Token, cfg.Tokens, cfg.SourceIP, cfg.Timeout); err != nil {
				return nil, err
			}
		}
		if mqttAddr != "" {
			if sd, err = newDialer(cfg.URL, cfg.Token, cfg.Tokens, cfg.SourceIP, cfg.Timeout); err != nil {
				return nil, err
			}
			sd.mqttAddr = mqttAddr
		}
		e.subs = []workerClient{localWorker{newWorker(0, 1, sd, cfg.Heartbeat)}}
	} else {
		for i := 0; i < cfg.Procs; i++ {
			args := []string{"--url", cfg.subURL(i), "--token", cfg.Token, "--tokens", fmt.Sprint(cfg.Tokens),
				"--source-ip", fmt.Sprintf("127.0.0.%d", 2+i),
				"--index", fmt.Sprint(i), "--procs", fmt.Sprint(cfg.Procs),
				"--heartbeat", cfg.Heartbeat.String(), "--timeout", cfg.Timeout.String()}
			if mqttAddr != "" {
				args = append(args, "--mqtt-addr", mqttAddr)
			}
			rw, err := startRemote(cfg.Spawn, args)
			if err != nil {
				for _, w := range e.subs {
					_ = w.shutdown()
				}
				return nil, fmt.Errorf("start worker %d: %w", i, err)
			}
			e.subs = append(e.subs, rw)
		}
	}
	defer func() {
		for _, w := range e.subs {
			_ = w.shutdown()
		}
	}()
	e.rep = newReport(cfg)
	switch cfg.Scenario {
	case "idle":
		err = e.idle(ctx)
	case "fanout":
		err = e.fanout(ctx)
	case "latency":
		err = e.latency(ctx)
	case "connect":
		err = e.connect(ctx)
	case "stream":
		err = e.stream(ctx)
	case "storm":
		err = e.storm(ctx)
	case "resume":
		err = e.resume(ctx)
	default:
		err = fmt.Errorf("unknown scenario %q (idle, fanout, latency, connect, stream, storm, resume)", cfg.Scenario)
	}
	if err != nil {
		return e.rep, err
	}
	e.rep.Finished = time.Now().UTC().Format(time.RFC3339)
	return e.rep, nil
}
