// Package broker is the fan-out slot between kraken nodes. A node always
// fans a publish out to its own connections itself (the hub); a Broker
// carries accepted publishes to the other nodes and brings theirs in, so a
// cluster is a set of nodes joined by an existing distributed engine (NATS,
// an MQTT broker, Redis), never a protocol of our own.
//
// The in-process default, local.Broker, is a single node: it has no other
// nodes to talk to. A backend for a real bus implements Broker in its own
// package (natsbroker, mqttbroker) and is chosen by BROKER_BACKEND.
package broker

import (
	"context"
	"time"
)

// Message is one accepted publish as it travels between nodes: everything a
// node needs to build the `message` frames for its own subscribers
// (protocol.md §3.2), and nothing that depends on a connection.
type Message struct {
	// Key is the routing key (acl.Resolution.Key) and Topic the topic as
	// the publisher sent it.
	Key, Topic string
	// Filter is the normalised publish filter, "" for none (§6.9).
	Filter string
	// Data is the raw MessagePack of `data` (D-4).
	Data []byte
	// MsgID, From, FromType and Timestamp are copied into every frame.
	MsgID, From, FromType string
	Timestamp             time.Time
	// Retain and ClearRetained carry `retain` (§6.7, OQ-15).
	Retain, ClearRetained bool
	// Node is the id of the node that accepted the publish; a backend never
	// hands a node its own messages back.
	Node string
}

// Handler receives the messages published on other nodes. HandleMessage is
// called from the backend's goroutines and must not block: the node hands
// the message to its workers and returns. The message, its Data included,
// belongs to the node from then on.
type Handler interface {
	HandleMessage(m *Message)
}

// Broker is the fan-out slot. Implementations are safe for concurrent use.
type Broker interface {
	// Start connects to the bus and delivers other nodes' messages to h
	// until Close. It is called once, before any Publish.
	Start(ctx context.Context, h Handler) error
	// Publish hands a message accepted on this node to the other nodes. It
	// must not block on the network: a backend queues and reports failures
	// through its own logs and metrics, since the local subscribers already
	// have the message. m and its Data must not be modified afterwards.
	Publish(m *Message) error
	// Close disconnects and stops delivering.
	Close() error
}
