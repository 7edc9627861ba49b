package server

import (
	"net"

	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/reactor"
)

// handler is the Server as the reactor's Handler of WebSocket connections:
// the reactor (pkg/reactor) accepts and reads them, bounds their input,
// keeps their partial frames and times them; the Server parses and
// handles what they send (process).
type handler struct{ s *Server }

// Open implements reactor.Handler: a connection accepted is registered in
// its handshake phase (the hub's handshake deadline runs until the upgrade).
func (h handler) Open(sock reactor.Socket) *connState {
	st := &connState{Stream: reactor.NewStream(sock)}
	st.Conn = h.s.hub.Register(st)
	// The address's bounds wait for its client's address: a PROXY protocol
	// header, or a trusted proxy's forwarding header (forwardedFor).
	pending := st.AddressPending() || h.s.cfg.TrustedProxies.Trusts(edge.AddrOfPort(st.RemoteAddrPort()))
	if r := h.s.node.Admit(st.Conn, pending); r != edge.Admitted {
		h.s.refuseAtEdge(st, r)
	}
	return st
}

// Readdressed implements reactor.Readdresser: the connection's PROXY
// protocol header gave its client's address (Config.ProxyProtocol), whose
// edge limits now apply; a refusal is answered before the request is read,
// as at the accept.
func (h handler) Readdressed(st *connState, from net.Addr) {
	if r := h.s.node.Readdress(st.Conn, from); r != edge.Admitted {
		h.s.refuseAtEdge(st, r)
	}
}

// Process implements reactor.Handler (process).
func (h handler) Process(st *connState, buf []byte) (used int, complete bool) {
	return h.s.process(st, buf)
}

// process handles every complete request or frame at the start of buf and
// returns the number of bytes used, and whether at least one was complete.
// It stops at the first incomplete one, recording its length when its
// header is complete (reactor.Stream.SetNeed), or once a close is decided.
func (s *Server) process(st *connState, buf []byte) (used int, complete bool) {
	for used < len(buf) && !st.Closing() {
		var n int
		if st.Conn.Phase() == hub.PhaseHandshake {
			n = s.handshake(st, buf[used:])
			if n > 0 && st.Conn.Phase() != hub.PhaseHandshake {
				// The 101 goes out before the frames after it are handled:
				// the auth frame sent in the same write may wait on the
				// auth service.
				st.Flush(st.Conn)
			}
		} else {
			n = s.readFrame(st, buf[used:])
		}
		if n == 0 {
			break
		}
		used += n
		complete = true
	}
	return used, complete
}

// write queues a reply frame; it is flushed at the end of the read. It
// goes behind the replies that workers still owe the connection
// (reactor.Stream.Queue), so replies come back in request order
// (wire-reference.md §3.3).
func (st *connState) write(frame []byte) { st.Queue(st.Conn, frame) }
