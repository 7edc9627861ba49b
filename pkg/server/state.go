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
// (sink.go): an idle connection costs 64 bytes here (a 64-byte
// allocation; TestReaderStateSize).
type connState struct {
	session.State  // the hub record (Conn), rate and error windows, auth failures
	reactor.Stream // the socket, the partial frame, what this read decided

	// frag is the payload of the fragmented message in progress (its
	// opcode: Stream.Message), nil when none: a pointer, so that a
	// connection pays for the slice header only while a message is
	// fragmented.
	frag *[]byte
}
