package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"
)

// Direction of a metric: which way is better.
const (
	higher = 1
	lower  = -1
)

// Metric is one measured figure.
type Metric struct {
	Key   string  `json:"key"`
	Name  string  `json:"name"`
	Unit  string  `json:"unit,omitempty"`
	Value float64 `json:"value"`
	// Better is 1 when higher is better, -1 when lower is, 0 for context.
	Better int `json:"better"`
	// Min and Max are the range over the repetitions of a median report.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// Point is one idle-ramp sample.
type Point struct {
	Conns   int   `json:"conns"`
	RSS     int64 `json:"rss_bytes"`
	Threads int64 `json:"threads,omitempty"`
	// Kernel is the machine-wide kernel memory at this point.
	Kernel *kernelMem `json:"kernel,omitempty"`
}

// Report is the output of one run.
type Report struct {
	Scenario  string         `json:"scenario"`
	Label     string         `json:"label,omitempty"`
	URL       string         `json:"url"`
	Started   string         `json:"started"`
	Finished  string         `json:"finished,omitempty"`
	GoVersion string         `json:"go_version"`
	CPUs      int            `json:"cpus"`
	Params    map[string]any `json:"params"`
	Metrics   []Metric       `json:"metrics"`
	Points    []Point        `json:"points,omitempty"`
	// KernelSlabs is the growth per connection of each slab cache over
	// the idle ramp (both ends), when /proc/slabinfo is readable.
	KernelSlabs []SlabSlope `json:"kernel_slabs,omitempty"`
	// Storms are the rounds of the storm scenario.
	Storms []StormRound `json:"storms,omitempty"`
	// Resume are the samples of the resume scenario.
	Resume []ResumePoint `json:"resume_points,omitempty"`
	// Repetitions is the number of runs a median report combines.
	Repetitions int      `json:"repetitions,omitempty"`
	Notes       []string `json:"notes,omitempty"`
	firstError  string
}

func newReport(cfg Config) *Report {
	r := &Report{
		Scenario:  cfg.Scenario,
		Label:     cfg.Label,
		URL:       cfg.URL,
		Started:   time.Now().UTC().Format(time.RFC3339),
		GoVersion: runtime.Version(),
		CPUs:      runtime.NumCPU(),
		Params: map[string]any{
			"n": cfg.N, "procs": cfg.Procs, "pid": cfg.PID, "duration": cfg.Duration.String(),
			"rate": cfg.Rate, "payload": cfg.Payload, "messages": cfg.Messages, "steps": cfg.Steps,
			"start": cfg.Start, "settle": cfg.Settle.String(), "topics": cfg.Topics, "subs": cfg.Subs,
			"publishers": cfg.Publishers, "concurrency": cfg.Concurrency, "topic": cfg.Topic,
			"rounds": cfg.Rounds, "tokens": cfg.Tokens,
		},
	}
	if cfg.Scenario == "resume" {
		for k, v := range map[string]any{"batch": cfg.Batch, "live": cfg.Live, "missed": cfg.Missed,
			"expiry": cfg.Expiry.String(), "linger": cfg.Linger.String(), "probe": cfg.Probe, "metrics_url": cfg.MetricsURL, "force_gc": cfg.ForceGC} {
			r.Params[k] = v
		}
	}
	if len(cfg.SubURLs) > 0 {
		r.Params["sub_urls"] = cfg.SubURLs
	}
	if cfg.Transport == "mqtt" {
		r.Params["transport"], r.Params["mqtt_addr"] = cfg.Transport, cfg.MQTTAddr
	}
	return r
}

func (r *Report) add(key, name, unit string, v float64, better int) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	r.Metrics = append(r.Metrics, Metric{Key: key, Name: name, Unit: unit, Value: v, Better: better})
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// Metric returns the metric with key.
func (r *Report) Metric(key string) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Key == key {
			return m, true
		}
	}
	return Metric{}, false
}

func writeJSON(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func readJSON(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// writeMarkdown writes one report as a metric | value table.
func writeMarkdown(w io.Writer, r *Report) {
	label := r.Label
	if label == "" {
		label = "value"
	}
	fmt.Fprintf(w, "| %s metric | %s |\n|---|---:|\n", r.Scenario, label)
	for _, m := range r.Metrics {
		fmt.Fprintf(w, "| %s | %s |\n", metricTitle(m), formatValue(m))
	}
	if len(r.KernelSlabs) > 0 {
		fmt.Fprintf(w, "\n| slab cache (both ends) | bytes per connection |\n|---|---:|\n")
		for _, s := range r.KernelSlabs {
			fmt.Fprintf(w, "| %s | %s |\n", s.Cache, group(s.BytesPerCon))
		}
	}
	if len(r.Storms) > 0 {
		fmt.Fprintf(w, "\n| storm | reset → all back | errors | RSS before | peak RSS | RSS when all back | RSS after | broker fds peak / after |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for i, s := range r.Storms {
			b := func(v int64) string { return formatValue(Metric{Unit: "B", Value: float64(v)}) }
			fmt.Fprintf(w, "| %d | %s ms | %d | %s | %s | %s | %s | %s / %s |\n", i+1, sig(s.TotalMs), s.Errors,
				b(s.RSSBefore), b(s.RSSPeak), b(s.RSSEnd), b(s.RSSAfter), group(float64(s.FDsPeak)), group(float64(s.FDsAfter)))
		}
	}
	if len(r.Resume) > 0 {
		fmt.Fprintf(w, "\n| phase | time | sessions parked | held | RSS | heap in use | broker fds | TCP sockets (machine) | slab (machine) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		b := func(v int64) string { return formatValue(Metric{Unit: "B", Value: float64(v)}) }
		for _, p := range r.Resume {
			held, heap := "", ""
			if p.Held >= 0 {
				held = group(float64(p.Held))
			}
			if p.HeapInuse > 0 {
				heap = b(p.HeapInuse)
			}
			fmt.Fprintf(w, "| %s | %.1f s | %s | %s | %s | %s | %s | %s | %s |\n", p.Phase, p.AtSec, group(float64(p.Parked)), held, b(p.RSS), heap,
				group(float64(p.FDs)), group(float64(p.TCPInUse)), b(p.Slab))
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "\nNote: %s\n", n)
	}
}

func metricTitle(m Metric) string {
	arrow := ""
	switch m.Better {
	case higher:
		arrow = " ↑"
	case lower:
		arrow = " ↓"
	}
	return m.Name + arrow
}

// formatValue renders a value with its unit.
func formatValue(m Metric) string {
	v := m.Value
	switch m.Unit {
	case "B":
		switch {
		case math.Abs(v) >= 1<<30:
			return fmt.Sprintf("%.2f GiB", v/(1<<30))
		case math.Abs(v) >= 1<<20:
			return fmt.Sprintf("%.1f MiB", v/(1<<20))
		case math.Abs(v) >= 1<<10:
			return fmt.Sprintf("%.1f KiB", v/(1<<10))
		}
		return fmt.Sprintf("%.0f B", v)
	case "B/conn":
		return fmt.Sprintf("%s B", group(math.Round(v)))
	case "ms", "µs":
		return fmt.Sprintf("%s %s", sig(v), m.Unit)
	case "/s":
		return group(math.Round(v)) + "/s"
	case "×":
		return sig(v) + "×"
	case "conns", "":
		if v == math.Trunc(v) {
			return group(v)
		}
		return sig(v)
	}
	return sig(v) + " " + m.Unit
}

// sig formats with three significant digits (more for large values).
func sig(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		return group(math.Round(v))
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.2g", v)
}

// group formats an integral value with thousands separators.
func group(v float64) string {
	neg := v < 0
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// writeComparison writes one table over pairs of reports (a, b): metric |
// a | b | a/b. Metrics are matched by key.
func writeComparison(w io.Writer, nameA, nameB string, pairs [][2]*Report) {
	groups := make([][]*Report, len(pairs))
	for i, p := range pairs {
		groups[i] = []*Report{p[0], p[1]}
	}
	writeComparisonN(w, []string{nameA, nameB}, groups, tableOptions{})
}

// tableOptions select what a comparison table shows.
type tableOptions struct {
	// keys, when not empty, keeps only these metrics, in the reports' order.
	keys map[string]bool
	// spread adds the range over the repetitions of a median report.
	spread bool
}

// writeComparisonN writes one table over groups of reports, one per name:
// metric | names... | one ratio column per name but the last, against the
// last. Metrics are those of each group's first report, matched by key.
func writeComparisonN(w io.Writer, names []string, groups [][]*Report, opt tableOptions) {
	ref := names[len(names)-1]
	fmt.Fprintf(w, "| metric | %s |", strings.Join(names, " | "))
	for _, n := range names[:len(names)-1] {
		fmt.Fprintf(w, " ratio %s/%s |", n, ref)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---:|", 2*len(names)-1))
	var notes []string
	for _, g := range groups {
		first, last := g[0], g[len(g)-1]
		for _, m := range first.Metrics {
			if len(opt.keys) > 0 && !opt.keys[m.Key] {
				continue
			}
			ml, okRef := last.Metric(m.Key)
			fmt.Fprintf(w, "| %s: %s |", scenarioTitle(first), metricTitle(m))
			for _, r := range g {
				v := "—"
				if mr, ok := r.Metric(m.Key); ok {
					v = formatValue(mr)
					if opt.spread && mr.Min != nil && mr.Max != nil && *mr.Min != *mr.Max {
						v += fmt.Sprintf(" (%s – %s)", formatValue(Metric{Unit: mr.Unit, Value: *mr.Min}), formatValue(Metric{Unit: mr.Unit, Value: *mr.Max}))
					}
				}
				fmt.Fprintf(w, " %s |", v)
			}
			for _, r := range g[:len(g)-1] {
				ratio := "—"
				if mr, ok := r.Metric(m.Key); ok && okRef && ml.Value != 0 && m.Better != 0 {
					ratio = fmt.Sprintf("%.2f×", mr.Value/ml.Value)
				}
				fmt.Fprintf(w, " %s |", ratio)
			}
			fmt.Fprintln(w)
		}
		for i, r := range g {
			name := r.Label
			if name == "" {
				name = names[i]
			}
			for _, n := range r.Notes {
				notes = append(notes, fmt.Sprintf("%s %s: %s", name, scenarioTitle(r), n))
			}
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintf(w, "- %s\n", n)
		}
	}
}

// medianReport combines repetitions of one case: each metric of the first
// report becomes the median over the reports that have it (the mean of the
// two middle values for an even count), with its range in Min and Max.
// Notes are kept once each.
func medianReport(label string, rs []*Report) *Report {
	first := rs[0]
	out := &Report{Scenario: first.Scenario, Label: label, URL: first.URL, Started: first.Started,
		Finished: rs[len(rs)-1].Finished, GoVersion: first.GoVersion, CPUs: first.CPUs,
		Params: map[string]any{}, Repetitions: len(rs)}
	if out.Label == "" {
		out.Label = first.Label
	}
	for k, v := range first.Params {
		out.Params[k] = v
	}
	for _, m := range first.Metrics {
		var vals []float64
		for _, r := range rs {
			if mr, ok := r.Metric(m.Key); ok {
				vals = append(vals, mr.Value)
			}
		}
		sort.Float64s(vals)
		k := len(vals)
		med := vals[k/2]
		if k%2 == 0 {
			med = (vals[k/2-1] + vals[k/2]) / 2
		}
		lo, hi := vals[0], vals[k-1]
		m.Value, m.Min, m.Max = med, &lo, &hi
		out.Metrics = append(out.Metrics, m)
	}
	seen := map[string]bool{}
	for _, r := range rs {
		for _, n := range r.Notes {
			if !seen[n] {
				seen[n] = true
				out.Notes = append(out.Notes, n)
			}
		}
	}
	return out
}

// scenarioTitle names a run by its scenario and shape.
func scenarioTitle(r *Report) string {
	p := r.Params
	num := func(k string) float64 {
		f, _ := p[k].(float64)
		if i, ok := p[k].(int); ok {
			f = float64(i)
		}
		return f
	}
	switch r.Scenario {
	case "idle":
		if p["transport"] == "mqtt" {
			return fmt.Sprintf("idle %s MQTT", group(num("n")))
		}
		return fmt.Sprintf("idle %s", group(num("n")))
	case "fanout":
		return fmt.Sprintf("fanout %s×%s B", group(num("n")), group(num("payload")))
	case "latency":
		return fmt.Sprintf("latency 1→%s @%s/s", group(num("n")), sig(num("rate")))
	case "connect":
		return fmt.Sprintf("connect %s%s", group(num("n")), tokensTitle(num("tokens"), num("n")))
	case "storm":
		return fmt.Sprintf("storm %s", group(num("n")))
	case "resume":
		return fmt.Sprintf("resume %s parked", group(num("n")))
	case "stream":
		subs := num("subs")
		if subs == 0 && num("topics") > 0 {
			subs = math.Max(1, math.Floor(num("n")/num("topics")))
		}
		return fmt.Sprintf("stream %s×%s @%s/s", group(num("topics")), group(subs), sig(num("rate")))
	}
	return r.Scenario
}

// tokensTitle names the token spread of a run: nothing for one token.
func tokensTitle(tokens, n float64) string {
	switch {
	case tokens <= 1:
		return ""
	case tokens >= n:
		return ", a token each"
	}
	return fmt.Sprintf(", %s tokens", group(tokens))
}
