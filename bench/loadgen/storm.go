package main

import (
	"context"
	"fmt"
	"time"
)

// StormRound is one reset-and-reconnect of every connection.
type StormRound struct {
	Closed      int    `json:"closed"`
	Reconnected int    `json:"reconnected"`
	Errors      int    `json:"errors"`
	FirstError  string `json:"first_error,omitempty"`
	// CloseMs is the time to reset every connection; TotalMs runs from
	// the first reset to the last subscribed reply, ReconnectMs from the
	// first redial to the last subscribed reply.
	CloseMs     float64 `json:"close_ms"`
	TotalMs     float64 `json:"total_ms"`
	ReconnectMs float64 `json:"reconnect_ms"`
	P50Ms       float64 `json:"handshake_p50_ms"`
	P99Ms       float64 `json:"handshake_p99_ms"`
	// CPUNs is the broker's CPU from the first reset to the last reply.
	CPUNs int64 `json:"broker_cpu_ns"`
	// Broker RSS: before the round, the peak during it (VmHWM after a
	// reset, and fast samples), when every connection was back, and once
	// it was steady again.
	RSSBefore  int64   `json:"rss_before"`
	RSSPeak    int64   `json:"rss_peak"`
	RSSEnd     int64   `json:"rss_end"`
	RSSAfter   int64   `json:"rss_after"`
	HWMReset   bool    `json:"hwm_reset"`
	Samples    int     `json:"samples"`
	FDsBefore  int     `json:"fds_before"`
	FDsPeak    int     `json:"fds_peak"`
	FDsAfter   int     `json:"fds_after"`
	Missed     int     `json:"missed"`
	SteadyMs   float64 `json:"steady_after_ms"`
	LoadgenCPU float64 `json:"loadgen_cores"`
}

// peakSampler follows a process's VmRSS and VmHWM every few
// milliseconds, and its open descriptors less often, until finish.
type peakSampler struct {
	pid      int
	stop     chan struct{}
	done     chan struct{}
	rss, hwm int64
	fds      int
	n        int
	err      error
}

func startPeakSampler(pid int, every time.Duration) *peakSampler {
	p := &peakSampler{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for i := 0; ; i++ {
			p.sample(i%40 == 0)
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peakSampler) sample(fds bool) {
	v, err := procStatusKB(p.pid, "VmRSS", "VmHWM")
	if err != nil {
		if p.err == nil {
			p.err = err
		}
		return
	}
	p.n++
	p.rss = max(p.rss, v["VmRSS"])
	p.hwm = max(p.hwm, v["VmHWM"])
	if fds {
		if n, err := procFDs(p.pid); err == nil {
			p.fds = max(p.fds, n)
		}
	}
}

// finish takes a last sample and stops the sampler.
func (p *peakSampler) finish() *peakSampler {
	close(p.stop)
	<-p.done
	p.sample(true)
	return p
}

func (e *env) fds() int {
	if e.cfg.PID <= 0 {
		return 0
	}
	n, err := procFDs(e.cfg.PID)
	if err != nil {
		e.rep.note("fds: %v", err)
	}
	return n
}

// waitSteady waits until the broker's RSS has stayed within 1 % (and at
// least 256 KiB) for cfg.Settle, sampling every tenth of it, for at most
// cfg.SteadyMax. It returns the last sample, the time waited and whether
// the RSS was steady.
func (e *env) waitSteady(ctx context.Context) (int64, time.Duration, bool) {
	settle := max(e.cfg.Settle, 50*time.Millisecond)
	if e.cfg.PID <= 0 {
		time.Sleep(settle)
		return 0, settle, true
	}
	step := max(settle/10, 20*time.Millisecond)
	type sample struct {
		t time.Time
		v int64
	}
	var win []sample
	start := time.Now()
	for {
		v, now := e.rss(), time.Now()
		win = append(win, sample{now, v})
		for len(win) > 1 && now.Sub(win[1].t) >= settle {
			win = win[1:]
		}
		if now.Sub(win[0].t) >= settle {
			lo, hi := v, v
			for _, s := range win {
				lo, hi = min(lo, s.v), max(hi, s.v)
			}
			if hi-lo <= max(v/100, 256<<10) {
				return v, now.Sub(start), true
			}
		}
		if now.Sub(start) >= e.cfg.SteadyMax || ctx.Err() != nil {
			return v, now.Sub(start), false
		}
		time.Sleep(step)
	}
}

// storm opens N connections (auth and two subscriptions each, like idle),
// waits until the broker's RSS is steady, then resets every connection at
// once (RST, as in a network failure) and reconnects all of them at once,
// --rounds times. It reports the time until all are back, errors, and the
// broker's RSS at steady state, at its peak during the storm, when all
// were back and once steady again.
func (e *env) storm(ctx context.Context) error {
	cfg := e.cfg
	if cfg.Rounds < 1 {
		cfg.Rounds = 1
	}
	topics := []string{cfg.Topic, cfg.Topic + "/2"}
	rss0 := e.rss()
	e.rep.add("storm_rss_baseline", "broker RSS before any connection", "B", float64(rss0), lower)
	pubs, err := e.openPublishers(1, topics)
	if err != nil {
		return err
	}
	a, err := e.connectSubs(cfg.N, topics, false, false)
	if err != nil {
		return err
	}
	if a.errors > 0 {
		e.rep.note("first connect: %d errors, first: %s", a.errors, a.firstErr)
	}
	var seq int64
	// check sends one message per topic and reads it on every connection.
	check := func() (int, error) {
		for ti := range topics {
			if err := pubs[0].publish(ti, seq); err != nil {
				return 0, fmt.Errorf("publish: %w", err)
			}
			seq++
		}
		d, err := e.call(request{Op: "drain", Expect: len(topics), TimeoutNs: int64(cfg.Timeout)})
		return d.short, err
	}
	missed0, err := check()
	if err != nil {
		return err
	}
	held := a.conns
	e.rep.add("storm_connections", "connections held before the storm (auth + 2 subscriptions)", "conns", float64(held), higher)
	if span := a.endNs - a.startNs; span > 0 {
		e.rep.add("storm_first_connect", "first connect of all", "ms", float64(span)/1e6, lower)
	}
	steady, waited, ok := e.waitSteady(ctx)
	if !ok && cfg.PID > 0 {
		e.rep.note("broker RSS was not steady within %v before the storm", cfg.SteadyMax)
	}
	e.cfg.logf("storm: %d connections held, broker RSS %.1f MiB, steady after %v", held, float64(steady)/(1<<20), waited.Round(time.Millisecond))

	before, fdsBefore := steady, e.fds()
	for round := 0; round < cfg.Rounds; round++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rd := StormRound{RSSBefore: before, FDsBefore: fdsBefore}
		var ps *peakSampler
		if cfg.PID > 0 {
			if err := resetHWM(cfg.PID); err != nil {
				if round == 0 {
					e.rep.note("VmHWM not reset (%v): the peak is the highest 5 ms sample", err)
				}
			} else {
				rd.HWMReset = true
			}
			ps = startPeakSampler(cfg.PID, 5*time.Millisecond)
		}
		cpu0, ccpu0 := e.cpu(), e.clientCPU()
		s, err := e.call(request{Op: "storm", Target: cfg.N, Topics: topics, Concurrency: cfg.Concurrency})
		if err != nil {
			if ps != nil {
				ps.finish()
			}
			return err
		}
		cpu1, ccpu1 := e.cpu(), e.clientCPU()
		rd.RSSEnd = e.rss()
		rd.Closed, rd.Reconnected, rd.Errors, rd.FirstError = s.closed, s.conns, s.errors, s.firstErr
		rd.CloseMs = float64(s.closeEnd-s.closeStart) / 1e6
		rd.TotalMs = float64(s.endNs-s.closeStart) / 1e6
		rd.ReconnectMs = float64(s.endNs-s.startNs) / 1e6
		rd.P50Ms, rd.P99Ms = ms(s.handshake.quantile(0.5)), ms(s.handshake.quantile(0.99))
		rd.CPUNs = cpu1.sub(cpu0).total()
		if wall := s.endNs - s.closeStart; wall > 0 {
			rd.LoadgenCPU = float64(ccpu1-ccpu0) / float64(wall)
		}
		if rd.Missed, err = check(); err != nil {
			if ps != nil {
				ps.finish()
			}
			return err
		}
		after, waited, ok := e.waitSteady(ctx)
		if !ok && cfg.PID > 0 {
			e.rep.note("storm %d: broker RSS was not steady within %v after the storm", round+1, cfg.SteadyMax)
		}
		rd.RSSAfter, rd.SteadyMs = after, float64(waited)/1e6
		if ps != nil {
			ps.finish()
			// VmRSS and VmHWM come from per-CPU counters that may lag
			// by a few hundred KiB; the peak is the highest of all reads.
			rd.RSSPeak, rd.Samples, rd.FDsPeak = max(ps.rss, ps.hwm, rd.RSSEnd, rd.RSSAfter), ps.n, ps.fds
			if ps.err != nil {
				e.rep.note("storm %d: sampling the broker: %v", round+1, ps.err)
			}
		}
		rd.FDsAfter = e.fds()
		e.rep.Storms = append(e.rep.Storms, rd)
		e.cfg.logf("storm %d: %d reset in %.0f ms, %d back (%d errors%s) %.0f ms after the first reset; broker RSS %.1f → peak %.1f → %.1f MiB, %.1f MiB once steady; descriptors %d → peak %d → %d",
			round+1, rd.Closed, rd.CloseMs, rd.Reconnected, rd.Errors, errSuffix(rd.FirstError), rd.TotalMs,
			float64(rd.RSSBefore)/(1<<20), float64(rd.RSSPeak)/(1<<20), float64(rd.RSSEnd)/(1<<20), float64(rd.RSSAfter)/(1<<20),
			rd.FDsBefore, rd.FDsPeak, rd.FDsAfter)
		if rd.Errors > 0 {
			e.rep.note("storm %d: %d reconnect errors, first: %s", round+1, rd.Errors, rd.FirstError)
		}
		before, fdsBefore = after, rd.FDsAfter
	}
	probe, err := e.call(request{Op: "drain", Expect: 0})
	if err != nil {
		return err
	}
	e.stormMetrics(steady, missed0, probe.disconnects)
	e.publisherErrors()
	return nil
}

// stormMetrics summarises the rounds: the worst round for times and
// memory, sums for errors.
func (e *env) stormMetrics(steady int64, missed0 int, disconnects int64) {
	rs := e.rep.Storms
	if len(rs) == 0 {
		return
	}
	w := rs[0]
	var errs, missed int
	var cpu int64
	var back, fdsAfter = rs[0].Reconnected, rs[len(rs)-1].FDsAfter
	for _, r := range rs {
		w.TotalMs = max(w.TotalMs, r.TotalMs)
		w.ReconnectMs = max(w.ReconnectMs, r.ReconnectMs)
		w.CloseMs = max(w.CloseMs, r.CloseMs)
		w.P50Ms, w.P99Ms = max(w.P50Ms, r.P50Ms), max(w.P99Ms, r.P99Ms)
		w.RSSPeak = max(w.RSSPeak, r.RSSPeak)
		w.RSSEnd = max(w.RSSEnd, r.RSSEnd)
		w.FDsPeak = max(w.FDsPeak, r.FDsPeak)
		w.LoadgenCPU = max(w.LoadgenCPU, r.LoadgenCPU)
		back = min(back, r.Reconnected)
		errs += r.Errors
		missed += r.Missed
		cpu += r.CPUNs
	}
	pid := e.cfg.PID > 0
	e.rep.add("storm_rounds", "storms (reset all, reconnect all)", "", float64(len(rs)), 0)
	e.rep.add("storm_reconnected", "connections back after each storm (least)", "conns", float64(back), higher)
	e.rep.add("storm_errors", "reconnect errors", "", float64(errs), lower)
	if len(rs) > 1 {
		e.rep.add("storm_first_time", "first reset → all back, first storm", "ms", rs[0].TotalMs, lower)
	}
	e.rep.add("storm_time", "first reset → all back (auth + 2 subscribes), worst storm", "ms", w.TotalMs, lower)
	e.rep.add("storm_close_time", "resetting all connections (RST)", "ms", w.CloseMs, 0)
	if w.ReconnectMs > 0 {
		e.rep.add("storm_rate", "reconnects per second (first redial → last reply)", "/s", float64(back)/(w.ReconnectMs/1e3), higher)
	}
	e.rep.add("storm_p50", "one reconnect p50 (in flight: concurrency × procs)", "ms", w.P50Ms, lower)
	e.rep.add("storm_p99", "one reconnect p99", "ms", w.P99Ms, lower)
	if pid && back > 0 {
		e.rep.add("storm_cpu_per_conn", "broker CPU per reconnect (with handling the resets)", "µs", float64(cpu)/1e3/float64(back*len(rs)), lower)
	}
	if pid {
		e.rep.add("storm_rss_steady", "broker RSS at steady state before the storm", "B", float64(steady), lower)
		e.rep.add("storm_rss_peak", "broker peak RSS during the storms (VmHWM after reset, 5 ms samples)", "B", float64(w.RSSPeak), lower)
		e.rep.add("storm_rss_end", "broker RSS when all were back", "B", float64(w.RSSEnd), lower)
		e.rep.add("storm_rss_after", "broker RSS once steady after the last storm", "B", float64(rs[len(rs)-1].RSSAfter), lower)
		if steady > 0 {
			if len(rs) > 1 {
				e.rep.add("storm_first_peak_ratio", "peak RSS in the first storm / steady-state RSS", "×", float64(rs[0].RSSPeak)/float64(steady), lower)
			}
			e.rep.add("storm_peak_ratio", "peak RSS (worst storm) / steady-state RSS", "×", float64(w.RSSPeak)/float64(steady), lower)
			e.rep.add("storm_after_ratio", "RSS once steady after / before the storm", "×", float64(rs[len(rs)-1].RSSAfter)/float64(steady), lower)
		}
		e.rep.add("storm_fds_steady", "broker open descriptors before the storm", "", float64(rs[0].FDsBefore), lower)
		e.rep.add("storm_fds_peak", "broker open descriptors, peak (sampled every 200 ms)", "", float64(w.FDsPeak), lower)
		e.rep.add("storm_fds_after", "broker open descriptors once steady after", "", float64(fdsAfter), lower)
	}
	e.rep.add("storm_missed", "connections that missed a message (before + after the storms)", "", float64(missed0+missed), lower)
	e.rep.add("storm_disconnects", "connections closed by the broker", "", float64(disconnects), lower)
	e.rep.add("storm_loadgen_cores", "load generator CPU during the storm (cores busy)", "cores", w.LoadgenCPU, 0)
}
