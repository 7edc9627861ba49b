package hub

import (
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Transport is the byte stream under a Conn, as the hub writes to it: the
// WebSocket listener's sockets (pkg/server), an MQTT listener's, or a test's
// in-memory stream. Its methods are called with the Conn's write lock held,
// never concurrently with each other, and must not block.
type Transport interface {
	// Writev writes bufs, in order, as far as the stream takes them now,
	// and returns the bytes written. Fewer than all of them (0 included)
	// with a nil error means the stream is full: the hub keeps the rest
	// queued and retries from its worker. A non-nil error means the stream
	// is broken; the hub drops what is queued and waits for the close
	// callback (Hub.Closed).
	Writev(bufs [][]byte) (int, error)
	// CloseWrite ends the write side (TCP FIN, SHUT_WR) once the closing
	// frame is out; the hub still reads until the peer closes.
	CloseWrite() error
	// Close releases the stream (once the peer closed, or at the close
	// deadline). The transport then calls Hub.Closed from its close
	// callback.
	Close() error
	// Encoding is the wire format of the frames the hub builds for this
	// connection; it must not change over the connection's life (a
	// connection handed over to another transport in its handshake gets
	// that transport's, Hub.Rebind).
	Encoding() Encoding
}

// Encoding is a transport's wire format for the frames the hub builds
// itself: deliveries, the frame that ends a session, and the answer to a
// handshake that never completed. A value is shared by every connection of
// its transport and safe for concurrent use. The session layer writes its
// other replies already encoded.
type Encoding interface {
	// ID tells encodings apart in the per-publication frames: a small
	// number, distinct per encoding (0 is WebSocket binary frames of
	// MessagePack, wsframe.Encoding); below MaxEncodings for the frames
	// Hub.Publish builds ahead.
	ID() uint8
	// Message returns the complete frame of the `message` m (wire-reference.md
	// §3.2) for one display topic; the hub builds it once per publication,
	// display topic and encoding, and shares it, read-only.
	Message(m *wire.Message) []byte
	// Close returns what is written after the queue when a session is
	// closed for d (the RFC 6455 §5.5.1 close frame), or nil for nothing.
	// It is not called for a connection still in PhaseHandshake.
	Close(d disconnect.Disconnect) []byte
	// HandshakeTimeout returns what is written to a connection whose
	// handshake did not complete within Config.HandshakeTimeout (an HTTP
	// 408), or nil.
	HandshakeTimeout() []byte
}

// Unsent is a Transport that can tell how many bytes it accepted are not
// sent to the peer yet (its socket's send queue: ioctl SIOCOUTQ). A closing
// connection whose peer is still reading them is not released until they
// are out (Config.CloseTimeout, Config.WriteTimeout).
type Unsent interface {
	Unsent() int
}
