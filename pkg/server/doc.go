// Package server is the reactor: a cloudwego/netpoll event loop that accepts
// TCP connections, answers plain HTTP (/health, /ready, errors), upgrades /ws to
// WebSocket with gobwas/ws, parses RFC 6455 frames incrementally, runs the
// kraken session protocol (auth, subscribe, publish...) and hands the
// resulting work to the hub's fixed worker pool.
//
// # Connection lifecycle
//
//	| state      | event                        | what happens                                   |
//	|------------|------------------------------|------------------------------------------------|
//	| accepted   | OnPrepare                    | hub.Register: compact record, worker assigned  |
//	| handshake  | bytes arrive                 | whole request buffered? route / upgrade        |
//	| open       | binary/text frame            | decode, auth (first frame), else not_authenticated |
//	| authed     | subscribe/publish/...        | checks, then hub.Subscribe / hub.Publish       |
//	| any        | idle, deadline, revocation   | closed by the worker's sweep, never a timer    |
//	| closing    | a disconnect reason decided  | close frame after the queue, FIN, input discarded |
//	| closed     | peer FIN, or CloseTimeout    | hub.Closed: writes stop, tables cleaned        |
//
// # Reading without pinning goroutines
//
// netpoll runs OnRequest on a pooled goroutine when bytes arrive. OnRequest
// never blocks waiting for more bytes: it consumes everything buffered,
// processes every complete request or frame in place (zero-copy, unmasked in
// the netpoll buffer), and copies only the tail of a half-received request or
// frame into the connection's partial buffer, which is released as soon as
// that frame completes. An idle connection holds no buffer of ours.
//
// OnRequest calls for one connection never overlap (netpoll guarantees it),
// so the reader-side state (partial bytes, fragments, rate windows) needs no
// lock. Everything written to the socket goes through hub.Conn's outbound
// queue.
//
// # What it counts and logs
//
// stats.go holds the counters pkg/metrics reads (Server.Stats): plain
// atomics in fixed arrays indexed by small enums (Refusal, AuthOutcome,
// Handshake, Source, Transport), touched per request or per publish, never
// per delivery. Every refusal is logged with its reason code, the
// connection id, the peer's address and the actor: the first of a kind on a
// connection at info, the rest at debug. Server.NotReady is the readiness
// answer of /ready.
package server
