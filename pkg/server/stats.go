package server

import (
	"context"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap/zapcore"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/metrics"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/session"
)

// What the server counts for /metrics (pkg/metrics reads Stats): its
// handshakes and bytes, beside the node's counters (node.Stats: the
// connections and closes by transport, the session's and the hub's).
//
// Every counter is a plain atomic in a fixed array indexed by a small enum:
// no map, no lock and no allocation on the read or publish path. Nothing
// is counted per delivery here; deliveries are the hub's own counters.
// Label values are the enums' String forms, never a topic, a token, an
// actor or an organisation.

// Handshake is what the first HTTP request of a connection was; its String
// is the `outcome` label of the handshake counter.
type Handshake uint8

// The handshake outcomes. A handshake that did not complete in time is the
// hub's disconnect.HandshakeTimeout close.
const (
	HandshakeWebSocket Handshake = iota + 1 // upgraded to a WebSocket
	HandshakeHealth                         // GET /health answered
	HandshakeReady                          // GET /ready answered
	HandshakeInternal                       // a /internal/publish request
	HandshakeNotFound                       // another path (404)
	HandshakeRejected                       // malformed, too large, or an upgrade refused

	numHandshakes
)

// NumHandshakes is one more than the largest Handshake.
const NumHandshakes = int(numHandshakes)

var handshakeLabels = [numHandshakes]string{"", "websocket", "health", "ready", "internal_publish",
	"not_found", "rejected"}

// String returns the outcome's label, e.g. "websocket".
func (h Handshake) String() string {
	if h == 0 || h >= numHandshakes {
		return "unknown"
	}
	return handshakeLabels[h]
}

// Stats is a snapshot of the server's own counters; the connections, the
// closes and the session's counters are the node's (node.Node.Stats).
type Stats struct {
	// ReceivedBytes counts the bytes read from client sockets and
	// processed (requests and frames, headers included).
	ReceivedBytes uint64
	// Handshakes counts first HTTP requests by outcome.
	Handshakes [NumHandshakes]uint64
}

// instruments holds the server's counters. The zero value is ready to use.
type instruments struct {
	handshakes [numHandshakes]atomic.Uint64
}

// Stats returns the current counters. It is safe to call at any time.
func (s *Server) Stats() Stats {
	st := Stats{ReceivedBytes: s.loop.ReceivedBytes()}
	for i := range st.Handshakes {
		st.Handshakes[i] = s.obs.handshakes[i].Load()
	}
	return st
}

// connFields are the fields naming a connection in a log line
// (session.LogFields).
var connFields = session.LogFields

// opened counts and logs a connection upgraded to a WebSocket; the phase
// is already PhaseOpen, so a close racing it is counted consistently.
func (s *Server) opened(st *connState) {
	s.obs.handshakes[HandshakeWebSocket].Add(1)
	s.node.Opened(node.KindWebSocket, st.Conn)
	if ce := s.log.Check(zapcore.DebugLevel, "connection opened"); ce != nil {
		ce.Write(connFields(st.Conn)...)
	}
}

// Collect reports the server's part of the kraken_* metrics
// (metrics.Component): the handshakes by outcome, the handshakes the hub
// timed out, the bytes received, the TLS listener's TLS handshakes, and
// with PROXY protocol the malformed headers.
func (s *Server) Collect(_ context.Context, d *metrics.Descs, ch chan<- prometheus.Metric) {
	st := s.Stats()
	for o := 1; o < NumHandshakes; o++ {
		metrics.Counter(ch, d.Handshakes, st.Handshakes[o], Handshake(o).String())
	}
	metrics.Counter(ch, d.Handshakes, s.hub.Stats().Closed[disconnect.HandshakeTimeout], "timeout")
	metrics.Counter(ch, d.ReceivedBytes, st.ReceivedBytes)
	if s.TLSAddr() != nil {
		done, failed := s.TLSHandshakes()
		metrics.TLSHandshakes(ch, d, "wss", done, failed)
	}
	if s.cfg.ProxyProtocol || s.cfg.ProxyProtocolTLS {
		metrics.Counter(ch, d.ProxyHeaderErrors, s.loop.ProxyHeaderErrors(), "ws")
	}
}
