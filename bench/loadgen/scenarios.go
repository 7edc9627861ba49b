package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/NoLagApp/kraken/bench/internal/fit"
)

// sum of the responses of every worker.
type agg struct {
	conns, opened, errors int
	firstErr              string
	startNs, endNs        int64
	handshake             histData
	auth                  histData
	delivered             int64
	firstRecv, lastRecv   int64
	latency               histData
	seqMax                []int64
	errFrames             int64
	errSample             string
	disconnects           int64
	short                 int
	closed                int
	closeStart, closeEnd  int64
}

func aggregate(rs []response) agg {
	var a agg
	for _, r := range rs {
		a.conns += r.Conns
		a.opened += r.Opened
		a.errors += r.Errors
		if a.firstErr == "" {
			a.firstErr = r.FirstError
		}
		if r.StartNs != 0 && (a.startNs == 0 || r.StartNs < a.startNs) {
			a.startNs = r.StartNs
		}
		if r.EndNs > a.endNs {
			a.endNs = r.EndNs
		}
		a.handshake.merge(r.Handshake)
		a.auth.merge(r.Auth)
		a.delivered += r.Delivered
		if r.FirstRecvNs != 0 && (a.firstRecv == 0 || r.FirstRecvNs < a.firstRecv) {
			a.firstRecv = r.FirstRecvNs
		}
		if r.LastRecvNs > a.lastRecv {
			a.lastRecv = r.LastRecvNs
		}
		a.latency.merge(r.Latency)
		if len(r.SeqMax) > len(a.seqMax) {
			a.seqMax = append(a.seqMax, make([]int64, len(r.SeqMax)-len(a.seqMax))...)
			for i := range a.seqMax {
				if a.seqMax[i] == 0 {
					a.seqMax[i] = -1
				}
			}
		}
		for i, v := range r.SeqMax {
			if v > a.seqMax[i] {
				a.seqMax[i] = v
			}
		}
		a.errFrames += r.ErrorFrames
		if a.errSample == "" {
			a.errSample = r.ErrorSample
		}
		a.disconnects += r.Disconnects
		a.short += r.Short
		a.closed += r.Closed
		if r.CloseStartNs != 0 && (a.closeStart == 0 || r.CloseStartNs < a.closeStart) {
			a.closeStart = r.CloseStartNs
		}
		if r.CloseEndNs > a.closeEnd {
			a.closeEnd = r.CloseEndNs
		}
	}
	return a
}

func (e *env) call(req request) (agg, error) {
	rs, err := callAll(e.subs, req)
	if err != nil {
		return agg{}, err
	}
	return aggregate(rs), nil
}

// connectSubs opens subscriber connections up to target in total.
func (e *env) connectSubs(target int, topics []string, spread, readers bool) (agg, error) {
	a, err := e.call(request{Op: "connect", Target: target, Topics: topics, Spread: spread,
		Readers: readers, Concurrency: e.cfg.Concurrency})
	if err != nil {
		return a, err
	}
	e.cfg.logf("%d connections open (%d errors%s)", a.conns, a.errors, errSuffix(a.firstErr))
	return a, nil
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return ", first: " + s
}

// waitDelivered polls until want deliveries arrived or nothing arrived for
// stall.
func (e *env) waitDelivered(ctx context.Context, want int64, stall time.Duration) (int64, error) {
	var last int64 = -1
	lastChange := time.Now()
	for {
		a, err := e.call(request{Op: "count"})
		if err != nil {
			return 0, err
		}
		if a.delivered >= want {
			return a.delivered, nil
		}
		if a.delivered != last {
			last = a.delivered
			lastChange = time.Now()
		} else if time.Since(lastChange) > stall {
			return a.delivered, nil
		}
		select {
		case <-ctx.Done():
			return a.delivered, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (e *env) rss() int64 {
	if e.cfg.PID <= 0 {
		return 0
	}
	v, err := procRSS(e.cfg.PID)
	if err != nil {
		e.rep.note("rss: %v", err)
	}
	return v
}

// clientCPU is the CPU time of this process and its worker processes.
func (e *env) clientCPU() int64 {
	pids := []int{os.Getpid()}
	for _, w := range e.subs {
		if r, ok := w.(*remoteWorker); ok && r.cmd.Process != nil {
			pids = append(pids, r.cmd.Process.Pid)
		}
	}
	var sum int64
	for _, pid := range pids {
		if c, err := procCPU(pid); err == nil {
			sum += c.total()
		}
	}
	return sum
}

// addClientCPU reports the load generator's CPU use over a window, in
// cores: on a 2-core machine what it uses the broker cannot.
func (e *env) addClientCPU(prefix string, cpu0 int64, wall time.Duration) {
	if wall <= 0 {
		return
	}
	e.rep.add(prefix+"_loadgen_cores", "load generator CPU (cores busy)", "cores", float64(e.clientCPU()-cpu0)/float64(wall.Nanoseconds()), 0)
}

func (e *env) cpu() cpuTimes {
	if len(e.cfg.CPUPids) > 0 {
		var sum cpuTimes
		for _, c := range e.cpuEach() {
			sum.User += c.User
			sum.System += c.System
			sum.Sched += c.Sched
		}
		return sum
	}
	if e.cfg.PID <= 0 {
		return cpuTimes{}
	}
	v, err := procCPU(e.cfg.PID)
	if err != nil {
		e.rep.note("cpu: %v", err)
	}
	return v
}

// publisherErrors adds the publishers' error frames to the report.
func (e *env) publisherErrors() {
	st := e.pubW.stats()
	e.rep.add("publisher_error_frames", "error frames to publishers", "", float64(st.ErrorFrames), lower)
	if st.ErrorSample != "" {
		e.rep.note("publisher: %s", st.ErrorSample)
	}
	if st.Disconnects > 0 {
		e.rep.note("publisher connections closed by the broker: %d", st.Disconnects)
	}
}

// idle ramps connections, each subscribed to two topics and sent one
// message per topic at each point, and fits the broker's RSS per
// connection.
func (e *env) idle(ctx context.Context) error {
	cfg := e.cfg
	topics := []string{cfg.Topic, cfg.Topic + "/2"}
	rss0 := e.rss()
	k0, kerr := readKernelMem()
	if kerr != nil {
		e.rep.note("kernel memory not sampled: %v", kerr)
	}
	e.rep.add("idle_rss_baseline", "broker RSS before any connection", "B", float64(rss0), lower)
	pubs, err := e.openPublishers(1, topics)
	if err != nil {
		return err
	}
	start := cfg.Start
	if start <= 0 || start > cfg.N {
		start = cfg.N / cfg.Steps
	}
	var xs, ys []float64
	var seq int64
	var connErrs int
	var short int
	var last agg
	for s := 0; s < cfg.Steps; s++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		k := start + (cfg.N-start)*s/(cfg.Steps-1)
		a, err := e.connectSubs(k, topics, false, false)
		if err != nil {
			return err
		}
		connErrs += a.errors
		if a.errors > 0 && e.rep.firstError == "" {
			e.rep.firstError = a.firstErr
		}
		for ti := range topics {
			if err := pubs[0].publish(ti, seq); err != nil {
				return fmt.Errorf("publish: %w", err)
			}
			seq++
		}
		d, err := e.call(request{Op: "drain", Expect: len(topics), TimeoutNs: int64(cfg.Timeout)})
		if err != nil {
			return err
		}
		short += d.short
		time.Sleep(cfg.Settle)
		r := e.rss()
		xs = append(xs, float64(a.conns))
		ys = append(ys, float64(r))
		pt := Point{Conns: a.conns, RSS: r, Threads: procThreadsIf(cfg.PID)}
		if kerr == nil {
			if k, err := readKernelMem(); err == nil {
				pt.Kernel = &k
				e.cfg.logf("idle: kernel slab %.1f MiB, TCP pages %.1f MiB, %d TCP sockets", float64(k.Slab)/(1<<20), float64(k.TCPMem)/(1<<20), k.TCPInUse)
			} else {
				kerr = err
				e.rep.note("kernel memory not sampled: %v", err)
			}
		}
		e.rep.Points = append(e.rep.Points, pt)
		e.cfg.logf("idle: %d connections, broker RSS %.1f MiB, %d deliveries so far", a.conns, float64(r)/(1<<20), d.delivered)
		last = a
		last.delivered = d.delivered
	}
	probe, err := e.call(request{Op: "drain", Expect: 0})
	if err != nil {
		return err
	}
	slope, intercept := leastSquares(xs, ys)
	n := float64(last.conns)
	e.rep.add("idle_connections", "idle connections held", "conns", n, higher)
	e.rep.add("idle_rss_slope", "broker RSS slope per idle connection (least squares)", "B/conn", slope, lower)
	e.rep.add("idle_rss_intercept", "fitted RSS at 0 connections", "B", intercept, lower)
	e.rep.add("idle_rss_at_n", "broker RSS at the last point", "B", ys[len(ys)-1], lower)
	if n > 0 && rss0 > 0 {
		e.rep.add("idle_rss_per_conn", "(RSS at the last point − baseline) / connections", "B/conn", (ys[len(ys)-1]-float64(rss0))/n, lower)
	}
	if kerr == nil {
		e.idleKernel(k0, slope)
	}
	e.rep.add("idle_connect_errors", "connection errors", "", float64(connErrs), lower)
	e.rep.add("idle_missed", "connections that missed a message", "", float64(short), lower)
	e.rep.add("idle_disconnects", "connections closed by the broker", "", float64(probe.disconnects), lower)
	if cfg.PID > 0 {
		e.rep.add("idle_threads", "broker threads at the last point", "", float64(procThreadsIf(cfg.PID)), lower)
	}
	e.publisherErrors()
	return nil
}

func procThreadsIf(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	return procThreads(pid)
}

// leastSquares fits y = a·x + b.
func leastSquares(xs, ys []float64) (a, b float64) { return fit.LeastSquares(xs, ys) }

// fanout: N subscribers on one topic, one publisher sends Messages
// messages back to back (or at --rate when given).
func (e *env) fanout(ctx context.Context) error {
	cfg := e.cfg
	topics := []string{cfg.Topic}
	a, err := e.connectSubs(cfg.N, topics, false, true)
	if err != nil {
		return err
	}
	pubs, err := e.openPublishers(1, topics)
	if err != nil {
		return err
	}
	subs := int64(a.conns)
	// Warm up: one message to everyone, not measured.
	if _, err := e.call(request{Op: "reset"}); err != nil {
		return err
	}
	if err := pubs[0].publish(0, 0); err != nil {
		return err
	}
	if got, err := e.waitDelivered(ctx, subs, cfg.Timeout); err != nil {
		return err
	} else if got < subs {
		e.rep.note("warm-up: %d of %d subscribers got the message", got, subs)
	}
	m := cfg.Messages
	if _, err := e.call(request{Op: "reset", Seqs: m}); err != nil {
		return err
	}
	nats0, err := e.natsBefore()
	if err != nil {
		return err
	}
	each0 := e.cpuEach()
	mach0 := sampleMachine()
	cpu0, ccpu0 := e.cpu(), e.clientCPU()
	t0 := time.Now().UnixNano()
	if _, err := pubs[0].paced(ctx, 0, m, func(i int) (int, int64) { return 0, int64(i) }); err != nil {
		return err
	}
	if _, err := e.waitDelivered(ctx, subs*int64(m), cfg.Timeout); err != nil {
		return err
	}
	cpu1, ccpu1, mach1 := e.cpu(), e.clientCPU(), sampleMachine()
	each1 := e.cpuEach()
	nats1, err := e.natsAfter()
	if err != nil {
		return err
	}
	st, err := e.call(request{Op: "stats"})
	if err != nil {
		return err
	}
	span := st.lastRecv - t0
	e.rep.add("fanout_subscribers", "subscribers", "conns", float64(a.conns), higher)
	e.rep.add("fanout_messages", "messages published", "", float64(m), 0)
	e.rep.add("fanout_delivered", "deliveries", "", float64(st.delivered), higher)
	e.rep.add("fanout_lost", "deliveries missing", "", float64(subs*int64(m)-st.delivered), lower)
	if span > 0 {
		e.rep.add("fanout_rate", "deliveries per second (first publish → last receipt)", "/s", float64(st.delivered)/(float64(span)/1e9), higher)
		e.rep.add("fanout_span", "first publish → last receipt", "ms", float64(span)/1e6, lower)
	}
	last := lastSubscriber(st.seqMax)
	e.rep.add("fanout_last_p50", "publish → last subscriber, p50 over messages", "ms", ms(last.quantile(0.5)), lower)
	e.rep.add("fanout_last_max", "publish → last subscriber, max", "ms", ms(last.Max), lower)
	if cfg.PID > 0 && st.delivered > 0 {
		d := cpu1.sub(cpu0)
		e.rep.add("fanout_cpu_per_delivery", "broker CPU (user+sys) per delivery", "µs", float64(d.total())/1e3/float64(st.delivered), lower)
		e.rep.add("fanout_user_cpu_per_delivery", "broker user CPU per delivery (10 ms ticks)", "µs", float64(d.User)/1e3/float64(st.delivered), lower)
		if span > 0 {
			e.rep.add("fanout_broker_cores", "broker CPU (cores busy)", "cores", float64(d.total())/float64(span), 0)
		}
	}
	e.addClientCPU("fanout", ccpu0, time.Duration(span))
	e.addCPUWindow("fanout", each0, each1, span)
	e.addMachineCPU("fanout", mach0, mach1, cpu1.sub(cpu0), ccpu1-ccpu0, span)
	if err := e.addPerURL("fanout"); err != nil {
		return err
	}
	e.addNATS("fanout", nats0, nats1, m)
	e.addSubscriberHealth(st)
	e.publisherErrors()
	return nil
}

func (e *env) addSubscriberHealth(st agg) {
	e.rep.add(e.cfg.Scenario+"_disconnects", "subscribers closed by the broker", "", float64(st.disconnects), lower)
	if st.errFrames > 0 {
		e.rep.add(e.cfg.Scenario+"_error_frames", "error frames to subscribers", "", float64(st.errFrames), lower)
		e.rep.note("subscribers: %s", st.errSample)
	}
}

// lastSubscriber is the distribution over messages of the latency to the
// last subscriber that got each message (messages nobody got are left out).
func lastSubscriber(seqMax []int64) histData {
	vals := make([]int64, 0, len(seqMax))
	for _, v := range seqMax {
		if v >= 0 {
			vals = append(vals, v)
		}
	}
	return histOf(vals)
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// latency: N subscribers on one topic; the publisher sends stamped
// messages at --rate for --duration.
func (e *env) latency(ctx context.Context) error {
	cfg := e.cfg
	if cfg.Rate <= 0 {
		cfg.Rate = 100
	}
	topics := []string{cfg.Topic}
	a, err := e.connectSubs(cfg.N, topics, false, true)
	if err != nil {
		return err
	}
	pubs, err := e.openPublishers(1, topics)
	if err != nil {
		return err
	}
	subs := int64(a.conns)
	// Warm up for a tenth of the run (at most 1 s), not measured.
	if _, err := e.call(request{Op: "reset"}); err != nil {
		return err
	}
	warm := int(cfg.Rate * min(cfg.Duration.Seconds()/10, 1))
	if warm < 1 {
		warm = 1
	}
	if _, err := pubs[0].paced(ctx, cfg.Rate, warm, func(i int) (int, int64) { return 0, 0 }); err != nil {
		return err
	}
	if _, err := e.waitDelivered(ctx, subs*int64(warm), cfg.Timeout); err != nil {
		return err
	}
	m := int(cfg.Rate * cfg.Duration.Seconds())
	if m < 1 {
		m = 1
	}
	if _, err := e.call(request{Op: "reset", Seqs: m}); err != nil {
		return err
	}
	nats0, err := e.natsBefore()
	if err != nil {
		return err
	}
	each0 := e.cpuEach()
	mach0 := sampleMachine()
	cpu0, ccpu0 := e.cpu(), e.clientCPU()
	t0 := time.Now()
	sent, err := pubs[0].paced(ctx, cfg.Rate, m, func(i int) (int, int64) { return 0, int64(i) })
	if err != nil {
		return err
	}
	elapsed := time.Since(t0)
	if _, err := e.waitDelivered(ctx, subs*int64(sent), cfg.Timeout); err != nil {
		return err
	}
	cpu1, ccpu1, mach1 := e.cpu(), e.clientCPU(), sampleMachine()
	wall := time.Since(t0)
	each1 := e.cpuEach()
	nats1, err := e.natsAfter()
	if err != nil {
		return err
	}
	st, err := e.call(request{Op: "stats"})
	if err != nil {
		return err
	}
	e.rep.add("latency_fanout", "subscribers", "conns", float64(a.conns), 0)
	e.rep.add("latency_rate", "publishes per second (achieved)", "/s", float64(sent)/elapsed.Seconds(), 0)
	e.rep.add("latency_lost", "deliveries missing", "", float64(subs*int64(sent)-st.delivered), lower)
	last := lastSubscriber(st.seqMax)
	e.rep.add("latency_last_p50", "publish → last subscriber p50", "ms", ms(last.quantile(0.5)), lower)
	e.rep.add("latency_last_p99", "publish → last subscriber p99", "ms", ms(last.quantile(0.99)), lower)
	e.rep.add("latency_last_p999", "publish → last subscriber p99.9", "ms", ms(last.quantile(0.999)), lower)
	e.rep.add("latency_last_max", "publish → last subscriber max", "ms", ms(last.Max), lower)
	e.rep.add("latency_all_p50", "publish → any delivery p50", "ms", ms(st.latency.quantile(0.5)), lower)
	e.rep.add("latency_all_p99", "publish → any delivery p99", "ms", ms(st.latency.quantile(0.99)), lower)
	e.rep.add("latency_all_p999", "publish → any delivery p99.9", "ms", ms(st.latency.quantile(0.999)), lower)
	e.rep.add("latency_all_max", "publish → any delivery max", "ms", ms(st.latency.Max), lower)
	if cfg.PID > 0 && st.delivered > 0 {
		d := cpu1.sub(cpu0)
		e.rep.add("latency_cpu_per_delivery", "broker CPU per delivery", "µs", float64(d.total())/1e3/float64(st.delivered), lower)
	}
	e.addClientCPU("latency", ccpu0, wall)
	e.addCPUWindow("latency", each0, each1, wall.Nanoseconds())
	e.addMachineCPU("latency", mach0, mach1, cpu1.sub(cpu0), ccpu1-ccpu0, wall.Nanoseconds())
	if err := e.addPerURL("latency"); err != nil {
		return err
	}
	e.addNATS("latency", nats0, nats1, sent)
	e.addSubscriberHealth(st)
	e.publisherErrors()
	return nil
}

// connect opens N connections (connect, upgrade, auth, subscribe) as fast
// as the handshakes in flight allow.
func (e *env) connect(ctx context.Context) error {
	cfg := e.cfg
	rss0 := e.rss()
	svc0, err := readAuthStats(cfg.AuthStats)
	if err != nil {
		return err
	}
	cpu0, ccpu0 := e.cpu(), e.clientCPU()
	a, err := e.connectSubs(cfg.N, []string{cfg.Topic}, false, false)
	if err != nil {
		return err
	}
	cpu1 := e.cpu()
	rss1 := e.rss()
	svc1, err := readAuthStats(cfg.AuthStats)
	if err != nil {
		return err
	}
	span := a.endNs - a.startNs
	e.rep.add("connect_opened", "connections opened", "conns", float64(a.opened), higher)
	e.rep.add("connect_errors", "connection errors", "", float64(a.errors), lower)
	if a.errors > 0 {
		e.rep.note("connect: first error: %s", a.firstErr)
	}
	if span > 0 {
		e.rep.add("connect_rate", "connections per second (connect+upgrade+auth+subscribe)", "/s", float64(a.opened)/(float64(span)/1e9), higher)
		e.rep.add("connect_span", "time to open all", "ms", float64(span)/1e6, lower)
	}
	e.rep.add("connect_p50", "one handshake p50 (in flight: concurrency × procs)", "ms", ms(a.handshake.quantile(0.5)), lower)
	e.rep.add("connect_p99", "one handshake p99", "ms", ms(a.handshake.quantile(0.99)), lower)
	e.rep.add("connect_auth_p50", "auth frame sent → auth reply p50", "ms", ms(a.auth.quantile(0.5)), lower)
	e.rep.add("connect_auth_p99", "auth frame sent → auth reply p99", "ms", ms(a.auth.quantile(0.99)), lower)
	if cfg.AuthStats != "" && a.opened > 0 {
		calls := svc1.calls() - svc0.calls()
		e.rep.add("connect_authsvc_calls", "auth service calls (validate + revalidate + check-room-access)", "", calls, lower)
		e.rep.add("connect_authsvc_calls_per_conn", "auth service calls per connection", "", calls/float64(a.opened), lower)
		e.rep.add("connect_authsvc_max_in_flight", "auth service calls in flight at most", "", svc1.MaxInFlight, 0)
		if svc1.CPUNs > 0 {
			e.rep.add("connect_authsvc_cpu_per_conn", "auth service CPU per connection", "µs", (svc1.CPUNs-svc0.CPUNs)/1e3/float64(a.opened), lower)
		}
	}
	if cfg.PID > 0 && a.opened > 0 {
		d := cpu1.sub(cpu0)
		e.rep.add("connect_cpu_per_conn", "broker CPU per connection", "µs", float64(d.total())/1e3/float64(a.opened), lower)
		e.rep.add("connect_rss_after", "broker RSS after the storm", "B", float64(rss1), lower)
		if rss0 > 0 {
			e.rep.add("connect_rss_per_conn", "(RSS after − before) / connections", "B/conn", float64(rss1-rss0)/float64(a.opened), lower)
		}
	}
	e.addClientCPU("connect", ccpu0, time.Duration(span))
	probe, err := e.call(request{Op: "drain", Expect: 0})
	if err != nil {
		return err
	}
	e.rep.add("connect_disconnects", "connections closed by the broker", "", float64(probe.disconnects), lower)
	return nil
}

// stream: Topics topics × Subs subscribers each; Publishers publishers
// share --rate publishes per second over the topics for --duration.
func (e *env) stream(ctx context.Context) error {
	cfg := e.cfg
	if cfg.Rate <= 0 {
		cfg.Rate = 1000
	}
	subsPer := cfg.Subs
	if subsPer <= 0 {
		subsPer = max(1, cfg.N/cfg.Topics)
	}
	topics := make([]string, cfg.Topics)
	for i := range topics {
		topics[i] = fmt.Sprintf("%s/%d", cfg.Topic, i)
	}
	a, err := e.connectSubs(cfg.Topics*subsPer, topics, true, true)
	if err != nil {
		return err
	}
	np := min(cfg.Publishers, cfg.Topics)
	pubs, err := e.openPublishers(np, topics)
	if err != nil {
		return err
	}
	if _, err := e.call(request{Op: "reset"}); err != nil {
		return err
	}
	total := int(cfg.Rate * cfg.Duration.Seconds())
	hist0, err := e.historyCounters()
	if err != nil {
		return err
	}
	cpu0, ccpu0, mach0 := e.cpu(), e.clientCPU(), sampleMachine()
	t0 := time.Now()
	sent := make([]int, np)
	errs := make([]error, np)
	done := make(chan int, np)
	for p := 0; p < np; p++ {
		go func() {
			// Publisher p serves topics p, p+np, ...
			var mine []int
			for t := p; t < cfg.Topics; t += np {
				mine = append(mine, t)
			}
			n := shareOf(total, p, np)
			sent[p], errs[p] = pubs[p].paced(ctx, cfg.Rate/float64(np), n, func(i int) (int, int64) {
				return mine[i%len(mine)], int64(i)
			})
			done <- p
		}()
	}
	for range np {
		<-done
	}
	elapsed := time.Since(t0)
	var nsent, pubFailed int
	for p := range np {
		if errs[p] != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			// A broker that stops reading a publisher is a result, not a
			// harness failure.
			pubFailed++
			e.rep.note("publisher %d stopped after %d publishes: %v", p, sent[p], errs[p])
		}
		nsent += sent[p]
	}
	want := int64(nsent) * int64(subsPer)
	if a.conns < cfg.Topics*subsPer {
		want = int64(float64(nsent) * float64(a.conns) / float64(cfg.Topics))
	}
	if _, err := e.waitDelivered(ctx, want, cfg.Timeout); err != nil {
		return err
	}
	cpu1, ccpu1, mach1 := e.cpu(), e.clientCPU(), sampleMachine()
	st, err := e.call(request{Op: "stats"})
	if err != nil {
		return err
	}
	hist1, err := e.historyCounters()
	if err != nil {
		return err
	}
	span := st.lastRecv - t0.UnixNano()
	e.rep.add("stream_shape", "topics × subscribers", "conns", float64(a.conns), 0)
	e.rep.add("stream_offered_publishes", "offered publishes per second", "/s", cfg.Rate, 0)
	e.rep.add("stream_offered", "offered deliveries per second (rate × subscribers per topic)", "/s", cfg.Rate*float64(subsPer), 0)
	e.rep.add("stream_publish_rate", "publishes per second (achieved)", "/s", float64(nsent)/elapsed.Seconds(), higher)
	if span > 0 {
		e.rep.add("stream_rate", "deliveries per second (first publish → last receipt)", "/s", float64(st.delivered)/(float64(span)/1e9), higher)
		e.rep.add("stream_delivered_publishes", "publishes delivered per second (deliveries per second ÷ subscribers per topic)", "/s", float64(st.delivered)/(float64(span)/1e9)/float64(subsPer), higher)
	}
	e.rep.add("stream_lost", "deliveries missing", "", float64(want-st.delivered), lower)
	e.rep.add("stream_publishers_failed", "publisher connections whose writes failed", "", float64(pubFailed), lower)
	e.rep.add("stream_p50", "publish → delivery p50", "ms", ms(st.latency.quantile(0.5)), lower)
	e.rep.add("stream_p99", "publish → delivery p99", "ms", ms(st.latency.quantile(0.99)), lower)
	if cfg.PID > 0 && st.delivered > 0 {
		d := cpu1.sub(cpu0)
		e.rep.add("stream_cpu_per_delivery", "broker CPU per delivery", "µs", float64(d.total())/1e3/float64(st.delivered), lower)
		e.rep.add("stream_broker_cores", "broker CPU (cores busy)", "cores", float64(d.total())/float64(span), 0)
	}
	e.addClientCPU("stream", ccpu0, time.Duration(span))
	e.addMachineCPU("stream", mach0, mach1, cpu1.sub(cpu0), ccpu1-ccpu0, span)
	if _, ok := hist1[histAppended]; ok {
		appended := hist1[histAppended] - hist0[histAppended]
		e.rep.add("stream_history_appended", "publishes queued for the durable history (kraken_history_appended_total)", "", appended, 0)
		if nsent > 0 {
			e.rep.add("stream_history_per_publish", "history appends per publish sent", "", appended/float64(nsent), 0)
		}
		e.rep.add("stream_history_dropped", "history entries dropped (kraken_history_dropped_total)", "", hist1[histDropped]-hist0[histDropped], lower)
		e.rep.add("stream_history_errors", "history entries refused or not acknowledged (kraken_history_errors_total)", "", hist1[histErrors]-hist0[histErrors], lower)
	}
	e.addSubscriberHealth(st)
	e.publisherErrors()
	return nil
}

// The broker's durable-history counters (kraken with STORE_BACKEND=jetstream).
const (
	histAppended = "kraken_history_appended_total"
	histDropped  = "kraken_history_dropped_total"
	histErrors   = "kraken_history_errors_total"
)

// historyCounters reads the durable-history counters from --metrics-url
// (none without it; a broker without the history has none of them).
func (e *env) historyCounters() (map[string]float64, error) {
	if e.cfg.MetricsURL == "" {
		return nil, nil
	}
	m, err := scrapeMetrics(e.cfg.MetricsURL, histAppended, histDropped, histErrors)
	if err != nil {
		return nil, fmt.Errorf("history counters: %w", err)
	}
	return m, nil
}

// authStats are the counters of an auth service (bench/authsvc GET /stats).
type authStats struct {
	Validate        float64 `json:"validate"`
	Revalidate      float64 `json:"revalidate"`
	CheckRoomAccess float64 `json:"check_room_access"`
	MaxInFlight     float64 `json:"max_in_flight"`
	CPUNs           float64 `json:"cpu_ns"`
}

func (s authStats) calls() float64 { return s.Validate + s.Revalidate + s.CheckRoomAccess }

// readAuthStats reads the counters at url ("" = none).
func readAuthStats(url string) (authStats, error) {
	var s authStats
	if url == "" {
		return s, nil
	}
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return s, fmt.Errorf("auth stats: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("auth stats: %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		return s, fmt.Errorf("auth stats: %s: %w", url, err)
	}
	return s, nil
}
