// Command memprofile measures what one idle, authenticated connection costs
// inside the broker, by owner. It runs kraken's server in this process with
// every allocation recorded (runtime.MemProfileRate = 1) and opens N
// connections from a child process (this program again, with -client), so
// that the broker's process holds only the broker's side. Each connection
// authenticates, subscribes to two topics and receives one message per
// topic, then goes idle.
//
//	go run ./bench/memprofile -n 10000
//	go run ./bench/memprofile -n 5000 -transport mqtt
//
// With -transport mqtt the idle connections are MQTT 3.1.1 ones, on
// pkg/mqtt/listener beside the server: CONNECT with the token as client id,
// user name and password, SUBSCRIBE to the same two topics at QoS 0, one
// message delivered per topic. The publisher stays a WebSocket connection.
//
// It then attributes every byte the process grew by, per connection:
//
//   - the live heap, by allocation site, grouped by owner: kraken's own
//     records, the token's grant, netpoll (the copy in third_party/netpoll)
//     and the buffers it takes from bytedance/gopkg's mcache;
//   - what the Go runtime holds on top of the live heap (runtime/metrics):
//     the unused part of in-use spans, free pages not yet returned to the
//     OS, stacks, GC and span metadata, and the memory profile's own
//     buckets (there only because of MemProfileRate = 1);
//   - the RSS the kernel counts for the process (VmRSS), before the forced
//     collections of the snapshot and after them.
//
// It also lists the bytes allocated per connection during setup (upgrade,
// auth, subscribe, the two deliveries) that were garbage by the end: the
// allocations that die young, which set how soon the collector runs and how
// far the heap grows between collections.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/server"
	ksession "github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

func main() {
	// The plain pass must not sample: set before anything is allocated.
	runtime.MemProfileRate = 0
	n := flag.Int("n", 5000, "connections (the broker holds n+1 descriptors, the client process as many)")
	transport := flag.String("transport", "websocket", "the idle connections' transport: websocket or mqtt")
	client := flag.String("client", "", "internal: run as the client process against this address")
	mqttAddr := flag.String("mqtt-addr", "", "internal: the client process's MQTT listener address (with -transport mqtt)")
	profile := flag.Bool("profile", false, "internal: run the profiled pass (MemProfileRate = 1) and print its tables")
	top := flag.Int("top", 12, "setup garbage: sites to list")
	flag.Parse()
	if *transport != "websocket" && *transport != "mqtt" {
		fmt.Fprintln(os.Stderr, "memprofile: -transport is websocket or mqtt")
		os.Exit(2)
	}
	mqtt := *transport == "mqtt"
	var err error
	switch {
	case *client != "":
		if mqtt && *mqttAddr == "" {
			err = errors.New("-transport mqtt: the client process needs -mqtt-addr")
			break
		}
		err = runClient(*client, *mqttAddr, *n)
	case *profile:
		runtime.MemProfileRate = 1
		err = runProfiled(*n, *top, mqtt)
	default:
		err = runPlain(*n, mqtt)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memprofile:", err)
		os.Exit(1)
	}
}

// ownersPrefix starts the line on which the profiled pass hands its live
// heap by owner to the plain pass.
const ownersPrefix = "OWNERS "

// runPlain runs the profiled pass in a child process, prints its tables,
// then measures the same connections here without profiling: the runtime's
// memory classes and the RSS are not inflated by the profiler's records.
func runPlain(n int, mqtt bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, append([]string{"-profile"}, os.Args[1:]...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("profiled pass: %w", err)
	}
	owners := map[string]int64{}
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, ownersPrefix); ok {
			if err := json.Unmarshal([]byte(rest), &owners); err != nil {
				return err
			}
			continue
		}
		fmt.Println(l)
	}
	before, after, goroutines, err := session(n, mqtt)
	if err != nil {
		return err
	}
	reportPlain(before, after, owners, n)
	fmt.Printf("\ngoroutines in the broker process: %d before the connections, %d with %d idle connections open\n",
		goroutines[0], goroutines[1], n+1)
	if mqtt {
		fmt.Printf("transport: mqtt (%d idle MQTT 3.1.1 connections on pkg/mqtt/listener, QoS 0; the publisher is a WebSocket connection)\n", n)
	}
	fmt.Printf("GOGC=%s GOMEMLIMIT=%s (as set in the environment; empty: the default)\n",
		os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT"))
	printNetpoll()
	return nil
}

// runProfiled measures the live heap and the setup garbage by allocation
// site, and prints the owners' totals for the plain pass.
func runProfiled(n, top int, mqtt bool) error {
	before, after, _, err := session(n, mqtt)
	if err != nil {
		return err
	}
	owners := reportProfiled(before, after, n, top)
	b, err := json.Marshal(owners)
	if err != nil {
		return err
	}
	fmt.Printf("%s%s\n", ownersPrefix, b)
	return nil
}

// point is one measurement of the broker process.
type point struct {
	inuse   map[string]int64 // live heap bytes by allocation site
	alloc   map[string]int64 // bytes ever allocated by site
	classes map[string]int64 // runtime/metrics memory classes after the forced collections
	idle    map[string]int64 // the same before them: as the collector left the idle broker
	rssPre  int64            // VmRSS before the forced collections
	rss     int64            // VmRSS after them
}

// session starts a broker in this process (and, with mqtt, the MQTT
// listener beside it), measures it, opens n idle connections from a client
// process, measures again, and returns both points and the goroutine counts.
func session(n int, mqtt bool) (before, after point, goroutines [2]int, err error) {
	nd, err := node.New(node.Config{Session: ksession.Config{Auth: static.AllowAll{}, RecordMessages: true},
		Hub: hub.Config{Workers: 2}})
	if err != nil {
		return before, after, goroutines, err
	}
	srv, err := server.New(nd, server.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		return before, after, goroutines, err
	}
	var l *listener.Listener
	if mqtt {
		if l, err = listener.New(nd, listener.Config{Addr: "127.0.0.1:0"}); err != nil {
			return before, after, goroutines, err
		}
	}
	defer func() { _ = nd.Shutdown(context.Background()) }()
	if err = nd.Start(); err != nil {
		return before, after, goroutines, err
	}
	if err = srv.Start(); err != nil {
		return before, after, goroutines, err
	}
	addr := srv.Addr().String()
	args := []string{"-client", addr, "-n", strconv.Itoa(n)}
	if mqtt {
		if err = l.Start(); err != nil {
			return before, after, goroutines, err
		}
		args = append(args, "-transport", "mqtt", "-mqtt-addr", l.Addr().String())
	}
	time.Sleep(200 * time.Millisecond)
	before = measure()
	goroutines[0] = runtime.NumGoroutine()

	exe, err := os.Executable()
	if err != nil {
		return before, after, goroutines, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return before, after, goroutines, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return before, after, goroutines, err
	}
	if err = cmd.Start(); err != nil {
		return before, after, goroutines, err
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		return before, after, goroutines, fmt.Errorf("client process: %q, %v", line, err)
	}
	time.Sleep(time.Second) // idle: the sweep and the replies settle
	if got := nd.Hub().Stats().Connections; got != int64(n+1) {
		return before, after, goroutines, fmt.Errorf("the broker holds %d connections, want %d", got, n+1)
	}
	after = measure()
	goroutines[1] = runtime.NumGoroutine()
	return before, after, goroutines, nil
}

// runClient opens n idle connections (over MQTT to mqttAddr if it is set)
// and a WebSocket publisher, publishes one message to each topic, checks
// that every connection got both, prints "ready" and holds the connections
// until its stdin closes.
func runClient(addr, mqttAddr string, n int) error {
	conns := make([]net.Conn, 0, n)
	readers := make([]*bufio.Reader, 0, n)
	for i := 0; i < n; i++ {
		var c net.Conn
		var br *bufio.Reader
		var err error
		if mqttAddr != "" {
			c, br, err = dialMQTT(mqttAddr, i)
		} else {
			c, br, err = dial(addr, i)
		}
		if err != nil {
			return err
		}
		conns = append(conns, c)
		readers = append(readers, br)
	}
	pub, _, err := dial(addr, n)
	if err != nil {
		return err
	}
	for _, t := range []string{"bench/idle/a", "bench/idle/b"} {
		if err := ws.WriteFrame(pub, ws.MaskFrame(ws.NewBinaryFrame(testpeer.Map("type", "publish", "topic", t, "data", "x")))); err != nil {
			return err
		}
	}
	for _, br := range readers { // every subscriber reads its two messages
		for k := 0; k < 2; k++ {
			var err error
			if mqttAddr != "" {
				err = readMQTT(br)
			} else {
				_, err = ws.ReadFrame(br)
			}
			if err != nil {
				return err
			}
		}
	}
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil && !errors.Is(err, os.ErrClosed) {
		return err
	}
	runtime.KeepAlive(conns)
	runtime.KeepAlive(pub)
	return nil
}

// dial opens one connection: upgrade, auth, two subscriptions, and waits
// for the three replies.
func dial(addr string, i int) (net.Conn, *bufio.Reader, error) {
	c, br, _, err := ws.Dial(context.Background(), "ws://"+addr+"/ws")
	if err != nil {
		return nil, nil, err
	}
	if br == nil {
		br = bufio.NewReaderSize(c, 512)
	}
	for _, m := range [][]byte{
		testpeer.Map("type", "auth", "token", fmt.Sprintf("idle-%d", i)),
		testpeer.Map("type", "subscribe", "topic", "bench/idle/a"),
		testpeer.Map("type", "subscribe", "topic", "bench/idle/b"),
	} {
		if err := ws.WriteFrame(c, ws.MaskFrame(ws.NewBinaryFrame(m))); err != nil {
			return nil, nil, err
		}
	}
	for k := 0; k < 3; k++ {
		if _, err := ws.ReadFrame(br); err != nil {
			return nil, nil, err
		}
	}
	return c, br, nil
}

// dialMQTT opens one MQTT connection: CONNECT with the token as client id,
// user name and password, SUBSCRIBE to the two topics at QoS 0
// (mosquitto_sub's default), and waits for CONNACK and SUBACK.
func dialMQTT(addr string, i int) (net.Conn, *bufio.Reader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	str := func(s string) []byte { return append([]byte{byte(len(s) >> 8), byte(len(s))}, s...) }
	token := str(fmt.Sprintf("idle-%d", i))
	body := append(str("MQTT"), 4, 0xc2, 0, 0)                        // user name, password, clean session, no keep-alive
	body = append(append(append(body, token...), token...), token...) // client id, user name, password: the token
	conn := append([]byte{0x10, byte(len(body))}, body...)
	sub := []byte{0x82, 0, 0, 1}
	for _, t := range []string{"bench/idle/a", "bench/idle/b"} {
		sub = append(append(sub, str(t)...), 0)
	}
	sub[1] = byte(len(sub) - 2)
	if _, err := c.Write(append(conn, sub...)); err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(c, 512)
	for k := 0; k < 2; k++ {
		if err := readMQTT(br); err != nil {
			return nil, nil, err
		}
	}
	return c, br, nil
}

// readMQTT reads one packet of under 128 bytes of body.
func readMQTT(r *bufio.Reader) error {
	if _, err := r.ReadByte(); err != nil {
		return err
	}
	n, err := r.ReadByte()
	if err != nil {
		return err
	}
	if n >= 0x80 {
		return fmt.Errorf("mqtt: packet of 128 bytes or more (remaining length byte %#x)", n)
	}
	_, err = r.Discard(int(n))
	return err
}

// measure reads VmRSS, forces the collections the heap profile needs, and
// returns the heap by allocation site and the runtime's memory classes.
func measure() point {
	p := point{rssPre: vmRSS(), idle: memClasses()}
	for i := 0; i < 4; i++ { // the profile lags up to two cycles behind
		runtime.GC()
	}
	p.inuse, p.alloc = heapBySite()
	p.classes = memClasses()
	p.rss = vmRSS()
	return p
}

func heapBySite() (inuse, alloc map[string]int64) {
	var recs []runtime.MemProfileRecord
	n, _ := runtime.MemProfile(nil, false)
	for {
		recs = make([]runtime.MemProfileRecord, n+100)
		var ok bool
		n, ok = runtime.MemProfile(recs, false)
		if ok {
			recs = recs[:n]
			break
		}
	}
	inuse, alloc = map[string]int64{}, map[string]int64{}
	for _, r := range recs {
		s := site(r.Stack())
		inuse[s] += r.InUseBytes()
		alloc[s] += r.AllocBytes
	}
	return inuse, alloc
}

// memClasses reads the runtime's /memory/classes metrics, which add up to
// everything the runtime has mapped.
func memClasses() map[string]int64 {
	var samples []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/memory/classes/") && d.Kind == metrics.KindUint64 {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	out := map[string]int64{}
	for _, s := range samples {
		out[s.Name] = int64(s.Value.Uint64())
	}
	return out
}

func vmRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func site(stack []uintptr) string {
	frames := runtime.CallersFrames(stack)
	var chain []string
	for {
		f, more := frames.Next()
		name := f.Function
		if !strings.HasPrefix(name, "runtime.") && !strings.HasPrefix(name, "internal/") &&
			!strings.HasPrefix(name, "sync.") && !strings.HasPrefix(name, "reflect.") {
			chain = append(chain, short(name))
			if len(chain) == 3 || !more {
				break
			}
		}
		if !more {
			break
		}
	}
	return strings.Join(chain, " < ")
}

func short(fn string) string {
	fn = strings.TrimPrefix(fn, "github.com/")
	fn = strings.TrimPrefix(fn, "NoLagApp/kraken/")
	return fn
}

// owner names who an allocation belongs to, from its innermost frame.
func owner(site string) string {
	inner, _, _ := strings.Cut(site, " < ")
	switch {
	case strings.HasPrefix(inner, "pkg/auth/"):
		return "grant"
	case strings.HasPrefix(inner, "pkg/"):
		return "kraken"
	case strings.HasPrefix(inner, "cloudwego/netpoll"), strings.HasPrefix(inner, "bytedance/gopkg"),
		strings.HasPrefix(site, "syscall.anyToSockaddr < syscall.Accept"):
		return "netpoll"
	case inner == "":
		return "runtime"
	}
	return "other"
}

// owners are the rows of the live heap by owner, in report order.
var owners = []struct{ key, what string }{
	{"kraken", "kraken's records: hub.Conn, reader state, session, subscriptions, index slots"},
	{"grant", "the token's grant (shared by the connections of one token, with AUTH_ALLOW_ALL as here and with a token file)"},
	{"netpoll", "netpoll: connection, buffers, FD operator, addresses, callbacks, server table"},
	{"other", "other live heap (this program, the standard library)"},
	{"runtime", "live heap without a stack (runtime-internal)"},
}

// What the runtime/metrics memory classes other than heap objects are.
var classNames = []struct{ metric, what string }{
	{"/memory/classes/heap/unused:bytes", "heap: unused part of in-use spans (size-class rounding, fragmentation)"},
	{"/memory/classes/heap/free:bytes", "heap: free pages not yet returned to the OS"},
	{"/memory/classes/heap/stacks:bytes", "stacks: goroutine stacks"},
	{"/memory/classes/os-stacks:bytes", "stacks: OS thread stacks"},
	{"/memory/classes/metadata/mspan/inuse:bytes", "metadata: span structures"},
	{"/memory/classes/metadata/mcache/inuse:bytes", "metadata: per-P caches"},
	{"/memory/classes/metadata/other:bytes", "metadata: GC bitmaps, arena index, other"},
	{"/memory/classes/other:bytes", "other runtime (specials, trace buffers, debug structures)"},
	{"/memory/classes/profiling/buckets:bytes", "profiling buckets"},
}

// reportProfiled prints the live heap by site and the setup garbage, and
// returns the live heap by owner.
func reportProfiled(before, after point, n, top int) map[string]int64 {
	per := func(d int64) float64 { return float64(d) / float64(n) }
	type row struct {
		owner, site string
		bytes       int64
	}
	var rows []row
	byOwner := map[string]int64{}
	for k, v := range after.inuse {
		d := v - before.inuse[k]
		byOwner[owner(k)] += d
		if d > int64(n)/4 { // a quarter byte per connection or more
			rows = append(rows, row{owner(k), k, d})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].bytes > rows[j].bytes })
	fmt.Printf("live heap per idle connection, %d connections (profiled pass, allocation site innermost first)\n\n", n)
	fmt.Printf("| B/conn | owner | allocation site |\n|---:|---|---|\n")
	for _, r := range rows {
		fmt.Printf("| %.0f | %s | %s |\n", per(r.bytes), r.owner, r.site)
	}

	var grows []row
	var garbage int64
	for k, v := range after.alloc {
		d := v - before.alloc[k] - (after.inuse[k] - before.inuse[k]) // allocated during setup and freed again
		if d <= int64(n)/4 || owner(k) == "other" {
			continue // this program's own measuring
		}
		garbage += d
		grows = append(grows, row{owner(k), k, d})
	}
	sort.Slice(grows, func(i, j int) bool { return grows[i].bytes > grows[j].bytes })
	fmt.Printf("\nsetup garbage: %.0f B per connection allocated by the broker while the connections were set up and freed since (top %d sites)\n\n",
		per(garbage), top)
	fmt.Printf("| B/conn | owner | allocation site |\n|---:|---|---|\n")
	for i, r := range grows {
		if i == top {
			break
		}
		fmt.Printf("| %.0f | %s | %s |\n", per(r.bytes), r.owner, r.site)
	}
	fmt.Println()
	return byOwner
}

// reportPlain attributes every byte the unprofiled broker grew by: the live
// heap by owner (from the profiled pass), then the runtime's classes.
func reportPlain(before, after point, byOwner map[string]int64, n int) {
	per := func(d int64) float64 { return float64(d) / float64(n) }
	delta := func(m string) int64 { return after.classes[m] - before.classes[m] }
	idle := func(m string) int64 { return after.idle[m] - before.idle[m] }
	objects := delta("/memory/classes/heap/objects:bytes")
	var profiled int64
	for _, v := range byOwner {
		profiled += v
	}
	fmt.Printf("every byte per idle connection, by owner (plain pass, %d connections, no profiling)\n\n", n)
	fmt.Printf("Idle: as the collector left the broker, 1 s after the last message. Collected: after 4 forced collections.\n\n")
	fmt.Printf("| idle B/conn | collected B/conn | owner | what |\n|---:|---:|---|---|\n")
	for _, o := range owners {
		fmt.Printf("| | %.0f | %s | %s |\n", per(byOwner[o.key]), o.key, o.what)
	}
	fmt.Printf("| | %.0f | | live heap of this pass against the profiled one (heap objects %.0f − %.0f) |\n",
		per(objects-profiled), per(objects), per(profiled))
	const objectsMetric = "/memory/classes/heap/objects:bytes"
	fmt.Printf("| %.0f | %.0f | | **heap objects** (idle: live and not yet collected) |\n", per(idle(objectsMetric)), per(objects))
	total, totalIdle := objects, idle(objectsMetric)
	for _, c := range classNames {
		d, di := delta(c.metric), idle(c.metric)
		total += d
		totalIdle += di
		fmt.Printf("| %.0f | %.0f | runtime | %s |\n", per(di), per(d), c.what)
	}
	fmt.Printf("| **%.0f** | **%.0f** | | **everything the runtime holds (runtime/metrics: total − released)** |\n", per(totalIdle), per(total))
	fmt.Printf("| %.0f | %.0f | | **VmRSS** (RSS %.1f → %.1f MiB idle, %.1f → %.1f MiB collected) |\n",
		per(after.rssPre-before.rssPre), per(after.rss-before.rss),
		float64(before.rssPre)/(1<<20), float64(after.rssPre)/(1<<20), float64(before.rss)/(1<<20), float64(after.rss)/(1<<20))
}

func printNetpoll() {
	b, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	for _, d := range b.Deps {
		if d.Path == "github.com/cloudwego/netpoll" {
			rep := "stock"
			if d.Replace != nil {
				rep = "replaced by " + d.Replace.Path
			}
			fmt.Printf("netpoll: %s %s (%s)\n", d.Path, d.Version, rep)
		}
	}
}
