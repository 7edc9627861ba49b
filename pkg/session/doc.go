// Package session is kraken's session protocol, once for every transport:
// authentication (wire-reference.md §2) and reauth, a new token on a live
// connection (docs/protocol.md "Auth"), grant checks and topic resolution (§4),
// subscribe, unsubscribe and filters (§3.3, §6.9), publish with its limits
// (rate window §6.10, size §6.11, error budgets OQ-67, subscription caps),
// store records and acks (§6.4–§6.5), control-plane reports and webhooks
// (§5.2–§5.3), the broker hand-off to and from the other nodes, presence
// and lobbies (§7), and revalidation outcomes (§4.9, OQ-12).
//
// # The seam
//
// A transport (the WebSocket listener in pkg/server; an MQTT listener)
// owns the socket, the framing and the decoding. Per connection it
// registers a hub.Conn, embeds a State in its own per-connection state (no
// allocation of ours), and implements Sink. It hands every decoded command
// to Protocol.Handle, and a frame that is not a command to Protocol.Refuse:
//
//	wire.Command ──► Protocol.Handle(st, sink, cmd)
//	                   ├─ sink.Write(Reply)      reader-side replies, now
//	                   ├─ sink.Frame(Reply)      replies a worker writes later
//	                   │    (hub.SubSpec.Reply, Hub.Unsubscribe, Hub.SetFilters,
//	                   │     presence lists, lobby states, hydration)
//	                   ├─ sink.Disconnect(d)     closes (too many errors, auth failures)
//	                   └─ hub.Subscribe / hub.Publish / Broker
//
// A Reply is its Kind and its MessagePack payload as wire-reference.md §3.2 defines
// it; the WebSocket transport frames the payload as it is, another
// transport maps the kinds it knows to its own packets (package doc of
// Kind). Deliveries are not replies: the hub builds them in the
// transport's hub.Encoding.
//
// # Order
//
// A reply a worker writes (subscribed, unsubscribed, filtersUpdated,
// presence and lobby lists) has its place reserved on the connection, in
// request order, before the request is handed over (hub.Conn.ExpectReply
// returns its hub.Ticket); whatever a Sink writes meanwhile waits behind
// it in the connection's reply queue, so replies come back in request
// order without anyone waiting.
// `published` is written before the publication is handed to the workers,
// so it precedes the publisher's own echo; retained messages follow their
// `subscribed`, on the same worker.
//
// # Concurrency
//
// A Protocol is shared by every connection and safe for concurrent use. A
// State is owned by its connection's reader: Handle and Refuse for one
// connection must not run concurrently (a netpoll OnRequest never does).
// The presence registry is owned by the hub's shared worker.
//
// # Backend calls and their contexts
//
// The calls a reader makes for its connection (auth, reauth, the
// room-access check of a subscribe) run on that reader with a context made
// when the call starts and held, with its cancel function, only while it
// is in flight (calls.go): an idle connection has none. It is cancelled
// when the hub decides to close the connection (hub.Config.OnClosing), when
// the transport reports that the peer hung up (Protocol.Hangup, from
// netpoll's OnDisconnect, which runs beside the reader), and when the
// node's base context ends (Config.Context, Protocol.Stop). A call so
// cancelled is answered nothing and not counted as the backend's failure.
// Revalidations run on the hub's goroutines with the base context; the
// message store is called with it too.
package session
