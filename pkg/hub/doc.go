// Package hub is the fixed worker pool that owns the broker's subscription
// tables and writes every outbound frame.
//
// # Ownership
//
// Each connection (Conn) belongs to one worker, chosen when it registers. That
// worker alone reads and changes the connection's subscriptions and the
// worker's routing tables (an exact-key map and a wildcard topic.Trie), so the
// tables need no lock: they are single-owner data, like nats-server's stree.
// Other goroutines reach a worker only through its inbox, a mutex-guarded
// queue drained in batches.
//
// A publish is handed to the inboxes of the workers with interest in its key
// (interest.go; every worker for a retained message). Each worker matches
// it against its own tables and appends the message frame, built once by
// the publisher, to each matching connection's outbound queue. Frames are
// shared read-only; a delivery copies nothing. A load-balanced group's
// worker hands a delivery to a member on another worker through that
// worker's inbox: held deliveries and the tap are the connection's
// worker's alone.
//
// # Writes
//
// Each Conn has an outbound queue of frame references guarded by a small
// per-connection mutex, so the owning worker, a load-balancing group's
// worker, the shared worker and the connection's reader can all write to
// it. Replies keep request order through the connection's reply queue
// (replies.go): the reader reserves each reply a worker owes (ExpectReply,
// a Ticket) before handing the request over. Writers flush with writev on
// the socket directly, never blocking: bytes the kernel does not take stay
// queued and the owning worker's retry timer tries again, backing off. A
// connection whose queue exceeds Config.OutboundMaxBytes, or whose socket
// takes nothing for Config.WriteTimeout, is a slow consumer: it is closed
// with 1008 and counted, and nobody waits for it.
//
// # Time
//
// There is no goroutine and no timer per connection. Each worker has one
// ticker; on each tick it sweeps its connections for the handshake deadline,
// the auth deadline, the token's expiry (Session.ExpiresAt), the idle
// timeout and due token revalidations. Its one
// retry timer serves all its connections with full sockets.
//
// Lock order: Conn.wmu before inbox.mu. Nothing is called with inbox.mu held.
package hub
