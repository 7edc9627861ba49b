package server

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
)

// What the server counts for /metrics (pkg/metrics reads Stats): its
// handshakes, bytes and closes by transport, beside the session protocol's
// counters (session.Stats).
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

// Transport is how a connection was used: its String is the `transport`
// label.
type Transport uint8

// The transports.
const (
	TransportWebSocket Transport = iota + 1 // upgraded to a WebSocket
	TransportHTTP                           // a plain HTTP request, or nothing complete
	TransportMQTT                           // a connection of the MQTT listener (pkg/mqtt/listener)

	numTransports
)

// NumTransports is one more than the largest Transport.
const NumTransports = int(numTransports)

// String returns "websocket", "http" or "mqtt".
func (t Transport) String() string {
	switch t {
	case TransportMQTT:
		return "mqtt"
	case TransportWebSocket:
		return "websocket"
	case TransportHTTP:
		return "http"
	}
	return "unknown"
}

// Stats is a snapshot of the server's counters and gauges; see pkg/metrics
// for the metric each one becomes.
type Stats struct {
	// Hub holds the worker pool's counters (connections, subscriptions,
	// deliveries, closes by reason).
	Hub hub.Stats
	// Stats holds the session protocol's: auth outcomes and latency,
	// refusals, accepted publishes, authenticated connections, messages
	// from other nodes dropped.
	session.Stats
	// ReceivedBytes counts the bytes read from client sockets and
	// processed (requests and frames, headers included).
	ReceivedBytes uint64
	// Handshakes counts first HTTP requests by outcome.
	Handshakes [NumHandshakes]uint64
	// Closed counts the connections that ended, by transport and by the
	// broker's close reason (0, peer_closed: the peer went away first).
	Closed [NumTransports][disconnect.NumReasons]uint64
	// WebSocketConns is the open WebSocket connections.
	WebSocketConns int64
	// MQTTConns is the open connections of the MQTT listener (OpenedMQTT).
	MQTTConns int64
	// Resume holds the resumable sessions' counters; Resume.Parked of the
	// hub's Connections are parked sessions, which hold no socket.
	Resume resume.Stats
}

// instruments holds the server's counters and its readiness checks. The zero
// value is ready to use.
type instruments struct {
	handshakes [numHandshakes]atomic.Uint64
	closed     [numTransports][disconnect.NumReasons]atomic.Uint64
	ws         atomic.Int64
	mqtt       atomic.Int64

	checksMu sync.Mutex
	checks   atomic.Pointer[[]ReadyCheck]
}

// Stats returns the current counters. It is safe to call at any time and
// costs a few hundred atomic loads.
func (s *Server) Stats() Stats {
	o := &s.obs
	st := Stats{Hub: s.hub.Stats(), Stats: s.proto.Stats(), ReceivedBytes: s.loop.ReceivedBytes(),
		WebSocketConns: max(o.ws.Load(), 0), MQTTConns: max(o.mqtt.Load(), 0), Resume: s.proto.ResumeStats()}
	for i := range st.Handshakes {
		st.Handshakes[i] = o.handshakes[i].Load()
	}
	for t := range st.Closed {
		for r := range st.Closed[t] {
			st.Closed[t][r] = o.closed[t][r].Load()
		}
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
	s.obs.ws.Add(1)
	if ce := s.log.Check(zapcore.DebugLevel, "connection opened"); ce != nil {
		ce.Write(connFields(st.Conn)...)
	}
}

// OpenedMQTT counts a connection the MQTT listener accepted on the server's
// session protocol (listener.Config.OnOpen), so the connections gauge and
// the closes by transport tell it from the WebSocket ones.
func (s *Server) OpenedMQTT(*hub.Conn) { s.obs.mqtt.Add(1) }

// infoCloses are the close reasons logged at info: the broker refused to
// go on with the connection because of what its client did. The others
// (the client's own close, timeouts, shutdown, a revocation already logged
// by revalidation, plain HTTP) are logged at debug.
var infoCloses = [disconnect.NumReasons]bool{
	disconnect.SlowConsumer:   true,
	disconnect.InputOverflow:  true,
	disconnect.TooManyErrors:  true,
	disconnect.AuthFailures:   true,
	disconnect.ProtocolError:  true,
	disconnect.InvalidPayload: true,
	disconnect.TooLarge:       true,
}

// closed counts and logs a connection that ended; it runs on the
// connection's worker after its subscriptions are gone and the session let
// go of it (session.Config.OnClose).
func (s *Server) closed(c *hub.Conn) {
	r := c.CloseReason()
	phase := c.Phase()
	tr := TransportHTTP
	if _, ws := c.Transport().(*connState); !ws {
		tr = TransportMQTT
		s.obs.mqtt.Add(-1)
	} else if phase != hub.PhaseHandshake {
		tr = TransportWebSocket
		s.obs.ws.Add(-1)
	}
	if int(r) < disconnect.NumReasons {
		s.obs.closed[tr][r].Add(1)
	}
	level := zapcore.DebugLevel
	if int(r) < disconnect.NumReasons && infoCloses[r] {
		level = zapcore.InfoLevel
	}
	if ce := s.log.Check(level, "connection closed"); ce != nil {
		ce.Write(connFields(c, zap.Stringer("reason", r), zap.Stringer("transport", tr),
			zap.Duration("duration", time.Since(c.OpenedAt())))...)
	}
}

// PresenceCounts is PresenceStats bounded by ctx, for scrapes: ok is false
// when the worker owning the registry did not answer before ctx was done
// (it is behind, or the server has stopped).
func (s *Server) PresenceCounts(ctx context.Context) (rooms, members, watches int, ok bool) {
	return s.proto.PresenceCounts(ctx)
}

// PresenceStats reports what the presence registry holds (rooms, members,
// lobby watches), read on the worker that owns it.
func (s *Server) PresenceStats() (rooms, members, watches int) { return s.proto.PresenceStats() }

// Broker returns the fan-out broker the server runs with (Config.Broker,
// local.Broker for a single node), for metrics and readiness.
func (s *Server) Broker() broker.Broker { return s.proto.Broker() }
