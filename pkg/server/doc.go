// Package server is the WebSocket transport: on a reactor event loop
// (pkg/reactor), which accepts the TCP connections and reads them, it
// answers plain HTTP (/health, /ready, POST /internal/publish, errors),
// upgrades /ws to WebSocket with gobwas/ws, parses RFC 6455 frames
// incrementally and decodes their MessagePack (or JSON) commands. Each
// command goes to the session protocol (pkg/session: auth, subscribe, publish, limits...), with
// the connection's reader state (connState) as its session.Sink: every
// reply is its MessagePack payload in a binary frame. The work that
// results runs on the hub's fixed worker pool.
//
// A protocol carried in binary messages on a path of its own
// (Config.Carried, carried.go: MQTT over WebSocket on /mqtt, served by
// pkg/mqtt/listener, which this package does not import) takes the
// connection over at its upgrade (Carried.Open, hub.Hub.Rebind); the server
// still reads its frames and hands it each binary message.
//
// # Connection lifecycle
//
//	| state      | event                        | what happens                                   |
//	|------------|------------------------------|------------------------------------------------|
//	| accepted   | OnPrepare                    | hub.Register: compact record, worker assigned  |
//	| handshake  | bytes arrive                 | whole request buffered? route / upgrade        |
//	| open       | binary/text frame            | decode, auth (first frame), else not_authenticated |
//	| authed     | subscribe/publish/...        | checks, then hub.Subscribe / hub.Publish       |
//	| authed     | reauth                       | new token validated, same actor: grants swapped |
//	| any        | idle, deadline, revocation   | closed by the worker's sweep, never a timer    |
//	| authed     | token expiry passed          | closed by the sweep with 4003 token_expired    |
//	| closing    | a disconnect reason decided  | close frame after the queue, FIN, input discarded; backend call in flight cancelled |
//	| any        | peer hangs up (OnDisconnect) | backend call in flight cancelled (session.Protocol.Hangup) |
//	| closed     | peer FIN, or CloseTimeout    | hub.Closed: writes stop, tables cleaned        |
//
// # Reading without pinning goroutines
//
// The reactor hands each read to the Server's reactor.Handler (read.go),
// which never waits for more bytes: it processes every complete request or
// frame in place (zero-copy, unmasked in the netpoll buffer) and leaves the
// tail of a half-received one to the reactor, told its declared length
// (reactor.Stream.SetNeed). A fragmented message is the Stream's message in
// progress (BeginMessage with its opcode, EndMessage when it completes), so
// its frame timeout runs from its first fragment. The reactor bounds the
// input, keeps the partial buffer, times frames (the handshake has its own
// deadline) and flushes the replies once per read; an idle connection
// holds no buffer.
//
// OnRequest calls for one connection never overlap (netpoll guarantees it),
// so the reader-side state (partial bytes, fragments, rate windows) needs no
// lock. Everything written to the socket goes through hub.Conn's outbound
// queue.
//
// A token validation that misses the cache waits on OnRequest (only that
// connection waits). netpoll runs the close handler (the reactor's
// OnClose, hub.Hub.Closed) only once OnRequest has returned, so a peer
// that hangs up meanwhile is reported through OnDisconnect, which runs
// beside it: the wait is cancelled there.
//
// # What it counts and logs
//
// stats.go holds the server's own counters (Server.Stats): plain atomics
// in a fixed array indexed by a small enum (Handshake), touched per
// request, never per delivery; the connections and closes by transport
// are the node's (node.Node.Stats), and so are the session's counters.
// The session logs every refusal with its reason code, the connection id,
// the peer's address and the actor: the first of a kind on a connection at
// info, the rest at debug. /ready answers the node's readiness
// (node.Node.NotReady).
package server
