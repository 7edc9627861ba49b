package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/PID/stat; it is
// 100 on every mainstream Linux architecture.
const clockTicks = 100

// procRSS returns VmRSS of pid in bytes.
func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("VmRSS:")) {
			continue
		}
		f := strings.Fields(string(line[len("VmRSS:"):]))
		if len(f) < 1 {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, err
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("pid %d: no VmRSS", pid)
}

// cpuTimes is the CPU time of a process in nanoseconds: User and System
// from /proc/PID/stat (10 ms ticks) and Sched, the sum over its threads of
// /proc/PID/task/TID/schedstat (nanoseconds on a CPU), when readable.
type cpuTimes struct {
	User, System, Sched int64
}

// total prefers the nanosecond scheduler figure.
func (c cpuTimes) total() int64 {
	if c.Sched > 0 {
		return c.Sched
	}
	return c.User + c.System
}

func (c cpuTimes) sub(o cpuTimes) cpuTimes {
	d := cpuTimes{User: c.User - o.User, System: c.System - o.System}
	if c.Sched > 0 && o.Sched > 0 {
		d.Sched = c.Sched - o.Sched
	}
	return d
}

// procSched sums the on-CPU nanoseconds of every thread of pid. Threads
// that exited are not counted, which is fine for a long-lived server.
func procSched(pid int) int64 {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var sum int64
	for _, e := range ents {
		b, err := os.ReadFile(dir + "/" + e.Name() + "/schedstat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			continue
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		sum += v
	}
	return sum
}

// procCPU returns utime and stime of pid from /proc/PID/stat.
func procCPU(pid int) (cpuTimes, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTimes{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return cpuTimes{}, fmt.Errorf("pid %d: malformed stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	if len(f) < 13 {
		return cpuTimes{}, fmt.Errorf("pid %d: short stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return cpuTimes{}, fmt.Errorf("pid %d: bad stat times", pid)
	}
	const ns = int64(1e9 / clockTicks)
	return cpuTimes{User: ut * ns, System: st * ns, Sched: procSched(pid)}, nil
}

// procThreads returns the Threads: line of /proc/PID/status.
func procThreads(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("Threads:")) {
			v, _ := strconv.ParseInt(strings.TrimSpace(string(line[len("Threads:"):])), 10, 64)
			return v
		}
	}
	return 0
}

// procStatusKB returns the given fields of /proc/PID/status (values in
// kB, such as VmRSS and VmHWM) in bytes.
func procStatusKB(pid int, keys ...string) (map[string]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := make(map[string]int64, len(keys))
	for _, line := range bytes.Split(b, []byte("\n")) {
		for _, k := range keys {
			if !bytes.HasPrefix(line, []byte(k+":")) {
				continue
			}
			f := strings.Fields(string(line[len(k)+1:]))
			if len(f) < 1 {
				continue
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("pid %d: %s: %w", pid, k, err)
			}
			out[k] = kb * 1024
		}
	}
	for _, k := range keys {
		if _, ok := out[k]; !ok {
			return nil, fmt.Errorf("pid %d: no %s", pid, k)
		}
	}
	return out, nil
}

// resetHWM resets VmHWM (the peak RSS) of pid to its current RSS by
// writing 5 to /proc/PID/clear_refs. It needs the right to write that
// file (the same user, or root).
func resetHWM(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// procFDs counts the open descriptors of pid.
func procFDs(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	return len(names), err
}

// kernelMem is a machine-wide sample of the kernel's memory: slab from
// /proc/meminfo and TCP buffer pages and socket counts from
// /proc/net/sockstat. It counts both ends of loopback connections.
type kernelMem struct {
	Slab       int64            `json:"slab_bytes"`       // Slab: (reclaimable + unreclaimable)
	SUnreclaim int64            `json:"sunreclaim_bytes"` // SUnreclaim:
	TCPMem     int64            `json:"tcp_mem_bytes"`    // sockstat TCP mem (pages) × page size
	TCPInUse   int64            `json:"tcp_inuse"`        // sockstat TCP inuse + sockstat6 TCP6 inuse
	TCPTW      int64            `json:"tcp_tw"`           // sockstat TCP tw
	TCPOrphan  int64            `json:"tcp_orphan"`       // sockstat TCP orphan
	SockUsed   int64            `json:"sockets_used"`     // sockstat sockets: used
	Slabs      map[string]int64 `json:"-"`                // bytes per slab cache, when /proc/slabinfo is readable
}

// total is the kernel memory the slope is fitted to: slab plus TCP
// buffer pages.
func (k kernelMem) total() int64 { return k.Slab + k.TCPMem }

func readKernelMem() (kernelMem, error) {
	var k kernelMem
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return k, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Slab:":
			k.Slab = v * 1024
		case "SUnreclaim:":
			k.SUnreclaim = v * 1024
		}
	}
	if k.Slab == 0 {
		return k, fmt.Errorf("/proc/meminfo: no Slab")
	}
	b, err = os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return k, err
	}
	page := int64(os.Getpagesize())
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kv := map[string]int64{}
		for i := 1; i+1 < len(f); i += 2 {
			v, err := strconv.ParseInt(f[i+1], 10, 64)
			if err == nil {
				kv[f[i]] = v
			}
		}
		switch f[0] {
		case "sockets:":
			k.SockUsed = kv["used"]
		case "TCP:":
			k.TCPMem = kv["mem"] * page
			k.TCPInUse = kv["inuse"]
			k.TCPTW = kv["tw"]
			k.TCPOrphan = kv["orphan"]
		}
	}
	// A broker listening on [::] holds IPv4 clients in TCPv6 sockets
	// (v4-mapped addresses): they are counted in sockstat6. TCP's mem is
	// shared by both.
	if b, err := os.ReadFile("/proc/net/sockstat6"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && f[0] == "TCP6:" && f[1] == "inuse" {
				if v, err := strconv.ParseInt(f[2], 10, 64); err == nil {
					k.TCPInUse += v
				}
			}
		}
	}
	k.Slabs = readSlabinfo()
	return k, nil
}

// readSlabinfo returns the bytes held by each slab cache (slabs × pages
// per slab × page size), or nil when /proc/slabinfo is not readable
// (it usually needs root).
func readSlabinfo() map[string]int64 {
	b, err := os.ReadFile("/proc/slabinfo")
	if err != nil {
		return nil
	}
	page := int64(os.Getpagesize())
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "slabinfo") {
			continue
		}
		// name active num objsize objperslab pagesperslab : tunables l b s : slabdata active num shared
		f := strings.Fields(line)
		if len(f) < 16 || f[6] != ":" || f[11] != ":" {
			continue
		}
		pps, err1 := strconv.ParseInt(f[5], 10, 64)
		slabs, err2 := strconv.ParseInt(f[14], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[f[0]] += slabs * pps * page
	}
	return out
}
