// Package broker is the fan-out slot between kraken nodes. A node always
// fans a publish out to its own broadcast subscribers itself (the hub); a
// Broker carries accepted publishes to the other nodes and brings theirs in,
// so a cluster is a set of nodes joined by an existing distributed engine
// (NATS, an MQTT broker, Redis), never a protocol of our own.
//
// # What crosses nodes
//
//   - Publications, by interest: a node declares the routing keys and
//     patterns it has local broadcast subscribers for (Interest) and
//     receives only the publications that match them (Handler.HandleMessage).
//   - Load-balanced groups: a node declares the groups it has local members
//     of (GroupInterest); each publication goes to exactly one node among
//     those, cluster-wide, which hands it to one of its local members
//     (Handler.HandleGroupMessage). The publishing node does not pick a local
//     member itself: its own group copy comes through the bus like anyone's.
//   - Retained messages: every node follows every retained publish into its
//     own retained store (Handler.HandleRetained), whether or not it has an
//     interested subscriber at that moment; a backend that can keeps them,
//     so a node that starts later gets the ones set before (natsbroker:
//     JetStream).
//
// Presence, lobby state, connection counts and node liveness are the next
// things to cross (a shared key-value state); until a backend carries them
// they stay per node, as the original kept them.
//
// # Contract
//
// Implementations are safe for concurrent use. Publish, Interest and
// GroupInterest are called on the request path and on hub workers and must
// never block on the network: a backend queues, and reports what it could
// not send through its own logs and counters. Handler methods are called on
// the backend's goroutines and return at once.
//
// The in-process default, local.Broker, is a single node: nothing leaves the
// process. membus joins several nodes of one process (tests, the conformance
// suite brokertest); natsbroker joins nodes over NATS.
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
	// Node is the id of the node that accepted the publish. A backend never
	// hands a node its own message as a broadcast or retained copy; a group
	// copy may come back to the publishing node.
	Node string
}

// Handler receives what other nodes publish. Every method is called from the
// backend's goroutines and must not block: the node hands the message to its
// workers and returns. The message, its Data included, belongs to the node
// from then on.
type Handler interface {
	// HandleMessage delivers a publication to this node's broadcast
	// subscribers of its key.
	HandleMessage(m *Message)
	// HandleGroupMessage delivers a publication to one local member of the
	// group name on key (the group's key or pattern, as GroupInterest
	// declared it).
	HandleGroupMessage(m *Message, name, key string)
	// HandleRetained updates this node's retained store with another node's
	// retained publish (m.Retain is set) without delivering it.
	HandleRetained(m *Message)
}

// Broker is the fan-out slot. See the package doc for the contract.
type Broker interface {
	// Start connects to the bus and delivers other nodes' messages to h
	// until Close. It is called once, before any other method.
	Start(ctx context.Context, h Handler) error
	// Publish hands a message accepted on this node to the other nodes
	// (and, for groups, to whichever node the bus picks). m and its Data
	// must not be modified afterwards. An error means the message could not
	// even be queued; the local subscribers have it regardless.
	Publish(m *Message) error
	// Interest counts this node's broadcast subscriptions to key: delta +1
	// when a hub worker gains its first subscription to it, -1 when it loses
	// its last. wildcard says key is an MQTT-style pattern (+, trailing #).
	// The backend reference-counts and receives key's publications while the
	// count is above zero.
	Interest(key string, wildcard bool, delta int)
	// GroupInterest counts this node's local members of the load-balanced
	// group name on key, as Interest does for broadcast subscriptions.
	GroupInterest(name, key string, wildcard bool, delta int)
	// Close disconnects and stops delivering.
	Close() error
}
