package main

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// Latency histogram: log-linear buckets (32 per power of two, about 3 %
// resolution), safe for concurrent recording with atomics.
const (
	histSubBits  = 5
	histSubCount = 1 << histSubBits
	histBuckets  = 2*histSubCount + 58*histSubCount
)

// hist records non-negative int64 values (nanoseconds).
type hist struct {
	counts [histBuckets]atomic.Uint64
	max    atomic.Int64
	n      atomic.Uint64
}

func bucketOf(v int64) int {
	if v < 0 {
		v = 0
	}
	u := uint64(v)
	if u < 2*histSubCount {
		return int(u)
	}
	e := bits.Len64(u) - histSubBits - 1
	m := u >> uint(e)
	idx := 2*histSubCount + (e-1)*histSubCount + int(m) - histSubCount
	if idx >= histBuckets {
		idx = histBuckets - 1
	}
	return idx
}

// bucketMid returns a representative value of bucket idx.
func bucketMid(idx int) int64 {
	if idx < 2*histSubCount {
		return int64(idx)
	}
	e := (idx-2*histSubCount)/histSubCount + 1
	m := uint64((idx-2*histSubCount)%histSubCount + histSubCount)
	lo := m << uint(e)
	hi := (m+1)<<uint(e) - 1
	return int64(lo + (hi-lo)/2)
}

func (h *hist) record(v int64) {
	h.counts[bucketOf(v)].Add(1)
	h.n.Add(1)
	for {
		cur := h.max.Load()
		if v <= cur || h.max.CompareAndSwap(cur, v) {
			return
		}
	}
}

// histData is the transferable form of a histogram: sparse [bucket, count]
// pairs plus the exact maximum.
type histData struct {
	Buckets [][2]uint64 `json:"buckets,omitempty"`
	Max     int64       `json:"max"`
	N       uint64      `json:"n"`
}

func (h *hist) snapshot() histData {
	var d histData
	for i := range h.counts {
		if c := h.counts[i].Load(); c > 0 {
			d.Buckets = append(d.Buckets, [2]uint64{uint64(i), c})
		}
	}
	d.Max = h.max.Load()
	d.N = h.n.Load()
	return d
}

func (h *hist) reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
	h.max.Store(0)
	h.n.Store(0)
}

// merge adds o to d.
func (d *histData) merge(o histData) {
	m := make(map[uint64]uint64, len(d.Buckets)+len(o.Buckets))
	for _, b := range d.Buckets {
		m[b[0]] += b[1]
	}
	for _, b := range o.Buckets {
		m[b[0]] += b[1]
	}
	d.Buckets = d.Buckets[:0]
	for i := uint64(0); i < histBuckets; i++ {
		if c, ok := m[i]; ok {
			d.Buckets = append(d.Buckets, [2]uint64{i, c})
		}
	}
	if o.Max > d.Max {
		d.Max = o.Max
	}
	d.N += o.N
}

// quantile returns the value at quantile q (0..1); the exact maximum for 1.
func (d histData) quantile(q float64) int64 {
	if d.N == 0 {
		return 0
	}
	if q >= 1 {
		return d.Max
	}
	rank := uint64(math.Ceil(q * float64(d.N)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for _, b := range d.Buckets {
		seen += b[1]
		if seen >= rank {
			v := bucketMid(int(b[0]))
			if v > d.Max {
				v = d.Max
			}
			return v
		}
	}
	return d.Max
}

// histOf builds histData from plain values.
func histOf(vals []int64) histData {
	var h hist
	for _, v := range vals {
		h.record(v)
	}
	return h.snapshot()
}
