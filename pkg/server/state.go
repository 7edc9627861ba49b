package server

import (
	"github.com/NoLagApp/kraken/pkg/reactor"
	"github.com/NoLagApp/kraken/pkg/session"
)

// connState is the reader-side state of one WebSocket connection. It is
// owned by the connection's OnRequest, which netpoll never runs
// concurrently with itself. Its reactor.Stream makes it the context netpoll
// hands back to OnRequest and, with its Encoding, the connection's
// hub.Transport (transport.go); it is also the connection's session.Sink
// (sink.go): an idle connection costs 96 bytes here.
type connState struct {
	session.State  // the hub record (Conn), rate and error windows, auth failures
	reactor.Stream // the socket, the partial frame, what this read decided

	frag []byte // payload of the fragmented message in progress (its opcode: Stream.Message)
}
