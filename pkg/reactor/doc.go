// Package reactor is the read side of kraken's transports: a
// cloudwego/netpoll event loop (the patched copy in third_party/netpoll)
// per listener, and the one read loop that serves the WebSocket transport
// (pkg/server) and the MQTT one (pkg/mqtt/listener). A transport supplies
// a Handler (its connection state, and Process, which parses and handles
// complete frames) and embeds a Stream in its connection state; the
// reactor does everything else a socket needs: accept, flow control, the
// partial-frame buffer, liveness, discarding input once closing, the flush
// of replies, and shutdown.
//
// # Callbacks
//
//	| netpoll callback | Loop                      | what happens                                          |
//	|------------------|---------------------------|-------------------------------------------------------|
//	| OnPrepare        | onPrepare                 | Handler.Open: state, hub.Register                     |
//	| OnRequest        | onRequest → read          | bytes handed to Handler.Process (below)               |
//	| OnClose          | onClose → closed          | hub.Hub.Closed: writes stop before the fd is released |
//
// OnClose is one handler per event loop (netpoll.WithOnClose), not a close
// callback per connection: netpoll passes it the connection's context, the
// state onPrepare returned, after the connection's own close callbacks (a
// TLS connection's: its handshake goroutine lets go first) and before the
// descriptor is released. A connection accepted while draining
// (Loop.Drain, Loop.Shutdown) is closed in OnPrepare and gets no state
// (OnClose skips it); its input is discarded.
//
// # Reading without pinning goroutines
//
// netpoll runs OnRequest on a pooled goroutine when bytes arrive, never two
// at once for one connection, so a Stream needs no lock. A read never waits
// for more bytes (netpoll's blocking Next is not used on an incomplete
// frame): it hands everything buffered, up to 256 KiB, to Process, which
// handles every complete frame in place (zero-copy in netpoll's buffer),
// and keeps only the tail of a half-received frame, copied into the
// Stream's partial buffer and let go of once that frame completes. An idle
// connection holds no buffer of the reactor's. Per read, in order:
//
//   - discard: a connection closing (Stream.CloseNow, or hub.Conn.Closing
//     for a close a worker decided) has its input dropped unread;
//   - PROXY protocol (Config.ProxyProtocol, proxy.go): until the
//     connection's header is complete it is taken (kept in the partial
//     buffer while incomplete) and nothing reaches Process; then the
//     socket's RemoteAddr becomes the client's and the Handler is told
//     (Readdresser); bytes that are not a header close the connection
//     without an answer;
//   - bound: more than Config.MaxInputBacklog unprocessed bytes (netpoll's
//     and the partial frame) close it with 1008 input_overflow, through
//     the transport's Conn.Disconnect, unless the hub is behind
//     (hub.Hub.HoldInput pauses its socket instead) or it is working
//     through what came in at once when its paused socket was resumed
//     (hub.Conn.InputHeld, up to 4 × the bound);
//   - process: Handler.Process; a complete frame moves the idle deadline
//     (hub.Conn.Touch);
//   - frame timing: a frame or message still in progress is timed from its
//     first byte (hub.Conn.SetFrameStart), except in the handshake;
//   - the tail is kept, sized by the frame's declared length
//     (Stream.SetNeed) but never reserved before its bytes arrive;
//   - the replies queued (Stream.Queue) are flushed once;
//   - flow control: while the hub is behind the socket is paused
//     (hub.Hub.HoldInput); once everything that came in since a resume is
//     worked through, hub.Conn.InputDrained.
//
// No goroutine and no timer is started per connection: the hub's sweep
// enforces the deadlines from the atomics the read stores.
package reactor
