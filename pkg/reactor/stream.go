package reactor

import (
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/sockio"
)

// Socket is what a Stream needs of netpoll's connection: its descriptor
// (written with writev(2), never through netpoll's Writer), its peer's
// address (for logs), and its Close, which runs the close path (the
// connection's close callbacks, then the Loop's OnClose).
type Socket interface {
	Fd() int
	RemoteAddr() net.Addr
	Close() error
}

// Stream is the reactor's part of one connection's state: the socket, the
// tail of a half-received frame, and what one read decided. A transport's
// connection state embeds it (Conn), which makes that state the context
// netpoll hands back to OnRequest and, with an Encoding of its own, the
// connection's hub.Transport. It is 32 bytes, nothing else is held while the
// connection is idle, and it is owned by the connection's OnRequest, which
// netpoll never runs concurrently with itself; the hub calls its
// hub.Transport, hub.InputPauser and hub.Unsent methods from other
// goroutines, and those read only the socket.
type Stream struct {
	sock    Socket
	partial *[]byte // tail of a half-received frame or request (part, setPart); nil when idle
	need    int32   // bytes the frame at the head of partial needs in total, 0 if not known (SetNeed)
	message byte    // kind of the message in progress across frames, 0 if none (BeginMessage)
	closing bool    // a close was decided (CloseNow): the rest of the input is discarded
	wrote   bool    // frames were queued during this read (Queue): flush at its end
	ended   bool    // a message ended during this read (EndMessage)
}

// NewStream returns the Stream of a connection on sock, as a transport's
// Handler.Open embeds it.
func NewStream(sock Socket) Stream { return Stream{sock: sock} }

func (s *Stream) stream() *Stream { return s }

// part returns the partial buffer: the unused tail of the reads so far, nil
// when none.
func (s *Stream) part() []byte {
	if s.partial == nil {
		return nil
	}
	return *s.partial
}

// setPart makes b the partial buffer. Its slice header is held apart, in a
// pooled holder taken while a buffer exists, so an idle Stream keeps one
// word for it instead of three; nil gives the holder back.
func (s *Stream) setPart(b []byte) {
	if b == nil {
		if h := s.partial; h != nil {
			*h, s.partial = nil, nil
			partialHolders.Put(h)
		}
		return
	}
	if s.partial == nil {
		s.partial = partialHolders.Get().(*[]byte)
	}
	*s.partial = b
}

// partialHolders are the slice headers of partial buffers (Stream.setPart).
var partialHolders = sync.Pool{New: func() any { return new([]byte) }}

// Socket returns the stream's socket: a protocol carried over the
// connection's transport (MQTT over WebSocket) writes to it through a
// Stream of its own (NewStream), while its reader's work (Queue, CloseNow,
// Closing) stays on this one.
func (s *Stream) Socket() Socket { return s.sock }

// Deadline implements context.Context: there is none.
func (*Stream) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done implements context.Context: never done.
func (*Stream) Done() <-chan struct{} { return nil }

// Err implements context.Context: always nil.
func (*Stream) Err() error { return nil }

// Value implements context.Context: no values.
func (*Stream) Value(any) any { return nil }

// Writev implements hub.Transport: the bytes of bufs the socket takes now,
// with non-blocking writev(2) (sockio.Writev); EAGAIN is a short count with
// a nil error, anything else but EINTR an error.
// On a TLS connection the bufs are encrypted first (tls.go).
func (s *Stream) Writev(bufs [][]byte) (int, error) {
	if t, ok := s.sock.(*tlsSocket); ok {
		return t.writev(bufs)
	}
	return sockio.Writev(s.sock.Fd(), bufs)
}

// CloseWrite implements hub.Transport: shutdown(SHUT_WR), a FIN after the
// closing frame.
// On a TLS connection the TLS close_notify alert goes first.
func (s *Stream) CloseWrite() error {
	if t, ok := s.sock.(*tlsSocket); ok {
		return t.closeWrite()
	}
	return sockio.CloseWrite(s.sock.Fd())
}

// Close implements hub.Transport: netpoll closes the socket and runs the
// Loop's close handler (hub.Hub.Closed, from netpoll's OnClose).
func (s *Stream) Close() error { return s.sock.Close() }

// RemoteAddr is the peer's address (hub.Conn.RemoteAddr, logs).
func (s *Stream) RemoteAddr() net.Addr { return s.sock.RemoteAddr() }

// RemoteAddrPort is the peer's IP address and port, what RemoteAddr gives
// as a netip.AddrPort (the zero one if that is not a *net.TCPAddr), without
// the *net.TCPAddr that RemoteAddr makes on every call for a socket netpoll
// accepted (netpoll's RemoteAddrPort, third_party/netpoll/PATCH.md, edit 19).
// The IP is as RemoteAddr's: not unmapped, and with the zone of a scoped
// IPv6 address.
func (s *Stream) RemoteAddrPort() netip.AddrPort { return addrPortOf(s.sock) }

// addrPorter is a socket that gives its peer's address as a netip.AddrPort
// without allocating: netpoll's accepted connections, and the wrappers here
// that pass it through.
type addrPorter interface {
	RemoteAddrPort() netip.AddrPort
}

// addrPortOf is sock's RemoteAddrPort if it has one, else its RemoteAddr's.
func addrPortOf(sock Socket) netip.AddrPort {
	if a, ok := sock.(addrPorter); ok {
		return a.RemoteAddrPort()
	}
	if a, ok := sock.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// SetReadPaused implements hub.InputPauser: netpoll stops or resumes
// reading the socket (sockio.SetReadPaused).
func (s *Stream) SetReadPaused(paused bool) error { return sockio.SetReadPaused(s.sock, paused) }

// Unsent implements hub.Unsent: the bytes the socket has not sent yet
// (sockio.Unsent).
// On a TLS connection the records not yet handed to the kernel count too.
func (s *Stream) Unsent() int {
	if t, ok := s.sock.(*tlsSocket); ok {
		return t.unsent()
	}
	return sockio.Unsent(s.sock.Fd())
}

// Queue queues frame on c, the connection's hub record, behind the
// replies the workers still owe it (hub.Conn.Write), so replies leave in
// request order (wire-reference.md §3.3); the Loop flushes the queue once when
// the read ends. A nil frame queues nothing.
func (s *Stream) Queue(c *hub.Conn, frame []byte) {
	if frame != nil && c.Write(frame) {
		s.wrote = true
	}
}

// CloseNow decides, from the connection's reader, to close c for d
// (hub.Conn.CloseNow: behind the replies owed and what is queued); the
// first decision wins. Nothing read after it is handled: the rest of this
// read and every later one are discarded until the peer closes its side
// or the hub releases the socket.
func (s *Stream) CloseNow(c *hub.Conn, d disconnect.Disconnect) {
	if s.closing {
		return
	}
	s.closing = true
	c.CloseNow(d)
}

// Closing reports whether the reader decided a close (CloseNow).
func (s *Stream) Closing() bool { return s.closing }

// SetNeed records that the frame at the head of what Process leaves unused
// needs n bytes in total, header included, as its header declares; 0 (the
// value before every Process) says the length is not known yet. It sizes
// the partial buffer so that a small frame is copied once and a declared
// length is never reserved before its bytes arrive (partialCap).
func (s *Stream) SetNeed(n int) { s.need = int32(min(n, 1<<31-1)) }

// BeginMessage records that a message spanning several frames is in
// progress (a fragmented WebSocket message); kind, not 0, is the
// transport's own mark (the message's opcode), returned by Message until
// EndMessage. Its frame timeout runs from its first frame, across the
// complete frames between its fragments.
func (s *Stream) BeginMessage(kind byte) { s.message = kind }

// Message returns the kind of the message in progress across frames
// (BeginMessage), 0 when none is.
func (s *Stream) Message() byte { return s.message }

// EndMessage records that a message ended during this read (every MQTT
// packet, every WebSocket data message): none is in progress across
// frames any more, and a frame left incomplete after it began in this
// read, so its frame timeout starts now.
func (s *Stream) EndMessage() { s.message, s.ended = 0, true }
