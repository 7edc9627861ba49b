package node

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/resume"
	"github.com/NoLagApp/kraken/pkg/session"
)

// Kind is how a connection was used, by transport: its String is the
// `transport` label of the connection metrics and of the "connection
// closed" log line.
type Kind uint8

// The kinds of connection.
const (
	KindWebSocket Kind = iota + 1 // upgraded to a WebSocket (pkg/server)
	KindHTTP                      // a plain HTTP request, or nothing complete (pkg/server)
	KindMQTT                      // a connection of the MQTT listener (pkg/mqtt/listener)

	numKinds
)

// KindInternal is the kind of a hub connection a transport keeps for
// itself rather than for a client (an MQTT persistent session's parked
// connection): it is neither counted nor logged when it ends.
const KindInternal Kind = 0

// NumKinds is one more than the largest Kind.
const NumKinds = int(numKinds)

// String returns "websocket", "http" or "mqtt".
func (k Kind) String() string {
	switch k {
	case KindMQTT:
		return "mqtt"
	case KindWebSocket:
		return "websocket"
	case KindHTTP:
		return "http"
	}
	return "unknown"
}

// counts are the node's connection counts by kind. The zero value is
// ready to use.
type counts struct {
	open   [numKinds]atomic.Int64
	closed [numKinds][disconnect.NumReasons]atomic.Uint64
}

// Stats is a snapshot of the node's counters and gauges.
type Stats struct {
	// Hub holds the worker pool's counters (connections, subscriptions,
	// deliveries, closes by reason).
	Hub hub.Stats
	// Stats holds the session protocol's: auth outcomes and latency,
	// refusals, accepted publishes, authenticated connections, messages
	// from other nodes dropped.
	session.Stats
	// Resume holds the resumable sessions' counters; Resume.Parked of the
	// hub's Connections are parked sessions, which hold no socket.
	Resume resume.Stats
	// Open is the open connections by kind (Opened), KindHTTP excepted:
	// those are the hub's Connections less the others and the parked
	// sessions.
	Open [NumKinds]int64
	// Closed counts the connections that ended, by kind and by the
	// broker's close reason (0, peer_closed: the peer went away first).
	Closed [NumKinds][disconnect.NumReasons]uint64
}

// Stats returns the current counters. It is safe to call at any time and
// costs a few hundred atomic loads.
func (n *Node) Stats() Stats {
	st := Stats{Hub: n.hub.Stats(), Stats: n.proto.Stats(), Resume: n.resume.Stats()}
	for k := range st.Open {
		st.Open[k] = max(n.obs.open[k].Load(), 0)
	}
	for k := range st.Closed {
		for r := range st.Closed[k] {
			st.Closed[k][r] = n.obs.closed[k][r].Load()
		}
	}
	return st
}

// Opened counts c open as a connection of kind k: a transport calls it
// once per connection, when c becomes one of k (a WebSocket at its
// upgrade, an MQTT connection at its accept). Its end is counted by the
// node (Transport.Kind).
func (n *Node) Opened(k Kind, _ *hub.Conn) { n.obs.open[k].Add(1) }

// infoCloses are the close reasons logged at info: the broker refused to
// go on with the connection because of what its client did. The others
// (the client's own close, timeouts, shutdown, a revocation already logged
// by revalidation, plain HTTP) are logged at debug.
var infoCloses = [disconnect.NumReasons]bool{
	disconnect.SlowConsumer:    true,
	disconnect.InputOverflow:   true,
	disconnect.TooManyErrors:   true,
	disconnect.AuthFailures:    true,
	disconnect.ProtocolError:   true,
	disconnect.InvalidPayload:  true,
	disconnect.TooLarge:        true,
	disconnect.UnsupportedData: true,
}

// closed counts and logs a connection that ended; it runs on the
// connection's worker after its subscriptions are gone and the session let
// go of it (session.Config.OnClose).
func (n *Node) closed(c *hub.Conn) {
	r := c.CloseReason()
	k := n.kind(c)
	if k == KindInternal {
		return
	}
	if n.limits != nil {
		n.limits.Closed(peerOf(c), c.Phase() != hub.PhaseAuthed)
	}
	if k != KindHTTP {
		n.obs.open[k].Add(-1)
	}
	if int(r) < disconnect.NumReasons {
		n.obs.closed[k][r].Add(1)
	}
	level := zapcore.DebugLevel
	if int(r) < disconnect.NumReasons && infoCloses[r] {
		level = zapcore.InfoLevel
	}
	if ce := n.log.Check(level, "connection closed"); ce != nil {
		ce.Write(session.LogFields(c, zap.Stringer("reason", r), zap.Stringer("transport", k),
			zap.Duration("duration", time.Since(c.OpenedAt())))...)
	}
}

// Admit counts c, a connection a transport just accepted, in the node's
// edge limits (Config.Limits) and reports whether one was already reached:
// the transport then answers the refusal its way (an HTTP 503 or 429 with
// Refusal.Text, CONNACK 3) and closes c, which counts until it ends.
// addressPending says c's client address is not known yet (a PROXY
// protocol header is awaited, reactor.Stream.AddressPending): only the
// node's bounds are checked then, the address's at Readdress. Call it from
// the transport's Handler.Open.
func (n *Node) Admit(c *hub.Conn, addressPending bool) edge.Refusal {
	if n.limits == nil { // no bound: not even the address is looked at
		return edge.Admitted
	}
	if addressPending {
		return n.limits.AdmitDeferred(peerOf(c))
	}
	return n.limits.Admit(peerOf(c))
}

// Readdress moves c, admitted under the address from, to its client
// address now known (c.RemoteAddr: from a PROXY protocol header, or a
// trusted proxy's forwarding header) in the edge limits, and checks that
// address's bounds (the accept rate, its connections and pending ones;
// edge.Limiter.Readdress). Refused, the transport answers as for Admit.
// Call it on c's reader, after the address changed and before the
// transport handles c's input.
func (n *Node) Readdress(c *hub.Conn, from net.Addr) edge.Refusal {
	if n.limits == nil {
		return edge.Admitted
	}
	return n.limits.Readdress(edge.AddrOf(from), peerOf(c), c.Phase() != hub.PhaseAuthed)
}

// Refused returns the connections the edge limits refused, by
// edge.Refusal.
func (n *Node) Refused() [edge.NumRefusals]uint64 { return n.limits.Refused() }

// kind is the kind of c by its transport (Transport.Kind), KindHTTP when
// no transport serves its encoding.
func (n *Node) kind(c *hub.Conn) Kind {
	if b, ok := n.byEnc[c.EncodingID()].Load().(transportBox); ok {
		return b.t.Kind(c)
	}
	return KindHTTP
}

// peerOf is c's peer's IP address as the edge limits count it (unmapped,
// without a zone), read without allocating (hub.Conn.RemoteAddrPort).
func peerOf(c *hub.Conn) netip.Addr { return edge.AddrOfPort(c.RemoteAddrPort()) }
