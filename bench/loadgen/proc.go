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
