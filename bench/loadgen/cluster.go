package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// What the cluster case adds to fanout and latency: subscribers spread over
// the nodes of a cluster (--urls), the CPU of every process of the broker
// (--cpu-pids: the nodes and the NATS server) and the NATS server's message
// counts over the measured window (--nats-stats, bench/natsd GET /stats).

// namedPID is one process whose CPU is counted as the broker's.
type namedPID struct {
	Name string
	PID  int
}

// parsePIDs parses "n1=123,n2=456,nats=789".
func parsePIDs(s string) ([]namedPID, error) {
	var out []namedPID
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		name, v, ok := strings.Cut(f, "=")
		pid, err := strconv.Atoi(v)
		if !ok || name == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("--cpu-pids: %q is not NAME=PID", f)
		}
		out = append(out, namedPID{Name: name, PID: pid})
	}
	return out, nil
}

// splitURLs parses a comma-separated list of URLs.
func splitURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// subURL is the URL subscriber worker i of procs connects to.
func (c *Config) subURL(i int) string {
	if len(c.SubURLs) == 0 {
		return c.URL
	}
	return c.SubURLs[i%len(c.SubURLs)]
}

// checkSubURLs refuses a spread that would not be even: every URL gets the
// same number of worker processes.
func (c *Config) checkSubURLs() error {
	n := len(c.SubURLs)
	if n <= 1 {
		return nil
	}
	if c.Procs < n || c.Procs%n != 0 {
		return fmt.Errorf("--urls with %d URLs needs --procs a multiple of %d (worker i connects to URL i mod %d)", n, n, n)
	}
	return nil
}

// remoteNodes is the number of subscriber URLs other than the publisher's:
// the nodes a publish must reach through the bus.
func (c *Config) remoteNodes() int {
	seen := map[string]bool{}
	for i := range max(1, len(c.SubURLs)) {
		if u := c.subURL(i); u != c.URL {
			seen[u] = true
		}
	}
	return len(seen)
}

// cpuEach samples every --cpu-pids process.
func (e *env) cpuEach() []cpuTimes {
	out := make([]cpuTimes, len(e.cfg.CPUPids))
	for i, p := range e.cfg.CPUPids {
		v, err := procCPU(p.PID)
		if err != nil {
			e.rep.note("cpu of %s: %v", p.Name, err)
		}
		out[i] = v
	}
	return out
}

// addCPUWindow reports each --cpu-pids process's cores busy over a
// window of wall nanoseconds, from samples at its start and end.
func (e *env) addCPUWindow(prefix string, before, after []cpuTimes, wall int64) {
	if len(before) == 0 || len(after) != len(before) || wall <= 0 {
		return
	}
	for i, p := range e.cfg.CPUPids {
		d := after[i].sub(before[i])
		e.rep.add(prefix+"_cores_"+metricKey(p.Name), "CPU of "+p.Name+" (cores busy)", "cores", float64(d.total())/float64(wall), 0)
	}
}

// metricKey makes a name usable in a metric key.
func metricKey(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// natsStats is the body of bench/natsd's GET /stats.
type natsStats struct {
	InMsgs   int64      `json:"in_msgs"`
	OutMsgs  int64      `json:"out_msgs"`
	InBytes  int64      `json:"in_bytes"`
	OutBytes int64      `json:"out_bytes"`
	Slow     int64      `json:"slow_consumers"`
	Conns    []natsConn `json:"conns"`
	CPUNs    int64      `json:"cpu_ns"`
}

type natsConn struct {
	CID      uint64 `json:"cid"`
	Name     string `json:"name"`
	InMsgs   int64  `json:"in_msgs"`
	OutMsgs  int64  `json:"out_msgs"`
	InBytes  int64  `json:"in_bytes"`
	OutBytes int64  `json:"out_bytes"`
}

func (s *natsStats) clients() (in, out, inB, outB int64) {
	for _, c := range s.Conns {
		in += c.InMsgs
		out += c.OutMsgs
		inB += c.InBytes
		outB += c.OutBytes
	}
	return
}

func readNATSStats(url string) (*natsStats, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, fmt.Errorf("nats stats: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("nats stats: %s: %s", url, resp.Status)
	}
	var s natsStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return nil, fmt.Errorf("nats stats: %s: %w", url, err)
	}
	return &s, nil
}

// natsBefore reads the counts at the start of a window (nil without
// --nats-stats).
func (e *env) natsBefore() (*natsStats, error) {
	if e.cfg.NATSStats == "" {
		return nil, nil
	}
	return readNATSStats(e.cfg.NATSStats)
}

// natsAfter reads the counts at the end of a window, once they have held
// still for 50 ms (at most 2 s): every delivery has arrived by then, and
// the wait covers a node whose last publish the server has not counted.
func (e *env) natsAfter() (*natsStats, error) {
	if e.cfg.NATSStats == "" {
		return nil, nil
	}
	deadline := time.Now().Add(2 * time.Second)
	prev, err := readNATSStats(e.cfg.NATSStats)
	for err == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		var cur *natsStats
		cur, err = readNATSStats(e.cfg.NATSStats)
		if err != nil {
			break
		}
		pi, po, _, _ := prev.clients()
		ci, co, _, _ := cur.clients()
		prev = cur
		if pi == ci && po == co {
			break
		}
	}
	return prev, err
}

// addNATS reports the NATS messages of a window per publish: in (sent to
// the server by the nodes) and out (delivered by the server to the nodes),
// in total and per node, against the nodes the publish had to reach.
func (e *env) addNATS(prefix string, before, after *natsStats, publishes int) {
	if before == nil || after == nil || publishes <= 0 {
		return
	}
	p := float64(publishes)
	bi, bo, bib, bob := before.clients()
	ai, ao, aib, aob := after.clients()
	in, out := float64(ai-bi), float64(ao-bo)
	want := e.cfg.remoteNodes()
	e.rep.add(prefix+"_nats_remote_nodes", "nodes with subscribers other than the publisher's", "", float64(want), 0)
	e.rep.add(prefix+"_nats_in_per_publish", "NATS messages in per publish (nodes → server, on the server)", "", in/p, lower)
	e.rep.add(prefix+"_nats_out_per_publish", "NATS messages out per publish (server → nodes, on the server)", "", out/p, lower)
	if ai > bi {
		e.rep.add(prefix+"_nats_bytes_per_msg", "payload bytes per NATS message in", "B", float64(aib-bib)/in, lower)
	}
	e.rep.add(prefix+"_nats_out_bytes_per_publish", "NATS bytes out per publish", "B", float64(aob-bob)/p, lower)
	e.rep.add(prefix+"_nats_server_in_per_publish", "NATS server total in per publish (Varz, internal included)", "", float64(after.InMsgs-before.InMsgs)/p, 0)
	e.rep.add(prefix+"_nats_server_out_per_publish", "NATS server total out per publish (Varz, internal included)", "", float64(after.OutMsgs-before.OutMsgs)/p, 0)
	if s := after.Slow - before.Slow; s > 0 {
		e.rep.note("NATS server: %d slow consumers during the window", s)
	}
	// The publishing node is the connection that sent messages in the
	// window; what the server hands back to it is echo, what it hands to
	// the others is the fan-out between nodes.
	base := map[uint64]natsConn{}
	for _, c := range before.Conns {
		base[c.CID] = c
	}
	var remote, echo float64
	var pubNames []string
	conns := append([]natsConn(nil), after.Conns...)
	sort.Slice(conns, func(i, j int) bool { return conns[i].Name < conns[j].Name })
	for _, c := range conns {
		b := base[c.CID]
		name := strings.TrimPrefix(c.Name, "kraken ")
		if name == "" {
			name = fmt.Sprintf("cid %d", c.CID)
		}
		di, do := float64(c.InMsgs-b.InMsgs), float64(c.OutMsgs-b.OutMsgs)
		e.rep.add(prefix+"_nats_in_"+metricKey(name), "NATS messages in per publish from "+name, "", di/p, 0)
		e.rep.add(prefix+"_nats_out_"+metricKey(name), "NATS messages out per publish to "+name, "", do/p, 0)
		if di > 0 {
			echo += do
			pubNames = append(pubNames, name)
		} else {
			remote += do
		}
	}
	e.rep.add(prefix+"_nats_out_remote_per_publish", "NATS messages out per publish to the other nodes", "", remote/p, 0)
	e.rep.add(prefix+"_nats_echo_per_publish", "NATS messages out per publish back to the publishing node (echo)", "", echo/p, lower)
	if remote != float64(want)*p {
		e.rep.note("NATS delivered %s messages per publish to the nodes other than the publisher's; nodes with subscribers among them: %d", sig(remote/p), want)
	}
	if echo > 0 {
		e.rep.note("NATS delivered %s messages per publish back to the publishing node (%s): its connection has echo on, and the node drops its own messages", sig(echo/p), strings.Join(pubNames, ", "))
	}
	if in != p {
		e.rep.note("NATS received %s messages per publish, not 1", sig(in/p))
	}
}

// addPerURL reports, for each URL of --urls, the latency of the
// subscribers connected to it: with a cluster, whether the nodes reached
// through the bus are the later ones.
func (e *env) addPerURL(prefix string) error {
	n := len(e.cfg.SubURLs)
	if n <= 1 {
		return nil
	}
	rs, err := callAll(e.subs, request{Op: "stats"})
	if err != nil {
		return err
	}
	for u := range n {
		var part []response
		for i, r := range rs {
			if i%n == u {
				part = append(part, r)
			}
		}
		a := aggregate(part)
		last := lastSubscriber(a.seqMax)
		key := fmt.Sprintf("%s_url%d", prefix, u+1)
		who := fmt.Sprintf("subscribers of --urls #%d", u+1)
		switch prefix {
		case "fanout":
			e.rep.add(key+"_last_p50", who+": publish → last subscriber, p50 over messages", "ms", ms(last.quantile(0.5)), lower)
			e.rep.add(key+"_last_max", who+": publish → last subscriber, max", "ms", ms(last.Max), lower)
		default:
			e.rep.add(key+"_last_p50", who+": publish → last subscriber p50", "ms", ms(last.quantile(0.5)), lower)
			e.rep.add(key+"_last_p99", who+": publish → last subscriber p99", "ms", ms(last.quantile(0.99)), lower)
			e.rep.add(key+"_all_p50", who+": publish → any delivery p50", "ms", ms(a.latency.quantile(0.5)), lower)
			e.rep.add(key+"_all_p99", who+": publish → any delivery p99", "ms", ms(a.latency.quantile(0.99)), lower)
		}
	}
	return nil
}

// machineBusy is the CPU time all processes of the machine spent on a CPU
// (user, nice, system, irq, softirq from /proc/stat) and the time the
// hypervisor took from this machine (steal), in nanoseconds.
func machineBusy() (busy, steal int64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0
	}
	var v [8]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[1+i], 10, 64); err != nil {
			return 0, 0
		}
	}
	// user nice system idle iowait irq softirq steal; guest is in user.
	const ns = int64(1e9 / clockTicks)
	return (v[0] + v[1] + v[2] + v[5] + v[6]) * ns, v[7] * ns
}

// machineSample is one reading of machineBusy.
type machineSample struct{ busy, steal int64 }

func sampleMachine() machineSample {
	b, s := machineBusy()
	return machineSample{b, s}
}

// addMachineCPU reports, with --cpu-pids, how busy the whole machine was
// over a window and how much of it was neither the broker nor the load
// generator: other work on a shared machine that the figures compete with.
func (e *env) addMachineCPU(prefix string, m0, m1 machineSample, broker cpuTimes, client int64, wall int64) {
	if len(e.cfg.CPUPids) == 0 || m0.busy <= 0 || wall <= 0 {
		return
	}
	all := float64(m1.busy-m0.busy) / float64(wall)
	e.rep.add(prefix+"_machine_cores", "whole machine CPU (cores busy, /proc/stat, 10 ms ticks)", "cores", all, 0)
	e.rep.add(prefix+"_other_cores", "other processes' CPU (machine − broker − load generator)", "cores",
		max(0, all-float64(broker.total()+client)/float64(wall)), 0)
	e.rep.add(prefix+"_steal_cores", "CPU taken by the hypervisor (steal)", "cores", float64(m1.steal-m0.steal)/float64(wall), 0)
}

// disturbance is the CPU that neither the broker nor the load generator had
// during a run: other processes plus steal, in cores (-1 when the run did
// not measure it).
func (r *Report) disturbance() float64 {
	o, ok1 := r.Metric(r.Scenario + "_other_cores")
	st, ok2 := r.Metric(r.Scenario + "_steal_cores")
	if !ok1 || !ok2 {
		return -1
	}
	return o.Value + st.Value
}

// quietRuns keeps the runs disturbed by at most max cores (all with max <=
// 0, and runs that did not measure it) and says how many it left out.
func quietRuns(rs []*Report, max float64) (kept []*Report, left int) {
	for _, r := range rs {
		if d := r.disturbance(); max > 0 && d > max {
			left++
			continue
		}
		kept = append(kept, r)
	}
	return kept, left
}
