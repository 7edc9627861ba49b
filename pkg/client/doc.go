// Package client is a Go client for kraken: it connects to the broker's
// WebSocket endpoint (ws://host:8080/ws), authenticates with an access
// token, and publishes and subscribes to topics in MessagePack frames, as
// described in wire-reference.md (docs/). It negotiates protocol version 2.
//
//	c := client.New("dev-token-bob", client.Options{URL: "ws://localhost:8080/ws"})
//	if err := c.Connect(ctx); err != nil {
//		// a *client.Error such as client.ErrAccessDenied, or a network error
//	}
//	defer c.Close()
//	err := c.Subscribe(ctx, "demo/general/messages", func(data client.Data, meta client.Meta) {
//		var msg struct{ Text string `json:"text"` }
//		_ = data.Decode(&msg)
//		fmt.Println(meta.Sender, "says", msg.Text)
//	})
//	err = c.Publish(ctx, "demo/general/messages", map[string]any{"text": "hello"})
//
// # Requests and errors
//
// Subscribe, Unsubscribe, SetFilters and Publish wait for the broker's
// answer (`subscribed`, `unsubscribed`, `filtersUpdated`, `published`), so
// a nil error means the broker accepted the request. A refusal is returned
// as a *Error carrying the broker's code, error string, hint, detail and
// topic (and msgRef for a publish); compare with errors.Is against
// ErrUnknownTopic, ErrAccessDenied, ErrRateLimited and the other sentinels.
// A request whose context has no deadline waits at most
// Options.RequestTimeout (10 s). Emit is the fire-and-forget publish: it
// returns once the frame is written, and a refusal goes to Options.OnError.
//
// A request lost with its connection returns an error that matches
// ErrDisconnected and wraps why the connection ended: a *CloseError with
// the broker's close code and reason when the broker closed it (1009 frame
// too large for a message over its frame limit, 4001 token_revoked, 1012
// when it shuts down). A Connect that fails before the WebSocket is open
// returns a *HandshakeError when the server answered the upgrade with an
// HTTP status and its reason (kraken answers a path other than /ws with
// 404), and a *TLSMismatchError when the URL's scheme and the server
// disagree about TLS (wss:// against a plain port, ws:// against TLS).
//
// Publish data is encoded by Marshal: nil is sent as the MessagePack nil
// (never dropped), a Data is sent verbatim, msgp-generated types encode
// themselves, and other values are encoded as encoding/json would render
// them. Handlers receive the raw MessagePack bytes as a Data, with
// Data.Decode to fill a Go value, and a Meta with the message id, filter,
// sender, timestamp and replay flag.
//
// # Delivery, acks and handlers
//
// Handlers and event callbacks run one at a time on a dedicated handler
// goroutine, in the order the frames arrived. The reader goroutine only
// decodes frames and queues deliveries, and heartbeats are sent by their
// own goroutine, so a slow handler delays other handlers but never blocks
// heartbeats or the answers to requests; handlers may call any method of
// the client. The queue is bounded (Options.HandlerQueueSize): when it is
// full, deliveries are dropped and a *SlowConsumerError is reported.
//
// Messages the broker marks requiresAck are acknowledged after their
// handler returns, in batchAck frames sent every 100 ms or per 100 ids
// (Options.AckInterval, AckBatchSize, DisableAutoAck).
//
// # Reconnects
//
// When the connection is lost, the client reconnects by itself with
// exponential back-off and jitter: 5 s, then ×1.5 per attempt up to 30 s,
// each less a random part of up to 20 % (Options.ReconnectDelay,
// ReconnectMultiplier, MaxReconnectDelay, ReconnectJitter,
// MaxReconnectAttempts). The auth frame of a reconnect carries
// reconnect:true. Once authenticated, the client subscribes again to every
// topic with the options it was subscribed with (QoS, load-balance group,
// the current filters), re-subscribes its lobbies and sends its presence
// again, and then runs OnConnect. A token the broker refuses
// (access_denied) stops the reconnecting. Messages published while the
// client was disconnected are not delivered: by default kraken keeps no
// backlog.
//
// A broker with resumable sessions (kraken with RESUME_SESSIONS=true, or a
// token with persistentSession; docs/protocol.md "Resumable sessions") keeps
// a dropped connection's session, keyed by the actor and Options.ClientID
// (sent as `clientId` in every auth frame), for its expiry (120 s by
// default). The reconnect's auth (reconnect:true) then gets the session's
// subscriptions back in Info.RestoredSubscriptions and, before anything
// else, the messages its QoS ≥ 1 subscriptions (not load-balanced) missed:
// replayStart, each missed message with its original msgId and
// Meta.IsReplay set, then replayEnd. The client hands the replayed messages
// to their topics' handlers like any message, in order and before the live
// ones (the broker holds the live ones until the replay is out and never
// repeats a replayed msgId), and reports the replayEnd to Options.OnReplay
// as a ReplayInfo: Replayed and Count, and Complete false with a Reason
// (ReplaySessionExpired, ReplaySessionTakenOver, ReplayBacklogLimit) when
// the gap is not covered. Its re-subscriptions to restored topics are
// answered `subscribed` and change nothing else on kraken: one
// subscription, no second replay, no retained message again. Replayed
// messages carry requiresAck and are acknowledged like the others, so a
// message acked is not replayed again by a later resume. One the client
// handled but whose ack had not reached the broker when the connection
// went is replayed (at-least-once); the client knows it by topic and msgId
// among the latest 512 it handled, acks it again and does not hand it to
// the handler twice (ReplayInfo.Duplicates counts it). A first Connect
// (no reconnect:true) starts afresh: the broker drops a session kept for
// the identity. Without ClientID an actor has one resumable session, held
// by its first live connection.
//
// The callbacks OnConnect, OnDisconnect, OnReconnecting and OnError report
// these events; OnHydration receives the answers of an app's hydration
// webhook that the broker sends after a subscribe. A heartbeat (an empty binary frame) is sent every 30 s
// (Options.HeartbeatInterval), which also keeps the broker's 60 s idle
// timeout away.
//
// # Presence and lobbies
//
// SetPresence, GetPresence, SubscribeLobby, UnsubscribeLobby,
// GetLobbyPresence and the OnPresence and OnLobbyPresence callbacks speak
// the frames of wire-reference.md §7 (docs/presence.md describes kraken's
// behaviour). They need a broker that implements presence and lobbies, as
// kraken does; against one that does not, GetPresence and the lobby
// requests fail when their timeout expires (the error says so) and no
// presence event arrives. Presence lives in the broker's memory, so the
// client sets its presence and re-subscribes its lobbies after every
// reconnect.
//
// # Concurrency and shutdown
//
// A Client is safe for concurrent use. Close stops every goroutine the
// client started (the reader, the heartbeat and ack sender, the reconnect
// loop and the handler goroutine) before it returns, except a handler
// running at that moment, which finishes on its own.
package client
