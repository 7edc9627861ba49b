package wsframe

import (
	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Encoding is the hub.Encoding of WebSocket connections: MessagePack
// messages in binary frames (wire-reference.md §1.2), close frames with the
// reason's code and text (RFC 6455 §5.5.1, pkg/disconnect), and an HTTP 408
// for a request that never completed. Its zero value is ready to use; it is
// encoding 0.
type Encoding struct{}

// ID implements hub.Encoding: 0.
func (Encoding) ID() uint8 { return 0 }

// Message implements hub.Encoding: the binary frame of m, its payload
// encoded once in place.
func (Encoding) Message(m *wire.Message) []byte { return Message(m) }

// Message returns the binary frame of the `message` m (wire-reference.md §3.2).
func Message(m *wire.Message) []byte {
	return Framed(ws.OpBinary, len(m.Data)+len(m.Topic)+len(m.SourceTopic)+160, func(b []byte) []byte {
		return wire.AppendMessage(b, m)
	})
}

// Close implements hub.Encoding: the close frame of d.
func (Encoding) Close(d disconnect.Disconnect) []byte { return Close(d.StatusCode(), d.Message()) }

// HandshakeTimeout implements hub.Encoding: HTTP 408 (RFC 9110 §15.5.9)
// with Connection: close.
func (Encoding) HandshakeTimeout() []byte { return handshakeTimeout }

var handshakeTimeout = []byte("HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\nContent-Length: 28\r\nConnection: close\r\n\r\nrequest header not complete\n")
