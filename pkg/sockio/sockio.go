// Package sockio writes to a non-blocking socket descriptor the way the
// hub's transports need (hub.Transport): as much as the kernel takes now,
// never waiting. The WebSocket and MQTT listeners share it.
package sockio

import (
	"errors"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// iovChunk is the most iovecs one writev(2) call is given. Writev builds
// them in an array of this size on its own stack (16 bytes an iovec on
// 64-bit Linux), so it allocates nothing; Linux's IOV_MAX is 1024 (a longer
// vector fails with EINVAL).
const iovChunk = 64

// Writev writes bufs in order to the non-blocking descriptor fd with
// writev(2) and returns the number of bytes written, from 0 to the sum of
// the buffers' lengths. Any number of buffers may be given: they go
// iovChunk (64) at a time, well under Linux's IOV_MAX of 1024, each call
// made only if the one before took all of its bytes. Empty buffers are
// skipped; an empty bufs, or one of empty buffers only, returns 0, nil
// without a system call. Writev allocates nothing.
//
// A full socket (EAGAIN, or a call that takes only part of its bytes) ends
// the write with a short count, 0 included, and a nil error; EINTR is
// retried; any other error is returned with the bytes written before it.
func Writev(fd int, bufs [][]byte) (int, error) {
	var iov [iovChunk]unix.Iovec
	total := 0
	for {
		// The next chunk: up to iovChunk non-empty buffers.
		k, want := 0, 0
		for len(bufs) > 0 && k < iovChunk {
			if b := bufs[0]; len(b) > 0 {
				iov[k].Base = &b[0]
				iov[k].SetLen(len(b))
				k++
				want += len(b)
			}
			bufs = bufs[1:]
		}
		if k == 0 {
			return total, nil
		}
		n, errno := writev(fd, &iov[0], k)
		if raceEnabled && n > 0 {
			raceReadIovecs(iov[:k], n)
		}
		total += n
		switch errno {
		case 0:
			if n < want {
				return total, nil
			}
		case unix.EAGAIN:
			return total, nil
		default:
			return total, errno
		}
	}
}

// writev is writev(2) of the k iovecs from iov, retried on EINTR: the
// bytes written, or 0 and the errno.
func writev(fd int, iov *unix.Iovec, k int) (int, unix.Errno) {
	for {
		r, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(fd), uintptr(unsafe.Pointer(iov)), uintptr(k))
		if e != unix.EINTR {
			if e != 0 {
				return 0, e
			}
			return int(r), 0
		}
	}
}

// CloseWrite shuts the write side of fd down (shutdown(2) SHUT_WR: a FIN
// after the last frame), leaving the read side open.
func CloseWrite(fd int) error { return unix.Shutdown(fd, unix.SHUT_WR) }

// ErrNoReadPause is SetReadPaused's error for a socket whose reading
// cannot be paused.
var ErrNoReadPause = errors.New("sockio: reading of this socket cannot be paused")

// SetReadPaused stops (true) or resumes (false) reading sock, a netpoll
// connection of the patched copy in third_party/netpoll (its
// SetReadPaused: the descriptor's poller registration loses or regains
// EPOLLIN, so the kernel's receive window closes while paused). It is how
// the listeners implement hub.InputPauser; ErrNoReadPause for any other
// socket.
func SetReadPaused(sock any, paused bool) error {
	if p, ok := sock.(interface{ SetReadPaused(bool) error }); ok {
		return p.SetReadPaused(paused)
	}
	return ErrNoReadPause
}

// Unsent returns the bytes in fd's send queue not yet sent (ioctl
// SIOCOUTQ, in bytes), 0 when it cannot tell.
func Unsent(fd int) int {
	n, err := unix.IoctlGetInt(fd, unix.SIOCOUTQ)
	if err != nil {
		return 0
	}
	return n
}

// Write writes b to fd, a non-blocking socket, as far as it takes it now:
// Writev of one buffer (EAGAIN is a short count with a nil error, EINTR is
// retried, anything else is the error).
func Write(fd int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	iov := unix.Iovec{Base: &b[0]}
	iov.SetLen(len(b))
	n, errno := writev(fd, &iov, 1)
	if raceEnabled && n > 0 {
		raceReadIovecs([]unix.Iovec{iov}, n)
	}
	switch errno {
	case 0, unix.EAGAIN:
		return n, nil
	default:
		return n, errno
	}
}

// ErrWriteTimeout is WaitWritable's error when fd did not become writable
// in time.
var ErrWriteTimeout = errors.New("sockio: socket not writable in time")

// WaitWritable blocks until fd can take more bytes (poll(2) POLLOUT), it
// fails (the error: the peer reset it, or poll's own), or timeout passes
// (ErrWriteTimeout). Only a goroutine that may block calls it: a TLS
// handshake's (pkg/reactor), never the event loop or a worker.
func WaitWritable(fd int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return ErrWriteTimeout
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n == 0:
			continue
		case fds[0].Revents&(unix.POLLERR|unix.POLLHUP|unix.POLLNVAL) != 0:
			return unix.EPIPE
		default:
			return nil
		}
	}
}
