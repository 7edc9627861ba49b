// Command natsd is the NATS server of the benchmark's cluster case: the
// embedded nats-server (github.com/nats-io/nats-server/v2/server) on one
// address, with the message counts of every client connection served as
// JSON, so the NATS messages per publish can be measured on the server.
//
//	natsd --addr 127.0.0.1:14222 --http 127.0.0.1:18222
//	BROKER_BACKEND=nats NATS_URL=nats://127.0.0.1:14222 NODE_ID=n1 WS_PORT=18080 kraken
//	curl 127.0.0.1:18222/stats
//	natsd wait --stats http://127.0.0.1:18222/stats --conns 3
//	natsd stats --stats http://127.0.0.1:18222/stats
//
// GET /stats answers the server's totals (Varz) and, for each client
// connection (Connz), its name (kraken names its connection "kraken
// NODE_ID"), the messages it sent to the server (in) and the messages the
// server delivered to it (out), and its subscriptions. The load generator
// reads it before and after a measured window (--nats-stats). The counts
// are also printed when the server exits.
//
// `natsd wait` polls /stats until at least --conns client connections are
// open (every node has connected), for scripts; `natsd stats` prints it
// as text.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "wait":
			os.Exit(waitMain(os.Args[2:], os.Stderr))
		case "stats":
			os.Exit(statsMain(os.Args[2:], os.Stdout))
		}
	}
	os.Exit(serveMain(os.Args[1:]))
}

// Stats is the body of GET /stats.
type Stats struct {
	// InMsgs and OutMsgs are the server's totals (Varz): every message
	// received from and delivered to any connection, internal ones
	// included.
	InMsgs   int64 `json:"in_msgs"`
	OutMsgs  int64 `json:"out_msgs"`
	InBytes  int64 `json:"in_bytes"`
	OutBytes int64 `json:"out_bytes"`
	// SlowConsumers counts connections the server cut off for not reading.
	SlowConsumers int64 `json:"slow_consumers"`
	// Conns are the open client connections, by connection id.
	Conns []Conn `json:"conns"`
	// CPUNs is this process's user+system CPU time since it started.
	CPUNs int64 `json:"cpu_ns"`
}

// Conn is one client connection's counts (Connz).
type Conn struct {
	CID  uint64 `json:"cid"`
	Name string `json:"name"`
	// InMsgs are the messages this client published to the server,
	// OutMsgs those the server delivered to it.
	InMsgs   int64    `json:"in_msgs"`
	OutMsgs  int64    `json:"out_msgs"`
	InBytes  int64    `json:"in_bytes"`
	OutBytes int64    `json:"out_bytes"`
	Subs     []string `json:"subs,omitempty"`
}

func serveMain(args []string) int {
	fs := flag.NewFlagSet("natsd", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:4222", "NATS client address")
	httpAddr := fs.String("http", "127.0.0.1:8222", "address of GET /stats")
	verbose := fs.Bool("v", false, "the server's own log on stderr")
	js := fs.Bool("jetstream", false, "enable JetStream (in a temporary store, removed on exit), as the deployments run it; its consumers' heartbeats and pull requests then add messages to the counts")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	host, port, err := splitHostPort(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		return 2
	}
	store := ""
	if *js {
		if store, err = os.MkdirTemp("", "natsd-js-"); err != nil {
			fmt.Fprintln(os.Stderr, "natsd:", err)
			return 1
		}
		defer func() { _ = os.RemoveAll(store) }()
	}
	ns, err := startServer(host, port, *verbose, store)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		return 1
	}
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	}()
	ln, err := net.Listen("tcp", *httpAddr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		return 1
	}
	srv := &http.Server{Handler: routes(ns), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(os.Stderr, "natsd: nats://%s, stats http://%s/stats, JetStream %v\n", ns.Addr(), ln.Addr(), *js)
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = srv.Shutdown(sctx)
		cancel()
		err = nil
	}
	if st, serr := collect(ns); serr == nil {
		printStats(os.Stdout, st)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "natsd:", err)
		return 1
	}
	return 0
}

func splitHostPort(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("bad port in %q", addr)
	}
	if port == 0 {
		port = -1 // nats-server: any free port
	}
	return h, port, nil
}

// startServer runs the embedded server and waits until it accepts clients;
// a store directory enables JetStream in it.
func startServer(host string, port int, verbose bool, store string) (*server.Server, error) {
	opts := &server.Options{Host: host, Port: port, NoSigs: true, NoLog: !verbose,
		JetStream: store != "", StoreDir: store}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, err
	}
	if verbose {
		ns.ConfigureLogger()
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("NATS server not ready")
	}
	return ns, nil
}

func routes(ns *server.Server) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		st, err := collect(ns)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	return mux
}

// collect reads the server's totals and every open client connection.
func collect(ns *server.Server) (Stats, error) {
	var st Stats
	v, err := ns.Varz(&server.VarzOptions{})
	if err != nil {
		return st, err
	}
	st.InMsgs, st.OutMsgs, st.InBytes, st.OutBytes = v.InMsgs, v.OutMsgs, v.InBytes, v.OutBytes
	st.SlowConsumers = v.SlowConsumers
	cz, err := ns.Connz(&server.ConnzOptions{Sort: server.ByCid, Subscriptions: true, Limit: 1 << 16})
	if err != nil {
		return st, err
	}
	for _, c := range cz.Conns {
		subs := append([]string(nil), c.Subs...)
		sort.Strings(subs)
		st.Conns = append(st.Conns, Conn{CID: c.Cid, Name: c.Name, InMsgs: c.InMsgs, OutMsgs: c.OutMsgs,
			InBytes: c.InBytes, OutBytes: c.OutBytes, Subs: subs})
	}
	st.CPUNs = cpuNs()
	return st, nil
}

func printStats(w io.Writer, st Stats) {
	fmt.Fprintf(w, "natsd: server in %d msgs (%d B), out %d msgs (%d B), slow consumers %d\n",
		st.InMsgs, st.InBytes, st.OutMsgs, st.OutBytes, st.SlowConsumers)
	for _, c := range st.Conns {
		fmt.Fprintf(w, "natsd: cid %d %q: in %d msgs, out %d msgs, subs %v\n", c.CID, c.Name, c.InMsgs, c.OutMsgs, c.Subs)
	}
}

// cpuNs is this process's user+system CPU time.
func cpuNs() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// waitMain polls a natsd's /stats until it lists at least --conns client
// connections, optionally each with a subscription (--subs).
func waitMain(args []string, log io.Writer) int {
	fs := flag.NewFlagSet("natsd wait", flag.ContinueOnError)
	url := fs.String("stats", "http://127.0.0.1:8222/stats", "natsd's GET /stats")
	conns := fs.Int("conns", 1, "client connections to wait for")
	timeout := fs.Duration("timeout", 10*time.Second, "longest wait")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	deadline := time.Now().Add(*timeout)
	c := http.Client{Timeout: 2 * time.Second}
	have := -1
	for time.Now().Before(deadline) {
		st, err := fetch(&c, *url)
		if err == nil {
			have = len(st.Conns)
			if have >= *conns {
				return 0
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Fprintf(log, "natsd wait: %d of %d connections at %s after %v\n", max(have, 0), *conns, *url, *timeout)
	return 1
}

func fetch(c *http.Client, url string) (Stats, error) {
	var st Stats
	resp, err := c.Get(url)
	if err != nil {
		return st, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// statsMain prints a natsd's /stats as text.
func statsMain(args []string, w io.Writer) int {
	fs := flag.NewFlagSet("natsd stats", flag.ContinueOnError)
	url := fs.String("stats", "http://127.0.0.1:8222/stats", "natsd's GET /stats")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	st, err := fetch(&http.Client{Timeout: 5 * time.Second}, *url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "natsd stats:", err)
		return 1
	}
	printStats(w, st)
	return 0
}
