package server

import (
	"net"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/sockio"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// socket is what connState needs of netpoll's connection: its descriptor,
// its peer's address (for logs), and its Close (which runs the close
// callbacks).
type socket interface {
	Fd() int
	RemoteAddr() net.Addr
	Close() error
}

// connState is the hub.Transport of a WebSocket connection: the hub writes
// its queue straight to the socket with non-blocking write(2)/writev(2)
// (netpoll's own write path is not used), shuts the write side down after
// a close frame, and releases the socket through netpoll.

// Writev implements hub.Transport: the bytes of bufs the socket takes now;
// EAGAIN is a short count with a nil error, anything else but EINTR an
// error.
func (st *connState) Writev(bufs [][]byte) (int, error) {
	return sockio.Writev(st.nc.Fd(), bufs)
}

// CloseWrite implements hub.Transport: shutdown(SHUT_WR), a FIN after the
// close frame.
func (st *connState) CloseWrite() error { return sockio.CloseWrite(st.nc.Fd()) }

// Encoding implements hub.Transport: WebSocket frames of MessagePack.
func (*connState) Encoding() hub.Encoding { return wsframe.Encoding{} }

// RemoteAddr is the peer's address (hub.Conn.RemoteAddr, logs).
func (st *connState) RemoteAddr() net.Addr { return st.nc.RemoteAddr() }

// Close implements hub.Transport: netpoll closes the socket and runs the
// close callback (Hub.Closed).
func (st *connState) Close() error { return st.nc.Close() }

// SetReadPaused implements hub.InputPauser: netpoll stops or resumes
// reading the socket (sockio.SetReadPaused).
func (st *connState) SetReadPaused(paused bool) error { return sockio.SetReadPaused(st.nc, paused) }

// Unsent implements hub.Unsent: the bytes the socket has not sent yet.
func (st *connState) Unsent() int { return sockio.Unsent(st.nc.Fd()) }
