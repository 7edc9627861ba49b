//go:build race

package sockio

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

const raceEnabled = true

// raceReadIovecs tells the race detector that the first n bytes of iov
// were read (by the kernel, for this goroutine), as x/sys/unix's Writev
// does.
func raceReadIovecs(iov []unix.Iovec, n int) {
	for i := 0; n > 0 && i < len(iov); i++ {
		m := min(int(iov[i].Len), n)
		n -= m
		runtime.RaceReadRange(unsafe.Pointer(iov[i].Base), m)
	}
}
