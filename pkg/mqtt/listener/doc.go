// Package listener is kraken's MQTT 3.1.1 transport (wire-reference.md §8,
// decisions.md OQ-27 and section F): a listener on the reactor
// (pkg/reactor, the event loop and read loop the WebSocket listener runs
// on too) whose connections are served by the same session protocol, hub,
// grants, limits and retained store as the WebSocket listener
// (pkg/server), so an MQTT device and an SDK client meet on the same
// topics.
//
// Per connection there is one small state struct (conn) that embeds
// session.State and a reactor.Stream, and is the connection's
// hub.Transport (writev straight to the descriptor) and session.Sink. The
// reactor reads it; the listener's reactor.Handler parses with the strict
// codec of pkg/mqtt/packet what has arrived, never waiting for more (the
// reactor keeps a half-received tail), and maps packets to
// session commands: CONNECT to `auth`, PUBLISH to `publish`, each filter of
// SUBSCRIBE and UNSUBSCRIBE to `subscribe` and `unsubscribe`. Replies come
// back as Reply kinds and become CONNACK, PUBACK, PUBREC, SUBACK and
// UNSUBACK; the hub builds deliveries in Encoding (ID 1): a QoS 0 PUBLISH
// built once per publication and topic, or for a QoS 1 or 2 subscription
// (hub.QoS1Encoding) the head and payload of a QoS 1 PUBLISH, built once,
// which the connection's in-flight window (hub.Acker, inflight.go) sends
// on the worker with a Packet Identifier of its own between them (and the
// QoS bits of 2 in a copy of the head), or keeps in its queue until an
// acknowledgement frees a slot. Inbound QoS 2 is exactly once: the
// identifiers between PUBLISH and PUBREL are remembered on the reader.
//
// There is no goroutine or timer per connection: the hub's sweep closes a
// connection without CONNECT at its auth deadline, and one silent for 1.5 ×
// its keep-alive through hub.Conn.SetIdleTimeout.
//
// A connection's will is published from the reactor's close handler
// (netpoll's OnClose, reactor.Closer; will.go); a client identifier
// belongs to one connection per actor, a new CONNECT taking it over
// (clients.go); a Clean Session 0 connection's session outlives it on a
// parked hub connection (sessions.go) and, with the node's session store
// (STORE_BACKEND=jetstream), in the store, from which any node, this one
// after a restart included, resumes it (stored.go).
//
// MQTT over WebSocket (websocket.go) is the same code on connections the
// WebSocket server (pkg/server) accepts on /mqtt and hands over after the
// upgrade (Listener.WebSocket, hub.Hub.Rebind): their packets come in the
// server's binary messages and go out each in one binary frame
// (WebSocketEncoding, ID 2).
//
// What is not supported (docs/mqtt.md): MQTT 5, and, without the session
// store, sessions that survive a restart or move between nodes.
package listener
