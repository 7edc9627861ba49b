// Package listener is kraken's MQTT 3.1.1 transport (protocol.md §8,
// protocol-decisions.md OQ-27 and section F): a netpoll listener whose
// connections are served by the same session protocol, hub, grants, limits
// and retained store as the WebSocket listener (pkg/server), so an MQTT
// device and an SDK client meet on the same topics.
//
// Per connection there is one small state struct (conn) that embeds
// session.State and is the connection's hub.Transport (writev straight to
// the descriptor, as pkg/server does) and session.Sink. The reader parses
// with the strict codec of pkg/mqtt/packet as bytes arrive, never waiting
// for more and copying only a half-received tail, and maps packets to
// session commands: CONNECT to `auth`, PUBLISH to `publish`, each filter of
// SUBSCRIBE and UNSUBSCRIBE to `subscribe` and `unsubscribe`. Replies come
// back as Reply kinds and become CONNACK, PUBACK, SUBACK and UNSUBACK; the
// hub builds deliveries in Encoding (ID 1), a QoS 0 PUBLISH built once per
// publication and topic.
//
// There is no goroutine or timer per connection: the hub's sweep closes a
// connection without CONNECT at its auth deadline, and one silent for 1.5 ×
// its keep-alive through hub.Conn.SetIdleTimeout.
//
// What is not supported (docs/mqtt.md): outbound QoS 1 and 2 (deliveries
// are QoS 0, so SUBACK grants QoS 0), persistent sessions (every session is
// clean), will messages, TLS.
package listener
