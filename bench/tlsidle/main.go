// Command tlsidle measures the resident memory (VmRSS) a broker process
// holds per idle connection, over TLS or in the clear, and the broker's
// goroutine count, with one client for every broker it knows:
//
//   - kraken: WebSocket (ws:// or wss://), auth frame (msgpack, any token
//     with AUTH_ALLOW_ALL=true), 2 subscriptions, then idle; an empty
//     binary frame (kraken's heartbeat) every -heartbeat so that the idle
//     timeout does not close the connections;
//   - centrifugo: WebSocket (ws:// or wss://) on /connection/websocket,
//     JSON protocol: {"id":1,"connect":{}} (a server with
//     client.insecure=true, or -token), 2 subscriptions, then idle; the
//     server's pings ({}) are answered with {};
//   - nats: the NATS client protocol on a TCP port (nats:// in the clear,
//     tls:// with the server's TLS upgrade: INFO in the clear, then the
//     TLS handshake), CONNECT, 2 SUBs, PING/PONG, then idle; the server's
//     PINGs are answered with PONG.
//
// It opens connections up to each step of -steps, waits -settle and reads
// the broker's VmRSS from /proc/<pid>/status and its goroutine count from
// -goroutines (a Prometheus /metrics page with go_goroutines, or a
// /debug/pprof/goroutine?debug=1 page), then fits the RSS per connection
// by least squares over the steps. Nothing forces a collection in the
// broker: the figures are at the broker's own GOGC.
//
// Every connection has one goroutine here, in the client, that reads what
// the broker sends; the broker's side is what is measured. Sockets are
// spread over the -src source addresses (127.0.0.2, ... are on loopback,
// for more local ports). One process holds every client socket, so under a
// per-process descriptor limit of L it reaches about L connections less a
// few; the samples of several processes are not combined.
//
//	go run ./bench/tlsidle gencert -dir bench/out/tls
//	go run ./bench/tlsidle table run1.json run2.json ...
//	go run ./bench/tlsidle -broker kraken -url wss://127.0.0.1:28443/ws \
//	    -cafile bench/out/tls/ca.pem -pid $(pidof kraken) \
//	    -goroutines http://127.0.0.1:29469/metrics -steps 1000,4000,7000,10000
//
// -linger D samples the last step again D later (past the runtime's
// periodic collection, every 2 minutes without one), since nothing can
// force a collection from outside. -dump URL,... fetches each URL at the
// end into -out (for example kraken's /debug/pprof/heap, to read with go
// tool pprof), and -json writes the samples and the slope.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/bench/internal/fit"
)

// ipBindAddressNoPort (IP_BIND_ADDRESS_NO_PORT) lets many connections from
// one source address share local ports towards different destinations.
const ipBindAddressNoPort = 24

type config struct {
	broker     string
	url        string
	steps      []int
	settle     time.Duration
	pid        int
	caFile     string
	src        []string
	goroutines string
	token      string
	topics     []string
	conc       int
	timeout    time.Duration
	heartbeat  time.Duration
	linger     time.Duration
	dump       []string
	out        string
	jsonOut    string
	label      string
}

// sample is one step's measurement.
type sample struct {
	Conns       int   `json:"conns"`
	RSS         int64 `json:"rss"`
	Goroutines  int64 `json:"goroutines"` // -1: not read
	Errors      int   `json:"errors"`
	Disconnects int64 `json:"disconnects"`
}

// result is what -json writes.
type result struct {
	Label      string   `json:"label"`
	Broker     string   `json:"broker"`
	URL        string   `json:"url"`
	RSS0       int64    `json:"rss0"`
	Goroutine0 int64    `json:"goroutines0"`
	Samples    []sample `json:"samples"`
	Slope      float64  `json:"rss_slope_bytes_per_conn"`
	Intercept  float64  `json:"rss_intercept"`
	FirstError string   `json:"first_error,omitempty"`
	// Linger is the last step sampled again -linger later, when the
	// runtime's periodic collection (every 2 minutes without one) and its
	// scavenger have run; LingerPerConn is (its RSS − RSS0) / connections.
	Linger        *sample `json:"linger,omitempty"`
	LingerPerConn float64 `json:"linger_rss_per_conn,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "gencert" {
		fs := flag.NewFlagSet("gencert", flag.ExitOnError)
		dir := fs.String("dir", "bench/out/tls", "folder for ca.pem, cert.pem and key.pem")
		_ = fs.Parse(os.Args[2:])
		if err := genCert(*dir); err != nil {
			log.Fatal(err)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "table" {
		if err := table(os.Stdout, os.Args[2:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	var cfg config
	var steps, src, topics, dump string
	flag.StringVar(&cfg.broker, "broker", "kraken", "kraken, centrifugo or nats")
	flag.StringVar(&cfg.url, "url", "", "ws:// or wss:// (kraken, centrifugo); nats:// or tls:// (nats)")
	flag.StringVar(&steps, "steps", "1000,4000,7000,10000", "connection counts to sample at")
	flag.DurationVar(&cfg.settle, "settle", 3*time.Second, "wait after each step before sampling")
	flag.IntVar(&cfg.pid, "pid", 0, "broker pid (VmRSS from /proc/<pid>/status)")
	flag.StringVar(&cfg.caFile, "cafile", "", "PEM CA that signed the broker's certificate")
	flag.StringVar(&src, "src", "127.0.0.1", "source addresses, comma-separated, used in turn")
	flag.StringVar(&cfg.goroutines, "goroutines", "", "URL of go_goroutines (Prometheus) or /debug/pprof/goroutine?debug=1")
	flag.StringVar(&cfg.token, "token", "bench-tok", "kraken: auth token; centrifugo: connection token (empty: none)")
	flag.StringVar(&topics, "topics", "bench.idle,bench.idle2", "topics / channels / subjects, one subscription each")
	flag.IntVar(&cfg.conc, "concurrency", 32, "connections opened at once")
	flag.DurationVar(&cfg.timeout, "timeout", 20*time.Second, "per-connection setup timeout")
	flag.DurationVar(&cfg.heartbeat, "heartbeat", 20*time.Second, "kraken: heartbeat interval")
	flag.DurationVar(&cfg.linger, "linger", 0, "after the last step, wait this long and sample again (0: no)")
	flag.StringVar(&dump, "dump", "", "URLs to fetch into -out after the last step, comma-separated")
	flag.StringVar(&cfg.out, "out", ".", "folder for -dump files")
	flag.StringVar(&cfg.jsonOut, "json", "", "write the result as JSON to this file")
	flag.StringVar(&cfg.label, "label", "", "label of the run (default: broker)")
	flag.Parse()
	for _, s := range strings.Split(steps, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			log.Fatalf("bad -steps %q", steps)
		}
		cfg.steps = append(cfg.steps, n)
	}
	cfg.src = splitList(src)
	cfg.topics = splitList(topics)
	cfg.dump = splitList(dump)
	if cfg.label == "" {
		cfg.label = cfg.broker
	}
	if err := run(cfg); err != nil {
		log.Fatal(err)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// client holds the open connections.
type client struct {
	cfg         config
	tlsConf     *tls.Config
	httpc       *http.Client
	mu          sync.Mutex
	conns       []*conn
	disconnects atomic.Int64
}

// conn is one open connection and its writer lock.
type conn struct {
	nc  net.Conn
	wmu sync.Mutex
}

func (c *conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := c.nc.Write(b)
	return err
}

func run(cfg config) error {
	cl := &client{cfg: cfg}
	cl.tlsConf = &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.caFile != "" {
		pem, err := os.ReadFile(cfg.caFile)
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("%s: no certificate", cfg.caFile)
		}
		cl.tlsConf.RootCAs = pool
	}
	cl.httpc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cl.tlsConf}}
	res := result{Label: cfg.label, Broker: cfg.broker, URL: cfg.url}
	res.RSS0 = rss(cfg.pid)
	res.Goroutine0 = cl.goroutines()
	log.Printf("%s: 0 connections: RSS %.1f MiB, %d goroutines", cfg.label, float64(res.RSS0)/(1<<20), res.Goroutine0)
	if cfg.broker == "kraken" && cfg.heartbeat > 0 {
		go cl.heartbeats()
	}
	var xs, ys []float64
	errs := 0
	for _, target := range cfg.steps {
		start := time.Now()
		e, first := cl.openUpTo(target)
		errs += e
		if first != "" && res.FirstError == "" {
			res.FirstError = first
		}
		took := time.Since(start)
		time.Sleep(cfg.settle)
		s := sample{Conns: cl.count(), RSS: rss(cfg.pid), Goroutines: cl.goroutines(), Errors: errs, Disconnects: cl.disconnects.Load()}
		res.Samples = append(res.Samples, s)
		xs = append(xs, float64(s.Conns))
		ys = append(ys, float64(s.RSS))
		log.Printf("%s: %d connections (opened in %v, %d errors, %d closed by the broker): RSS %.1f MiB, %d goroutines",
			cfg.label, s.Conns, took.Round(time.Millisecond), errs, s.Disconnects, float64(s.RSS)/(1<<20), s.Goroutines)
		if first != "" {
			log.Printf("%s: first error: %s", cfg.label, first)
		}
	}
	res.Slope, res.Intercept = fit.LeastSquares(xs, ys)
	if cfg.linger > 0 {
		time.Sleep(cfg.linger)
		s := sample{Conns: cl.count(), RSS: rss(cfg.pid), Goroutines: cl.goroutines(), Errors: errs, Disconnects: cl.disconnects.Load()}
		res.Linger = &s
		if s.Conns > 0 {
			res.LingerPerConn = float64(s.RSS-res.RSS0) / float64(s.Conns)
		}
		log.Printf("%s: %d connections, %v later: RSS %.1f MiB, %d goroutines, %d closed by the broker",
			cfg.label, s.Conns, cfg.linger, float64(s.RSS)/(1<<20), s.Goroutines, s.Disconnects)
	}
	for i, u := range cfg.dump {
		if err := cl.fetchTo(u, filepath.Join(cfg.out, fmt.Sprintf("%s-dump%d-%s", cfg.label, i, dumpName(u)))); err != nil {
			log.Printf("dump %s: %v", u, err)
		}
	}
	fmt.Printf("%s\t%s\tslope %.0f B/conn\tRSS0 %d\tgoroutines0 %d", cfg.label, cfg.url, res.Slope, res.RSS0, res.Goroutine0)
	for _, s := range res.Samples {
		fmt.Printf("\t%d:%d B/%d g", s.Conns, s.RSS, s.Goroutines)
	}
	fmt.Println()
	if cfg.jsonOut != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(cfg.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if errs > 0 || cl.disconnects.Load() > 0 {
		return fmt.Errorf("%d connection errors, %d closed by the broker", errs, cl.disconnects.Load())
	}
	return nil
}

// dumpName is a file name for a dumped URL: its last path element.
func dumpName(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "out"
	}
	b := filepath.Base(p.Path)
	if b == "." || b == "/" {
		return "out"
	}
	return b
}

func (cl *client) count() int {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return len(cl.conns)
}

// openUpTo opens connections until target are open (or every attempt has
// been made once) and returns the errors and the first error's text.
func (cl *client) openUpTo(target int) (int, string) {
	have := cl.count()
	if have >= target {
		return 0, ""
	}
	idx := make(chan int)
	var errs atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for w := 0; w < cl.cfg.conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				c, err := cl.open(i)
				if err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, err.Error())
					continue
				}
				cl.mu.Lock()
				cl.conns = append(cl.conns, c)
				cl.mu.Unlock()
			}
		}()
	}
	for i := have; i < target; i++ {
		idx <- i
	}
	close(idx)
	wg.Wait()
	f, _ := first.Load().(string)
	return int(errs.Load()), f
}

// dial opens a TCP connection from the source address of connection i.
func (cl *client) dial(ctx context.Context, i int, addr string) (net.Conn, error) {
	src := cl.cfg.src[i%len(cl.cfg.src)]
	nd := net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)},
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	return nd.DialContext(ctx, "tcp", addr)
}

// open opens and sets up connection i, and starts its reader.
func (cl *client) open(i int) (*conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cl.cfg.timeout)
	defer cancel()
	switch cl.cfg.broker {
	case "kraken", "centrifugo":
		return cl.openWS(ctx, i)
	case "nats":
		return cl.openNATS(ctx, i)
	}
	return nil, fmt.Errorf("unknown broker %q", cl.cfg.broker)
}

// openWS upgrades to WebSocket and runs the broker's connect and
// subscribe exchange.
func (cl *client) openWS(ctx context.Context, i int) (*conn, error) {
	d := ws.Dialer{
		Timeout:   cl.cfg.timeout,
		TLSConfig: cl.tlsConf,
		NetDial: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return cl.dial(ctx, i, addr)
		},
	}
	nc, br, _, err := d.Dial(ctx, cl.cfg.url)
	if err != nil {
		return nil, err
	}
	var r io.Reader = nc
	if br != nil {
		r = io.MultiReader(br, nc)
	}
	rw := struct {
		io.Reader
		io.Writer
	}{r, nc}
	c := &conn{nc: nc}
	fail := func(err error) (*conn, error) {
		_ = nc.Close()
		return nil, err
	}
	dl, _ := ctx.Deadline()
	_ = nc.SetReadDeadline(dl)
	if cl.cfg.broker == "kraken" {
		err = krakenSetup(rw, cl.cfg.token, cl.cfg.topics)
	} else {
		err = centrifugoSetup(rw, cl.cfg.token, cl.cfg.topics)
	}
	if err != nil {
		return fail(err)
	}
	_ = nc.SetReadDeadline(time.Time{})
	go cl.readWS(c, rw)
	return c, nil
}

// msgpMap is a msgpack map of string keys and values.
func msgpMap(kv ...string) []byte {
	b := msgp.AppendMapHeader(nil, uint32(len(kv)/2))
	for _, s := range kv {
		b = msgp.AppendString(b, s)
	}
	return b
}

// krakenReply decodes one of kraken's msgpack replies.
func krakenReply(p []byte) (map[string]any, error) {
	v, _, err := msgp.ReadIntfBytes(p)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("reply is a %T", v)
	}
	return m, nil
}

// krakenSetup authenticates and subscribes to topics.
func krakenSetup(rw io.ReadWriter, token string, topics []string) error {
	if err := wsutil.WriteClientBinary(rw, msgpMap("type", "auth", "token", token)); err != nil {
		return err
	}
	for {
		p, err := wsutil.ReadServerBinary(rw)
		if err != nil {
			return fmt.Errorf("auth reply: %w", err)
		}
		m, err := krakenReply(p)
		if err != nil {
			return err
		}
		if m["type"] == "auth" {
			if m["success"] != true {
				return fmt.Errorf("auth refused: %v", m)
			}
			break
		}
	}
	for _, t := range topics {
		if err := wsutil.WriteClientBinary(rw, msgpMap("type", "subscribe", "topic", t)); err != nil {
			return err
		}
	}
	for want := len(topics); want > 0; {
		p, err := wsutil.ReadServerBinary(rw)
		if err != nil {
			return fmt.Errorf("subscribe reply: %w", err)
		}
		m, err := krakenReply(p)
		if err != nil {
			return err
		}
		switch m["type"] {
		case "subscribed":
			want--
		case "error":
			return fmt.Errorf("subscribe refused: %v", m)
		}
	}
	return nil
}

// centrifugoSetup connects (with token, if any) and subscribes to the
// channels of topics, over Centrifugo's JSON protocol.
func centrifugoSetup(rw io.ReadWriter, token string, topics []string) error {
	connect := map[string]any{}
	if token != "" {
		connect["token"] = token
	}
	cmds := []map[string]any{{"id": 1, "connect": connect}}
	for i, t := range topics {
		cmds = append(cmds, map[string]any{"id": i + 2, "subscribe": map[string]any{"channel": t}})
	}
	// Commands are newline-delimited JSON; the subscribes are sent after
	// the connect reply, as a client does.
	for i, cmd := range cmds {
		b, _ := json.Marshal(cmd)
		if err := wsutil.WriteClientText(rw, b); err != nil {
			return err
		}
		if i == 0 || i == len(cmds)-1 {
			want := map[int]bool{}
			if i == 0 {
				want[1] = true
			} else {
				for j := 2; j <= len(cmds); j++ {
					want[j] = true
				}
			}
			if err := centrifugoReplies(rw, want); err != nil {
				return err
			}
		}
	}
	return nil
}

// centrifugoReplies reads replies until every id in want has one.
func centrifugoReplies(rw io.ReadWriter, want map[int]bool) error {
	for len(want) > 0 {
		p, err := wsutil.ReadServerText(rw)
		if err != nil {
			return fmt.Errorf("reply: %w", err)
		}
		for _, line := range bytes.Split(p, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var r struct {
				ID    int             `json:"id"`
				Error json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				return fmt.Errorf("reply %q: %w", line, err)
			}
			if r.Error != nil {
				return fmt.Errorf("command %d: error %s", r.ID, r.Error)
			}
			delete(want, r.ID)
		}
	}
	return nil
}

// readWS reads until the connection ends, answering Centrifugo's pings.
func (cl *client) readWS(c *conn, rw io.ReadWriter) {
	for {
		p, op, err := wsutil.ReadServerData(rw)
		if err != nil {
			cl.lost(c, err)
			return
		}
		if cl.cfg.broker == "centrifugo" && op == ws.OpText {
			for _, line := range bytes.Split(p, []byte("\n")) {
				if string(bytes.TrimSpace(line)) == "{}" {
					c.wmu.Lock()
					_ = wsutil.WriteClientText(c.nc, []byte("{}"))
					c.wmu.Unlock()
				}
			}
		}
	}
}

// lost counts a connection that ended while the client still held it.
func (cl *client) lost(c *conn, err error) {
	if errors.Is(err, net.ErrClosed) {
		return
	}
	if n := cl.disconnects.Add(1); n <= 3 {
		log.Printf("%s: connection closed by the broker: %v", cl.cfg.label, err)
	}
}

// heartbeats sends kraken's heartbeat (an empty binary frame) on every
// connection every -heartbeat.
func (cl *client) heartbeats() {
	hb := ws.MustCompileFrame(ws.MaskFrame(ws.NewBinaryFrame(nil)))
	for range time.Tick(cl.cfg.heartbeat) {
		cl.mu.Lock()
		conns := append([]*conn(nil), cl.conns...)
		cl.mu.Unlock()
		for _, c := range conns {
			_ = c.write(hb)
		}
	}
}

// openNATS opens a NATS client connection: INFO, the TLS handshake for
// tls://, CONNECT, one SUB per subject, PING, and waits for PONG.
func (cl *client) openNATS(ctx context.Context, i int) (*conn, error) {
	u, err := url.Parse(cl.cfg.url)
	if err != nil {
		return nil, err
	}
	nc, err := cl.dial(ctx, i, u.Host)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*conn, error) {
		_ = nc.Close()
		return nil, err
	}
	dl, _ := ctx.Deadline()
	_ = nc.SetDeadline(dl)
	// INFO comes in the clear, byte by byte so that nothing of the TLS
	// handshake is read into a buffer.
	var info []byte
	one := make([]byte, 1)
	for !bytes.HasSuffix(info, []byte("\r\n")) {
		if _, err := nc.Read(one); err != nil {
			return fail(fmt.Errorf("INFO: %w", err))
		}
		info = append(info, one[0])
		if len(info) > 1<<16 {
			return fail(errors.New("INFO too long"))
		}
	}
	if !bytes.HasPrefix(info, []byte("INFO ")) {
		return fail(fmt.Errorf("want INFO, got %q", info))
	}
	tlsOn := u.Scheme == "tls"
	if tlsOn {
		conf := cl.tlsConf.Clone()
		conf.ServerName = u.Hostname()
		tc := tls.Client(nc, conf)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(fmt.Errorf("TLS handshake: %w", err))
		}
		nc = tc
	}
	var b strings.Builder
	fmt.Fprintf(&b, "CONNECT {\"verbose\":false,\"pedantic\":false,\"tls_required\":%t,\"lang\":\"bench\",\"version\":\"0\",\"protocol\":1}\r\n", tlsOn)
	for j, s := range cl.cfg.topics {
		fmt.Fprintf(&b, "SUB %s %d\r\n", s, j+1)
	}
	b.WriteString("PING\r\n")
	if _, err := io.WriteString(nc, b.String()); err != nil {
		return fail(err)
	}
	br := bufio.NewReaderSize(nc, 512)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return fail(fmt.Errorf("PONG: %w", err))
		}
		if strings.HasPrefix(line, "-ERR") {
			return fail(fmt.Errorf("server: %s", strings.TrimSpace(line)))
		}
		if strings.HasPrefix(line, "PONG") {
			break
		}
	}
	_ = nc.SetDeadline(time.Time{})
	c := &conn{nc: nc}
	go cl.readNATS(c, br)
	return c, nil
}

// readNATS reads until the connection ends, answering PINGs.
func (cl *client) readNATS(c *conn, br *bufio.Reader) {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			cl.lost(c, err)
			return
		}
		if strings.HasPrefix(line, "PING") {
			_ = c.write([]byte("PONG\r\n"))
		}
	}
}

// rss is VmRSS of pid in bytes (0 without a pid).
func rss(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Printf("pid %d: %v", pid, err)
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// goroutines reads the broker's goroutine count from -goroutines: the
// go_goroutines gauge of a Prometheus page, or the total of a goroutine
// profile in debug=1 form; -1 when not known.
func (cl *client) goroutines() int64 {
	if cl.cfg.goroutines == "" {
		return -1
	}
	resp, err := cl.httpc.Get(cl.cfg.goroutines)
	if err != nil {
		log.Printf("goroutines: %v", err)
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var rest string
		switch {
		case strings.HasPrefix(line, "go_goroutines "):
			rest = strings.TrimPrefix(line, "go_goroutines ")
		case strings.HasPrefix(line, "goroutine profile: total "):
			rest = strings.TrimPrefix(line, "goroutine profile: total ")
		default:
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		if err == nil {
			return int64(v)
		}
	}
	log.Printf("goroutines: no go_goroutines or goroutine profile total at %s", cl.cfg.goroutines)
	return -1
}

// fetchTo saves the body of u into path.
func (cl *client) fetchTo(u, path string) error {
	resp, err := cl.httpc.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	log.Printf("saved %s", path)
	return f.Close()
}

// table prints the results in the -json files as one Markdown table.
func table(w io.Writer, files []string) error {
	fmt.Fprintln(w, "| setup | URL | RSS slope per idle connection | RSS at 0 / first / last step | goroutines at 0 / first / last step | connections | errors, closed by the broker | after -linger: RSS, (RSS − RSS at 0) / connections |")
	fmt.Fprintln(w, "|---|---|---:|---|---|---|---|---|")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if len(r.Samples) == 0 {
			continue
		}
		first, last := r.Samples[0], r.Samples[len(r.Samples)-1]
		mib := func(v int64) string { return fmt.Sprintf("%.1f MiB", float64(v)/(1<<20)) }
		linger := "—"
		if r.Linger != nil {
			linger = fmt.Sprintf("%s, %.0f B", mib(r.Linger.RSS), r.LingerPerConn)
			last.Disconnects = r.Linger.Disconnects
		}
		fmt.Fprintf(w, "| %s | `%s` | **%.0f B** | %s / %s / %s | %d / %d / %d | %d → %d | %d, %d | %s |\n",
			r.Label, r.URL, r.Slope, mib(r.RSS0), mib(first.RSS), mib(last.RSS),
			r.Goroutine0, first.Goroutines, last.Goroutines, first.Conns, last.Conns, last.Errors, last.Disconnects, linger)
	}
	return nil
}

// genCert writes a self-signed test CA (ca.pem) and a server certificate
// it signed (cert.pem, key.pem) for 127.0.0.1, ::1 and localhost, all
// ECDSA P-256, into dir.
func genCert(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "bench test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(30 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	files := []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{"ca.pem", "CERTIFICATE", caDER, 0o644},
		{"cert.pem", "CERTIFICATE", der, 0o644},
		{"key.pem", "EC PRIVATE KEY", keyDER, 0o600},
	}
	for _, f := range files {
		b := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), b, f.mode); err != nil {
			return err
		}
	}
	log.Printf("wrote %s/ca.pem, cert.pem, key.pem", dir)
	return nil
}
