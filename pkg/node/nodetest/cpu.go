package nodetest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU returns the CPU time, user and system, this process (the
// node under test and the test itself) has used so far (getrusage(2)),
// for the idle-CPU checks of the rule "nothing spins": compare two reads
// around a quiet window.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
