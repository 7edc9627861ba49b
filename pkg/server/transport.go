package server

import (
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// connState is the hub.Transport of a WebSocket connection: its
// reactor.Stream writes the queue straight to the socket with non-blocking
// write(2)/writev(2) (netpoll's own write path is not used), shuts the
// write side down after a close frame, and releases the socket through
// netpoll; the frames the hub builds are WebSocket frames.

// Encoding implements hub.Transport: WebSocket frames of MessagePack.
func (*connState) Encoding() hub.Encoding { return wsframe.Encoding{} }
