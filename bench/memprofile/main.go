// Command memprofile measures what one idle, authenticated connection costs
// inside the broker, by owner. It runs kraken's server in this process with
// every allocation recorded (runtime.MemProfileRate = 1), opens N
// connections that each authenticate, subscribe to two topics and receive
// one message, lets them go idle, and attributes the bytes still in use to
// the code that allocated them: netpoll's connection record, its buffers,
// kraken's connection record, subscriptions, and so on.
//
//	go run ./bench/memprofile -n 5000
//
// The client side of each connection lives in the same process; its
// allocations are reported separately and left out of the per-connection
// figure.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/auth/static"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/mqtt/listener"
	"github.com/NoLagApp/kraken/pkg/server"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

func main() {
	n := flag.Int("n", 5000, "connections (the process holds both ends: keep 2n under the open-file limit)")
	transport := flag.String("transport", "websocket", "the idle connections' transport: websocket or mqtt")
	flag.Parse()
	runtime.MemProfileRate = 1
	if *transport != "websocket" && *transport != "mqtt" {
		fmt.Fprintln(os.Stderr, "memprofile: -transport is websocket or mqtt")
		os.Exit(2)
	}
	if err := run(*n, *transport == "mqtt"); err != nil {
		fmt.Fprintln(os.Stderr, "memprofile:", err)
		os.Exit(1)
	}
}

func run(n int, mqtt bool) error {
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Auth: static.AllowAll{}, RecordMessages: true,
		Hub: hub.Config{Workers: 2}})
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Shutdown(context.Background()) }()
	addr := srv.Addr().String()
	connect := dial
	if mqtt {
		l, err := listener.New(listener.Config{Addr: "127.0.0.1:0", Protocol: srv.Protocol(), OnOpen: srv.OpenedMQTT})
		if err != nil {
			return err
		}
		if err := l.Start(); err != nil {
			return err
		}
		defer func() { l.Drain(); _ = l.Shutdown(context.Background()) }()
		mqttAddr := l.Addr().String()
		connect = func(_ string, i int) (net.Conn, error) { return dialMQTT(mqttAddr, i) }
	}
	before := snapshot()
	goroutinesBefore := runtime.NumGoroutine()
	conns := make([]net.Conn, 0, n)
	for i := 0; i < n; i++ {
		c, err := connect(addr, i)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	pub, err := dial(addr, n)
	if err != nil {
		return err
	}
	for _, t := range []string{"bench/idle/a", "bench/idle/b"} {
		if err := ws.WriteFrame(pub, ws.MaskFrame(ws.NewBinaryFrame(testpeer.Map("type", "publish", "topic", t, "data", "x")))); err != nil {
			return err
		}
	}
	for _, c := range conns { // every subscriber reads its two messages
		r := bufio.NewReader(c)
		for k := 0; k < 2; k++ {
			var err error
			if mqtt {
				err = readMQTT(r)
			} else {
				_, err = ws.ReadFrame(r)
			}
			if err != nil {
				return err
			}
		}
	}
	time.Sleep(time.Second)
	after := snapshot()
	if got := srv.Hub().Stats().Connections; got != int64(n+1) {
		return fmt.Errorf("the broker holds %d connections, want %d", got, n+1)
	}
	report(before, after, n)
	// The client side holds no goroutine per connection either: its
	// connections are only read above, from this goroutine.
	fmt.Printf("goroutines: %d before the connections, %d with %d idle connections open\n",
		goroutinesBefore, runtime.NumGoroutine(), n+1)
	runtime.KeepAlive(conns)
	runtime.KeepAlive(pub)
	return nil
}

// dial opens one connection: upgrade, auth, two subscriptions, and waits
// for the three replies.
func dial(addr string, i int) (net.Conn, error) {
	c, br, _, err := ws.Dial(context.Background(), "ws://"+addr+"/ws")
	if err != nil {
		return nil, err
	}
	if br == nil {
		br = bufio.NewReader(c)
	}
	for _, m := range [][]byte{
		testpeer.Map("type", "auth", "token", fmt.Sprintf("idle-%d", i)),
		testpeer.Map("type", "subscribe", "topic", "bench/idle/a"),
		testpeer.Map("type", "subscribe", "topic", "bench/idle/b"),
	} {
		if err := ws.WriteFrame(c, ws.MaskFrame(ws.NewBinaryFrame(m))); err != nil {
			return nil, err
		}
	}
	for k := 0; k < 3; k++ {
		if _, err := ws.ReadFrame(br); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// dialMQTT opens one MQTT connection: CONNECT, SUBSCRIBE to the two
// topics at QoS 0 (mosquitto_sub's default), and waits for CONNACK and
// SUBACK.
func dialMQTT(addr string, i int) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	r := bufio.NewReader(c)
	for k := 0; k < 2; k++ {
		if err := readMQTT(r); err != nil {
			return nil, err
		}
	}
	return c, nil
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
	_, err = r.Discard(int(n))
	return err
}

// snapshot returns the bytes in use by allocation site, keyed by the first
// frame that is not the runtime or an allocation helper.
func snapshot() map[string]int64 {
	for i := 0; i < 4; i++ { // the profile lags up to two cycles behind
		runtime.GC()
	}
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
	out := map[string]int64{}
	for _, r := range recs {
		out[site(r.Stack())] += r.InUseBytes()
	}
	return out
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

func report(before, after map[string]int64, n int) {
	type row struct {
		site  string
		bytes int64
	}
	var rows []row
	var server, client int64
	for k, v := range after {
		d := v - before[k]
		if d <= int64(n)/4 { // less than a quarter byte per connection: noise
			continue
		}
		rows = append(rows, row{k, d})
		if isClient(k) {
			client += d
		} else {
			server += d
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].bytes > rows[j].bytes })
	fmt.Printf("heap in use per idle connection, %d connections (bytes; allocation site, innermost first)\n\n", n)
	fmt.Printf("| bytes/conn | side | allocation site |\n|---:|---|---|\n")
	for _, r := range rows {
		side := "broker"
		if isClient(r.site) {
			side = "client"
		}
		fmt.Printf("| %.0f | %s | %s |\n", float64(r.bytes)/float64(n), side, r.site)
	}
	fmt.Printf("\nbroker total: %.0f B/conn; client side (left out): %.0f B/conn\n",
		float64(server)/float64(n), float64(client)/float64(n))
}

// isClient reports allocations made by this program's clients (Go's net
// package and gobwas's dialer), not by the broker.
func isClient(site string) bool {
	for _, p := range []string{"net.", "gobwas/ws.Dial", "main.dial", "main.dialMQTT", "bufio.NewReader", "main.run", "os.", "internal/poll"} {
		if strings.HasPrefix(site, p) || strings.Contains(site, " < "+p) {
			return true
		}
	}
	return false
}
