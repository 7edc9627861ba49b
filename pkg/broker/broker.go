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
//
//   - Load-balanced groups: a node declares the groups it has local members
//     of (GroupInterest); each publication goes to exactly one node among
//     those, cluster-wide, which hands it to one of its local members
//     (Handler.HandleGroupMessage). The publishing node does not pick a local
//     member itself: its own group copy comes through the bus like anyone's.
//
//   - Retained messages: every node follows every retained publish into its
//     own retained store (Handler.HandleRetained), whether or not it has an
//     interested subscriber at that moment; a backend that can keeps them,
//     so a node that starts later gets the ones set before (natsbroker:
//     JetStream).
//
//   - Shared state: every node shares its local connections' room presence
//     (SetPresence, ClearPresence) and its count of live connections per
//     organisation (SetConnections), and is told the others' (HandlePresence,
//     HandlePresenceGone, HandleConnections). Lobby state is room presence,
//     so lobby watchers on any node see every node's members.
//
//   - Node liveness: when a node stops, gracefully or without a goodbye
//     (killed, partitioned past the backend's liveness timeout), the others
//     are told once (HandleNodeDown) and forget its presence and counts;
//     each then emits the leaves of that node's members to its own members
//     and lobby watchers. A node that comes back shares its state again.
//
// Shared state is eventually consistent: a change reaches the other nodes
// within the bus's latency (about a millisecond on a healthy NATS cluster),
// so the connection limit of an organisation is enforced within that slack:
// the connections admitted on different nodes within one propagation delay
// of each other can together exceed it, and while a node is cut off from
// the bus it admits against the counts it last saw.
//
// # Contract
//
// Implementations are safe for concurrent use. Publish, Interest,
// GroupInterest, SetPresence, ClearPresence and SetConnections are called on
// the request path and on hub workers and must never block on the network: a backend queues, and reports what it could
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
// (wire-reference.md §3.2), and nothing that depends on a connection.
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
	// AtMostOnce and ExactlyOnce carry the publish's QoS
	// (hub.Publication.AtMostOnce, ExactlyOnce): QoS 0 and QoS 2; neither
	// is QoS 1. A message without them, as from a node that does not carry
	// them, is delivered at most at QoS 1.
	AtMostOnce, ExactlyOnce bool
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
	// HandlePresence records another node's connection joining a room or
	// changing its presence there (wire-reference.md §7.1). A Presence with the
	// same Node and ID replaces the previous one, in whichever room.
	HandlePresence(p *Presence)
	// HandlePresenceGone records that another node's connection id left its
	// room (or closed).
	HandlePresenceGone(node, id string)
	// HandleConnections records that node holds n live connections of the
	// organisation org (0: none).
	HandleConnections(node, org string, n int)
	// HandleNodeDown is called once each time node is judged stopped
	// (closed, or silent past the backend's liveness timeout): every
	// presence and connection count of that node is to be forgotten; no
	// HandlePresenceGone follows for them. A node judged down that comes
	// back is seen through new HandlePresence and HandleConnections calls.
	HandleNodeDown(node string)
}

// Presence is one connection's presence in a room as nodes share it
// (wire-reference.md §7.1, §7.3). Data belongs to the receiver.
type Presence struct {
	// Node is the node that holds the connection and ID the connection's
	// id on that node; together they name the member cluster-wide.
	Node, ID string
	// RoomID is the room's internal id (the key the registry uses) and
	// RoomSlug the slug its clients used.
	RoomID, RoomSlug string
	// ActorTokenID is the member's actor.
	ActorTokenID string
	// Data is the raw MessagePack presence value the client sent.
	Data []byte
	// JoinedAt is when the connection joined the room, in unix seconds.
	JoinedAt int64
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
	// SetPresence shares the presence of a local connection (p.Node is this
	// node): a join, an update, or a move to another room. p and its Data
	// must not be modified afterwards. Calls for one id are made in order
	// (the caller serialises them) and the last one wins.
	SetPresence(p *Presence)
	// ClearPresence withdraws the shared presence of local connection id
	// (it left its room or closed). Clearing an id never set is a no-op.
	ClearPresence(id string)
	// SetConnections shares how many live connections of organisation org
	// this node holds; 0 withdraws the count. Calls for one org are made in
	// order (the caller serialises them) and the last one wins.
	SetConnections(org string, n int)
	// Close withdraws this node's shared state (the others get
	// HandleNodeDown), disconnects and stops delivering.
	Close() error
}

// InterestWaiter is a Broker that can tell when this node's interest in a
// key has reached the bus, so that a subscription is confirmed only once
// publications from other nodes will reach it (docs/cluster.md: `subscribed`
// means subscribed cluster-wide). The hub calls InterestReady on a worker
// right after Interest or GroupInterest gave it its first reference to the
// key (group "" for a broadcast subscription, else the group's name) and
// writes the subscription's reply and retained messages once done has
// been called. done is called exactly once, from any goroutine, possibly
// before InterestReady returns; also when the bus cannot be reached
// (within a bounded wait), so that no reply waits for ever.
type InterestWaiter interface {
	InterestReady(group, key string, wildcard bool, done func())
}

// StateReporter is a Broker whose shared state (presence, connection
// counts, node liveness) is kept in a store of the backend that can fail
// while the bus itself stays connected: natsbroker's JetStream key-value
// bucket, offline while the servers holding it are down. StateReady
// returns nil while this node's writes to that state and its watch of it
// succeed, and otherwise an error saying what fails, for how long and why;
// meanwhile this node's presence and counts do not reach the other nodes,
// or theirs do not reach it. It is called on every readiness check and
// scrape (the server's /ready names it `cluster_state`), so it must be
// quick and never wait on the network.
type StateReporter interface {
	StateReady() error
}

// Operator is a Broker that carries the admin API's requests (pkg/admin)
// to the other nodes of the cluster and brings their answers back, so an
// operator's list or action on one node covers them all. The requests and
// answers are opaque bytes to the broker.
type Operator interface {
	// Peers returns the ids of the other nodes judged live now, sorted.
	Peers() []string
	// Down returns the other nodes judged down lately (stopped, or silent
	// past the backend's liveness timeout) and not back since, with when:
	// an answer that leaves them out names them, so its totals are not
	// taken for the whole cluster's.
	Down() map[string]time.Time
	// Ask sends req to every other node and returns their answers as they
	// came, until each node of Peers at the call has answered or ctx
	// ends. A node that did not answer is missing from the result; an
	// error means req could not be sent at all.
	Ask(ctx context.Context, req []byte) ([]Answer, error)
	// Answer installs h as this node's answerer of the other nodes'
	// requests; h gets a context bounded by the asker's wait. Until it is
	// called, requests are left unanswered.
	Answer(h func(ctx context.Context, req []byte) []byte)
}

// Answer is one node's answer to Operator.Ask.
type Answer struct {
	Node string
	Data []byte
}
