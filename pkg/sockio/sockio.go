// Package sockio writes to a non-blocking socket descriptor the way the
// hub's transports need (hub.Transport): as much as the kernel takes now,
// never waiting. The WebSocket and MQTT listeners share it.
package sockio

import "golang.org/x/sys/unix"

// Writev writes bufs in order to the non-blocking descriptor fd with
// write(2) (one buffer) or writev(2) and returns the bytes written. A full
// socket (EAGAIN) is a short count, 0 included, with a nil error; EINTR is
// retried; any other error is returned with the bytes written before it.
func Writev(fd int, bufs [][]byte) (int, error) {
	for {
		var n int
		var err error
		if len(bufs) == 1 {
			n, err = unix.Write(fd, bufs[0])
		} else {
			n, err = unix.Writev(fd, bufs)
		}
		switch err {
		case nil:
			return n, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return max(n, 0), nil
		}
		return max(n, 0), err
	}
}

// CloseWrite shuts the write side of fd down (shutdown(2) SHUT_WR: a FIN
// after the last frame), leaving the read side open.
func CloseWrite(fd int) error { return unix.Shutdown(fd, unix.SHUT_WR) }
