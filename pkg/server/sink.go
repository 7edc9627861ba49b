package server

import (
	"github.com/NoLagApp/kraken/pkg/session"
	"github.com/NoLagApp/kraken/pkg/wsframe"
)

// connState is the session.Sink of a WebSocket connection: every reply,
// whatever its kind, is its MessagePack payload in one binary frame
// (wire-reference.md §1.2), the bytes the SDKs read. Its Disconnect is the
// reader's close (frame.go).

// Frame implements session.Framer: the binary frame of r's payload. It
// reads nothing of the connection, so any goroutine may call it.
func (*connState) Frame(r session.Reply) []byte { return wsframe.Binary(r.Payload) }

// Write implements session.Sink: r's frame, queued behind the replies the
// workers owe (write).
func (st *connState) Write(r session.Reply) { st.write(wsframe.Binary(r.Payload)) }
