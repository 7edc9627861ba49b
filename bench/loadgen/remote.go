package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// remoteWorker is a child process running `loadgen worker`, driven with
// one JSON request per line on its stdin and one JSON response per line on
// its stdout. The child exits when its stdin closes.
type remoteWorker struct {
	mu    sync.Mutex
	cmd   *exec.Cmd
	stdin io.WriteCloser
	dec   *json.Decoder
	enc   *json.Encoder
}

// spawnFunc makes the command of child i; the arguments are the worker's.
type spawnFunc func(args []string) *exec.Cmd

func defaultSpawn(args []string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, append([]string{"worker"}, args...)...)
}

func startRemote(spawn spawnFunc, args []string) (*remoteWorker, error) {
	cmd := spawn(args)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &remoteWorker{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin),
		dec: json.NewDecoder(bufio.NewReaderSize(stdout, 1<<16))}, nil
}

func (r *remoteWorker) call(req request) (response, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var resp response
	if err := r.enc.Encode(req); err != nil {
		return resp, err
	}
	if err := r.dec.Decode(&resp); err != nil {
		return resp, fmt.Errorf("worker reply: %w", err)
	}
	if resp.Err != "" {
		return resp, errors.New(resp.Err)
	}
	return resp, nil
}

func (r *remoteWorker) shutdown() error {
	_, _ = r.call(request{Op: "close"})
	_ = r.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		return <-done
	}
}

// workerMain serves requests on stdin/stdout until stdin closes.
func workerMain(args []string) int {
	fs := newFlagSet("worker")
	url := fs.String("url", "", "broker URL")
	token := fs.String("token", "", "token")
	tokens := fs.Int("tokens", 0, "distinct tokens (see --tokens of loadgen)")
	src := fs.String("source-ip", "", "local address")
	index := fs.Int("index", 0, "worker index")
	procs := fs.Int("procs", 1, "number of workers")
	hb := fs.Duration("heartbeat", 20*time.Second, "heartbeat interval")
	timeout := fs.Duration("timeout", 10*time.Second, "handshake timeout")
	mqttAddr := fs.String("mqtt-addr", "", "open MQTT connections to this address instead of WebSocket ones (--transport mqtt)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	d, err := newDialer(*url, *token, *tokens, *src, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen worker:", err)
		return 2
	}
	d.mqttAddr = *mqttAddr
	w := newWorker(*index, *procs, d, *hb)
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	out := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			w.close()
			return 0
		}
		resp := w.handle(req)
		_ = enc.Encode(resp)
		_ = out.Flush()
	}
}
