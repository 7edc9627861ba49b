package main

import (
	"math"
	"sort"
)

// SlabSlope is the growth of one slab cache per connection over the idle
// ramp, both ends of the loopback connections together.
type SlabSlope struct {
	Cache       string  `json:"cache"`
	BytesPerCon float64 `json:"bytes_per_conn"`
}

// idleKernel adds the kernel's memory per connection to the idle report:
// least-squares slopes over the ramp points of slab (Slab:, and its
// unreclaimable part SUnreclaim:) and of TCP buffer pages (the mem field
// of /proc/net/sockstat). These are machine-wide: on loopback both ends of
// every connection are on this machine, the load generator's sockets as
// well as the broker's, so the broker's share is reported as half of the
// slope. rssSlope is the broker's user-space RSS slope of the same run.
func (e *env) idleKernel(k0 kernelMem, rssSlope float64) {
	var xs []float64
	var ks []kernelMem
	for _, p := range e.rep.Points {
		if p.Kernel == nil {
			return
		}
		xs = append(xs, float64(p.Conns))
		ks = append(ks, *p.Kernel)
	}
	if len(ks) < 2 {
		return
	}
	fit := func(f func(k kernelMem) int64) float64 {
		ys := make([]float64, len(ks))
		for i, k := range ks {
			ys[i] = float64(f(k))
		}
		a, _ := leastSquares(xs, ys)
		return a
	}
	last := ks[len(ks)-1]
	n := xs[len(xs)-1]
	sockets := fit(func(k kernelMem) int64 { return k.TCPInUse })
	slab := fit(func(k kernelMem) int64 { return k.Slab })
	unrec := fit(func(k kernelMem) int64 { return k.SUnreclaim })
	tcp := fit(func(k kernelMem) int64 { return k.TCPMem })
	total := fit(kernelMem.total)
	e.rep.add("idle_kernel_before", "kernel slab + TCP pages before any connection (machine-wide)", "B", float64(k0.total()), 0)
	e.rep.add("idle_tcp_sockets_per_conn", "TCP sockets per connection (slope; 2 = both ends on this machine)", "", math.Round(sockets*100)/100, 0)
	e.rep.add("idle_kernel_slab_slope", "kernel slab (Slab:) slope per connection, both ends", "B/conn", slab, lower)
	e.rep.add("idle_kernel_sunreclaim_slope", "of which unreclaimable (SUnreclaim:), both ends", "B/conn", unrec, lower)
	e.rep.add("idle_kernel_tcpmem_slope", "TCP buffer pages (sockstat mem) slope per connection, both ends", "B/conn", tcp, lower)
	e.rep.add("idle_kernel_slope", "kernel memory slope per connection (slab + TCP pages), both ends", "B/conn", total, lower)
	e.rep.add("idle_kernel_broker_slope", "kernel memory per connection, broker side (half the slope of both ends)", "B/conn", total/2, lower)
	if n > 0 {
		e.rep.add("idle_kernel_broker_delta", "(kernel at the last point − before) / connections / 2", "B/conn", float64(last.total()-k0.total())/n/2, lower)
	}
	e.rep.add("idle_total_per_conn", "total per connection: broker RSS slope + broker-side kernel slope", "B/conn", rssSlope+total/2, lower)
	if d := last.TCPTW - k0.TCPTW; n > 0 && math.Abs(float64(d)) > 0.02*n {
		e.rep.note("TIME_WAIT sockets on the machine changed by %d during the ramp (%d → %d); they are in the kernel slope", d, k0.TCPTW, last.TCPTW)
	}
	// Slab caches that grew by at least 8 bytes per connection.
	if ks[0].Slabs != nil && last.Slabs != nil {
		var out []SlabSlope
		for name := range last.Slabs {
			v := fit(func(k kernelMem) int64 { return k.Slabs[name] })
			if math.Abs(v) >= 8 {
				out = append(out, SlabSlope{Cache: name, BytesPerCon: math.Round(v)})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].BytesPerCon > out[j].BytesPerCon })
		e.rep.KernelSlabs = out
	}
}
