package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"
)

// clientID is the clientId of the resume scenario's session g: with the
// actor (the token) it is the session's identity.
func clientID(g int) string { return "lg-" + strconv.Itoa(g) }

// ResumePoint is one sample of the resume scenario.
type ResumePoint struct {
	// Phase: start, live (a batch connected), parked (a batch dropped),
	// missed (after the publishes to the parked sessions), expired (the
	// expiry and a sweep passed), later (--linger after that).
	Phase string `json:"phase"`
	// AtSec is the time since the start of the run.
	AtSec float64 `json:"at_s"`
	// Parked is the sessions dropped so far (not all kept with a cap).
	Parked int `json:"parked"`
	// Held is the broker's kraken_subscriptions / subscriptions per
	// session: the sessions it keeps (-1 without --metrics-url).
	Held int   `json:"held"`
	RSS  int64 `json:"rss_bytes"`
	// HeapInuse and HeapAlloc are go_memstats_heap_inuse_bytes and
	// go_memstats_heap_alloc_bytes (0 without --metrics-url).
	HeapInuse int64 `json:"heap_inuse_bytes,omitempty"`
	HeapAlloc int64 `json:"heap_alloc_bytes,omitempty"`
	FDs       int   `json:"fds"`
	// TCPInUse and Slab are machine-wide: sockstat's TCP sockets in use
	// and the kernel's slab memory (/proc/meminfo), both ends counted.
	TCPInUse int64 `json:"tcp_inuse"`
	Slab     int64 `json:"slab_bytes"`
}

// brokerMetrics is what the resume scenario reads from the broker's
// Prometheus endpoint.
type brokerMetrics struct {
	heapInuse, heapAlloc, subs, authed int64
}

// readBrokerMetrics scrapes the unlabelled samples it needs from url (the
// Prometheus text format).
func readBrokerMetrics(url string) (brokerMetrics, error) {
	var m brokerMetrics
	want := map[string]*int64{
		"go_memstats_heap_inuse_bytes":     &m.heapInuse,
		"go_memstats_heap_alloc_bytes":     &m.heapAlloc,
		"kraken_subscriptions":             &m.subs,
		"kraken_connections_authenticated": &m.authed,
	}
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	got, err := scrapeMetrics(url, names...)
	if err != nil {
		return m, err
	}
	if len(got) < len(want) {
		return m, fmt.Errorf("%s: %d of the %d metrics needed (go_memstats_heap_*, kraken_subscriptions, kraken_connections_authenticated)", url, len(got), len(want))
	}
	for k, p := range want {
		*p = int64(got[k])
	}
	return m, nil
}

// scrapeMetrics reads the unlabelled samples of the given names from url
// (the Prometheus text format). A name the broker does not export is not
// in the map.
func scrapeMetrics(url string, names ...string) (map[string]float64, error) {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	got := map[string]float64{}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || !want[f[0]] {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", url, f[0], err)
		}
		got[f[0]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return got, nil
}

// probeResult is what one reconnect with reconnect:true got back.
type probeResult struct {
	restored int    // restoredSubscriptions in the auth reply
	replayed int64  // replayEnd's replayed
	complete bool   // replayEnd's complete
	reason   string // replayEnd's reason
}

// probeSession reconnects session g with reconnect:true, reads the auth
// reply and the replay up to replayEnd, and resets the connection again
// (so the broker parks the session once more).
func (e *env) probeSession(ctx context.Context, g int) (probeResult, error) {
	var pr probeResult
	d := e.pubW.d
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	nc, br, _, err := d.wsDialer.Dial(ctx, d.url)
	if err != nil {
		return pr, err
	}
	c := &conn{nc: nc}
	defer c.abort()
	if br != nil {
		if n := br.Buffered(); n > 0 {
			c.pending = make([]byte, n)
			_, _ = io.ReadFull(br, c.pending)
		}
		ws.PutReader(br)
	}
	authF := clientFrame(resumeAuthPayload(tokenFor(d.token, d.tokens, g), clientID(g), true))
	if err := c.write(authF, d.timeout); err != nil {
		return pr, err
	}
	deadline, _ := ctx.Deadline()
	var ferr error
	done := false
	err = c.readFrames(make([]byte, 4096), deadline, func(op byte, p []byte) bool {
		if op != opBinary || len(p) == 0 {
			return false
		}
		v, _, err := msgp.ReadMapStrIntfBytes(p, nil)
		if err != nil {
			ferr = err
			return true
		}
		switch v["type"] {
		case "auth":
			if ok, _ := v["success"].(bool); !ok {
				ferr = fmt.Errorf("%w: %v", errAuth, v["error"])
				return true
			}
			if rs, ok := v["restoredSubscriptions"].([]any); ok {
				pr.restored = len(rs)
			}
		case "replayEnd":
			pr.replayed = intOf(v["replayed"])
			pr.complete, _ = v["complete"].(bool)
			pr.reason, _ = v["reason"].(string)
			done = true
			return true
		case "error":
			ferr = fmt.Errorf("error frame: %v", v["error"])
			return true
		}
		return false
	})
	if err != nil {
		return pr, err
	}
	if ferr != nil {
		return pr, ferr
	}
	if !done {
		return pr, fmt.Errorf("no replayEnd")
	}
	return pr, nil
}

func intOf(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

// probeStats sums the probes of sessions.
type probeStats struct {
	n, restored, expired, overflow, errors int
	replayed                               int64
	firstErr, reasons                      string
}

// probe reconnects the sessions gs one after another; a session counts as
// restored when all its want subscriptions came back and its replay was
// complete, and as expired when the replay said session_expired.
func (e *env) probe(ctx context.Context, gs []int, want int) probeStats {
	var s probeStats
	seen := map[string]bool{}
	for _, g := range gs {
		s.n++
		pr, err := e.probeSession(ctx, g)
		if err != nil {
			s.errors++
			if s.firstErr == "" {
				s.firstErr = fmt.Sprintf("session %d: %v", g, err)
			}
			continue
		}
		s.replayed += pr.replayed
		switch {
		case pr.complete && pr.restored == want:
			s.restored++
		case pr.reason == "session_expired":
			s.expired++
		case pr.reason == "backlog_limit":
			s.overflow++
		}
		if r := pr.reason; r != "" && !seen[r] {
			seen[r] = true
			s.reasons += " " + r
		}
	}
	return s
}

// resume parks N resumable sessions in batches of --batch: each batch's
// connections authenticate with a clientId of their own, subscribe to two
// topics of their batch with QoS 1, get --live messages on each, and are
// reset at once (RST), so the broker parks their sessions. The broker's
// RSS (and, with --metrics-url, its heap and the sessions it holds) is
// sampled at the start, with each batch live and once it is parked; after
// --missed messages per topic published to the parked sessions; and,
// with --expiry (the broker's RESUME_EXPIRY_SECONDS), once every session
// has expired and --linger later. --probe K reconnects the K oldest and
// K newest sessions with reconnect:true before the expiry (and the K
// newest after it) to check what the broker kept.
func (e *env) resume(ctx context.Context) error {
	cfg := e.cfg
	t0 := time.Now()
	batch := cfg.Batch
	if batch <= 0 || batch > cfg.N {
		batch = cfg.N
	}
	nb := (cfg.N + batch - 1) / batch
	var topics []string
	for b := 0; b < nb; b++ {
		t := fmt.Sprintf("%s/s%d", cfg.Topic, b)
		topics = append(topics, t, t+"/2")
	}
	const perSession = 2
	useMetrics := cfg.MetricsURL != ""
	sample := func(phase string, parked int) ResumePoint {
		p := ResumePoint{Phase: phase, AtSec: time.Since(t0).Seconds(), Parked: parked, Held: -1,
			RSS: e.rss(), FDs: e.fds()}
		if k, err := readKernelMem(); err == nil {
			p.TCPInUse, p.Slab = k.TCPInUse, k.Slab
		}
		if useMetrics {
			m, err := readBrokerMetrics(cfg.MetricsURL)
			if err != nil {
				e.rep.note("metrics: %v", err)
				useMetrics = false
			} else {
				p.HeapInuse, p.HeapAlloc, p.Held = m.heapInuse, m.heapAlloc, int(m.subs/perSession)
			}
		}
		e.rep.Resume = append(e.rep.Resume, p)
		heap := ""
		if p.HeapInuse > 0 {
			heap = fmt.Sprintf(", heap in use %.1f MiB, %d sessions held", float64(p.HeapInuse)/(1<<20), p.Held)
		}
		e.cfg.logf("resume: %s: %d parked, broker RSS %.1f MiB%s, %d fds", phase, parked, float64(p.RSS)/(1<<20), heap, p.FDs)
		return p
	}
	fds0 := e.fds()
	p0 := sample("start", 0)
	pubs, err := e.openPublishers(1, topics)
	if err != nil {
		return err
	}
	// The publisher is a resumable connection too (no clientId: the
	// actor's own session), with no subscription.
	var (
		xs, ys, hs        []float64
		connErrs, short   int
		parked            int
		lastDrop          time.Time
		seq               int64
		liveRSS, liveConn float64
	)
	xs, ys = append(xs, 0), append(ys, float64(p0.RSS))
	if p0.HeapInuse > 0 {
		hs = append(hs, float64(p0.HeapInuse))
	}
	for b := 0; b < nb; b++ {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		k := min(batch, cfg.N-parked)
		a, err := e.call(request{Op: "connect", Target: k, Base: parked, Topics: topics[2*b : 2*b+2],
			ClientIDs: true, QoS: 1, Concurrency: cfg.Concurrency})
		if err != nil {
			return err
		}
		connErrs += a.errors
		if a.errors > 0 && e.rep.firstError == "" {
			e.rep.firstError = a.firstErr
		}
		e.cfg.logf("resume: batch %d/%d: %d connections open (%d errors%s)", b+1, nb, a.conns, a.errors, errSuffix(a.firstErr))
		if cfg.Live > 0 {
			for i := 0; i < cfg.Live; i++ {
				for ti := 2 * b; ti < 2*b+2; ti++ {
					if err := pubs[0].publish(ti, seq); err != nil {
						return fmt.Errorf("publish: %w", err)
					}
					seq++
				}
			}
			d, err := e.call(request{Op: "drain", Expect: perSession * cfg.Live, TimeoutNs: int64(cfg.Timeout)})
			if err != nil {
				return err
			}
			short += d.short
		}
		time.Sleep(cfg.Settle)
		lp := sample("live", parked)
		liveRSS += float64(lp.RSS - e.rep.Resume[len(e.rep.Resume)-2].RSS)
		liveConn += float64(a.conns)
		dr, err := e.call(request{Op: "drop"})
		if err != nil {
			return err
		}
		lastDrop = time.Now()
		parked += a.conns
		// The broker has parked them once it has closed their sockets
		// (and, with metrics, no connection but the publisher is left).
		if !e.waitDrops(ctx, fds0+4, 1) {
			e.rep.note("batch %d: the broker still held %d descriptors %v after the drop (%d before the run)", b+1, e.fds(), cfg.SteadyMax, fds0)
		}
		time.Sleep(cfg.Settle)
		p := sample("parked", parked)
		_ = dr
		xs, ys = append(xs, float64(parked)), append(ys, float64(p.RSS))
		if p.HeapInuse > 0 && len(hs) > 0 {
			hs = append(hs, float64(p.HeapInuse))
		}
	}
	if cfg.Expiry > 0 && time.Since(t0) > cfg.Expiry {
		e.rep.note("parking took %v, longer than the expiry %v: the first sessions expired before the last were parked", time.Since(t0).Round(time.Second), cfg.Expiry)
	}
	full := e.rep.Resume[len(e.rep.Resume)-1]
	slope, intercept := leastSquares(xs, ys)
	e.rep.add("resume_sessions", "sessions parked (connected, subscribed, reset)", "", float64(parked), higher)
	e.rep.add("resume_batches", "batches", "", float64(nb), 0)
	e.rep.add("resume_rss_start", "broker RSS before any session", "B", float64(p0.RSS), lower)
	e.rep.add("resume_rss_parked", "broker RSS with every session parked", "B", float64(full.RSS), lower)
	e.rep.add("resume_rss_slope", "broker RSS slope per parked session (least squares over the batches)", "B/session", slope, lower)
	e.rep.add("resume_rss_intercept", "fitted RSS at 0 sessions", "B", intercept, lower)
	if parked > 0 {
		e.rep.add("resume_rss_per_session", "(RSS with all parked − RSS at start) / sessions", "B/session", float64(full.RSS-p0.RSS)/float64(parked), lower)
	}
	if liveConn > 0 {
		e.rep.add("resume_live_rss_per_conn", "RSS growth per live connection while a batch is connected", "B/conn", liveRSS/liveConn, lower)
	}
	if len(hs) == len(xs) {
		hslope, _ := leastSquares(xs, hs)
		e.rep.add("resume_heap_slope", "broker heap in use slope per parked session", "B/session", hslope, lower)
		e.rep.add("resume_heap_parked", "broker heap in use with every session parked", "B", float64(full.HeapInuse), lower)
	}
	if full.Held >= 0 {
		e.rep.add("resume_held", "sessions the broker holds with every session parked (subscriptions / 2)", "", float64(full.Held), 0)
	}
	e.rep.add("resume_fds_parked", "broker descriptors with every session parked", "", float64(full.FDs), lower)
	e.rep.add("resume_connect_errors", "connection errors", "", float64(connErrs), lower)
	e.rep.add("resume_live_missed", "live connections that missed a message", "", float64(short), lower)

	gcOK := cfg.ForceGC && cfg.MetricsURL != ""
	var parkedGC ResumePoint
	if gcOK && parked > 0 {
		if parkedGC, gcOK = e.collectAndSample("parked-gc", parked, sample); gcOK && parkedGC.HeapInuse > 0 {
			e.rep.add("resume_heap_parked_gc", "broker heap in use with every session parked, after two forced collections", "B", float64(parkedGC.HeapInuse), lower)
			e.rep.add("resume_heap_parked_gc_per_session", "(that − heap in use at the start) / sessions", "B/session", float64(parkedGC.HeapInuse-p0.HeapInuse)/float64(parked), lower)
			e.rep.add("resume_rss_parked_gc", "broker RSS then", "B", float64(parkedGC.RSS), lower)
		}
	}
	if cfg.Missed > 0 {
		for i := 0; i < cfg.Missed; i++ {
			for ti := range topics {
				if err := pubs[0].publish(ti, seq); err != nil {
					return fmt.Errorf("publish: %w", err)
				}
				seq++
			}
		}
		_, _, _ = e.waitSteady(ctx)
		time.Sleep(cfg.Settle)
		pm := sample("missed", parked)
		e.rep.add("resume_missed_per_session", "messages published to each parked session while away", "", float64(perSession*cfg.Missed), 0)
		e.rep.add("resume_rss_missed", "broker RSS after those messages", "B", float64(pm.RSS), lower)
		if parked > 0 {
			e.rep.add("resume_rss_missed_per_session", "RSS growth per parked session from those messages", "B/session", float64(pm.RSS-full.RSS)/float64(parked), lower)
			if pm.HeapInuse > 0 && full.HeapInuse > 0 {
				e.rep.add("resume_heap_missed_per_session", "heap growth per parked session from those messages (before a collection: garbage included)", "B/session", float64(pm.HeapInuse-full.HeapInuse)/float64(parked), lower)
			}
		}
		if gcOK && parkedGC.HeapInuse > 0 && parked > 0 {
			if pg, ok := e.collectAndSample("missed-gc", parked, sample); ok {
				e.rep.add("resume_heap_missed_gc_per_session", "heap growth per parked session from those messages, after two forced collections", "B/session", float64(pg.HeapInuse-parkedGC.HeapInuse)/float64(parked), lower)
				e.rep.add("resume_rss_missed_gc", "broker RSS then", "B", float64(pg.RSS), lower)
			}
		}
	}

	if cfg.Probe > 0 {
		k := min(cfg.Probe, parked)
		var oldest, newest []int
		for i := 0; i < k; i++ {
			oldest = append(oldest, i)
			newest = append(newest, parked-k+i)
		}
		nw := e.probe(ctx, newest, perSession)
		od := e.probe(ctx, oldest, perSession)
		e.rep.add("resume_probe_newest_restored", fmt.Sprintf("of the %d newest sessions, reconnected: all subscriptions and a complete replay", k), "", float64(nw.restored), 0)
		e.rep.add("resume_probe_newest_replayed", "messages replayed to them", "", float64(nw.replayed), 0)
		if nw.overflow > 0 {
			e.rep.add("resume_probe_newest_backlog_limit", "of them: backlog_limit (more than RESUME_MAX_BYTES missed)", "", float64(nw.overflow), 0)
		}
		e.rep.add("resume_probe_oldest_restored", fmt.Sprintf("of the %d oldest sessions, reconnected: all subscriptions and a complete replay", k), "", float64(od.restored), 0)
		e.rep.add("resume_probe_oldest_expired", "of them: session_expired (dropped)", "", float64(od.expired), 0)
		e.rep.add("resume_probe_errors", "probe errors", "", float64(nw.errors+od.errors), lower)
		for _, s := range []probeStats{nw, od} {
			if s.firstErr != "" {
				e.rep.note("probe: %s", s.firstErr)
			}
		}
		if nw.reasons+od.reasons != "" {
			e.cfg.logf("resume: probe replay reasons:%s /%s", nw.reasons, od.reasons)
		}
		e.cfg.logf("resume: probe: newest %d/%d restored (%d replayed), oldest %d/%d restored, %d expired",
			nw.restored, k, nw.replayed, od.restored, k, od.expired)
		_ = e.waitDrops(ctx, fds0+4, 1)
	}

	if cfg.Expiry > 0 {
		due := lastDrop.Add(cfg.Expiry + 2*time.Second)
		e.cfg.logf("resume: waiting %v for the sessions to expire", time.Until(due).Round(time.Second))
		if err := sleepCtx(ctx, time.Until(due)); err != nil {
			return err
		}
		lag := time.Duration(0)
		if useMetrics {
			for {
				m, err := readBrokerMetrics(cfg.MetricsURL)
				if err != nil || m.subs == 0 {
					break
				}
				lag = time.Since(due)
				if lag > cfg.SteadyMax {
					e.rep.note("%d subscriptions still held %v after every session's expiry", m.subs, lag+2*time.Second)
					break
				}
				if err := sleepCtx(ctx, 200*time.Millisecond); err != nil {
					return err
				}
			}
		}
		pe := sample("expired", parked)
		e.rep.add("resume_rss_expired", "broker RSS once every session expired", "B", float64(pe.RSS), lower)
		if full.RSS > p0.RSS {
			e.rep.add("resume_rss_expired_share", "(RSS after expiry − start) / (RSS with all parked − start)", "", float64(pe.RSS-p0.RSS)/float64(full.RSS-p0.RSS), lower)
		}
		if pe.Held >= 0 {
			e.rep.add("resume_held_expired", "sessions the broker holds after the expiry", "", float64(pe.Held), lower)
			e.rep.add("resume_heap_expired", "broker heap in use after the expiry", "B", float64(pe.HeapInuse), lower)
		}
		if cfg.Linger > 0 {
			end := time.Now().Add(cfg.Linger)
			step := min(10*time.Second, cfg.Linger)
			var pl ResumePoint
			for time.Until(end) > 0 {
				if err := sleepCtx(ctx, min(step, time.Until(end))); err != nil {
					return err
				}
				pl = sample("later", parked)
			}
			e.rep.add("resume_rss_later", fmt.Sprintf("broker RSS %v after that", cfg.Linger), "B", float64(pl.RSS), lower)
			if pl.HeapInuse > 0 {
				e.rep.add("resume_heap_later", fmt.Sprintf("broker heap in use %v after that", cfg.Linger), "B", float64(pl.HeapInuse), lower)
			}
		}
		if cfg.ForceGC && cfg.MetricsURL != "" {
			// Two collections: objects in a sync.Pool survive the first
			// (its victim cache) and go with the second.
			u := strings.TrimSuffix(cfg.MetricsURL, "/metrics") + "/debug/pprof/heap?gc=1"
			for i, key := range []string{"gc", "gc2"} {
				if err := forceGC(u); err != nil {
					e.rep.note("forced collection: %v", err)
					break
				}
				time.Sleep(time.Second)
				pg := sample("after-"+key, parked)
				what := []string{"a forced collection (GET /debug/pprof/heap?gc=1)", "a second one"}[i]
				e.rep.add("resume_rss_"+key, "broker RSS after "+what, "B", float64(pg.RSS), lower)
				if pg.HeapInuse > 0 {
					e.rep.add("resume_heap_"+key, "broker heap in use after "+what, "B", float64(pg.HeapInuse), lower)
					if p0.HeapInuse > 0 {
						e.rep.add("resume_heap_"+key+"_over_start", "heap in use after it − at the start", "B", float64(pg.HeapInuse-p0.HeapInuse), lower)
					}
				}
			}
		}
		if cfg.Probe > 0 {
			k := min(cfg.Probe, parked)
			var newest []int
			for i := 0; i < k; i++ {
				newest = append(newest, parked-k+i)
			}
			pa := e.probe(ctx, newest, perSession)
			e.rep.add("resume_probe_after_expiry_expired", fmt.Sprintf("of the %d newest sessions, reconnected after the expiry: session_expired", k), "", float64(pa.expired), 0)
			if pa.firstErr != "" {
				e.rep.note("probe after expiry: %s", pa.firstErr)
			}
			// A resumable connection's attach and close make the
			// registry drop what it still lists of expired sessions:
			// one more collection shows what that lets go of.
			_ = e.waitDrops(ctx, fds0+4, 1)
			if cfg.ForceGC && cfg.MetricsURL != "" {
				u := strings.TrimSuffix(cfg.MetricsURL, "/metrics") + "/debug/pprof/heap?gc=1"
				if err := forceGC(u); err != nil {
					e.rep.note("forced collection: %v", err)
				} else {
					time.Sleep(time.Second)
					pr := sample("reconnect-gc", parked)
					e.rep.add("resume_rss_reconnect_gc", "broker RSS after those reconnects and a forced collection", "B", float64(pr.RSS), lower)
					if pr.HeapInuse > 0 {
						e.rep.add("resume_heap_reconnect_gc", "broker heap in use after them", "B", float64(pr.HeapInuse), lower)
						if p0.HeapInuse > 0 {
							e.rep.add("resume_heap_reconnect_gc_over_start", "heap in use after them − at the start", "B", float64(pr.HeapInuse-p0.HeapInuse), lower)
						}
					}
				}
			}
		}
	}
	e.publisherErrors()
	return nil
}

// waitDrops waits until the broker holds at most fds descriptors and, with
// metrics, at most authed authenticated connections, for at most
// cfg.SteadyMax. It reports whether it got there.
func (e *env) waitDrops(ctx context.Context, fds int, authed int64) bool {
	end := time.Now().Add(e.cfg.SteadyMax)
	for {
		ok := e.cfg.PID <= 0 || e.fds() <= fds
		if ok && e.cfg.MetricsURL != "" {
			m, err := readBrokerMetrics(e.cfg.MetricsURL)
			ok = err != nil || m.authed <= authed
		}
		if ok {
			return true
		}
		if time.Now().After(end) || ctx.Err() != nil {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// collectAndSample makes the broker collect twice (a sync.Pool keeps its
// objects through one collection) and samples; ok false when it could not.
func (e *env) collectAndSample(phase string, parked int, sample func(string, int) ResumePoint) (ResumePoint, bool) {
	u := strings.TrimSuffix(e.cfg.MetricsURL, "/metrics") + "/debug/pprof/heap?gc=1"
	for i := 0; i < 2; i++ {
		if err := forceGC(u); err != nil {
			e.rep.note("forced collection: %v", err)
			return ResumePoint{}, false
		}
	}
	time.Sleep(time.Second)
	return sample(phase, parked), true
}

// forceGC asks the broker for a heap profile after a collection
// (net/http/pprof's gc=1 runs runtime.GC first).
func forceGC(url string) error {
	cl := http.Client{Timeout: 60 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
