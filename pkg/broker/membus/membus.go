// Package membus joins several kraken nodes of one process on an in-memory
// bus: a broker.Broker per node, all attached to one Bus. It keeps the
// contract of package broker exactly (interest, groups once cluster-wide,
// retained copies to every node), so tests and the brokertest conformance
// suite can run a cluster without a network.
//
// A Bus and its nodes are safe for concurrent use. Deliveries are made on
// the publishing goroutine; Handler methods must not block, as the broker
// contract requires.
package membus

import (
	"context"
	"errors"
	"sync"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/topic"
)

// ErrClosed is returned by Publish on a closed node.
var ErrClosed = errors.New("membus: closed")

// Bus is the shared medium. Its zero value is ready to use.
type Bus struct {
	mu    sync.Mutex
	nodes []*Node
	next  map[string]int // round-robin cursor per group (name, key)
	sent  int            // deliveries made to nodes, for tests
}

// Node is one node's broker.Broker on a Bus.
type Node struct {
	bus    *Bus
	id     string
	h      broker.Handler
	closed bool
	// Guarded by bus.mu.
	interest map[pattern]int
	groups   map[groupKey]int
	presence map[string]*broker.Presence // shared presence by connection id
	conns    map[string]int              // shared connection count by org
}

type pattern struct {
	key      string
	wildcard bool
}

type groupKey struct {
	name string
	pattern
}

// Node returns a new node with id (the broker.Message.Node of what it
// publishes) on the bus; it joins the bus on Start.
func (b *Bus) Node(id string) *Node {
	return &Node{bus: b, id: id, interest: map[pattern]int{}, groups: map[groupKey]int{},
		presence: map[string]*broker.Presence{}, conns: map[string]int{}}
}

// Deliveries returns how many node deliveries the bus has made: one per
// interested node per publication, one per group, one per node per retained
// copy.
func (b *Bus) Deliveries() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sent
}

// Start implements broker.Broker. The node is told the shared state of
// the nodes already on the bus before Start returns.
func (n *Node) Start(_ context.Context, h broker.Handler) error {
	n.bus.mu.Lock()
	n.h = h
	var state []func()
	for _, o := range n.bus.nodes {
		if o.closed {
			continue
		}
		for _, p := range o.presence {
			cp := copyPresence(p)
			state = append(state, func() { h.HandlePresence(cp) })
		}
		for org, c := range o.conns {
			state = append(state, func() { h.HandleConnections(o.id, org, c) })
		}
	}
	n.bus.nodes = append(n.bus.nodes, n)
	n.bus.mu.Unlock()
	for _, f := range state {
		f()
	}
	return nil
}

// SetPresence implements broker.Broker.
func (n *Node) SetPresence(p *broker.Presence) {
	n.share(func() { n.presence[p.ID] = p }, func(h broker.Handler) { h.HandlePresence(copyPresence(p)) })
}

// ClearPresence implements broker.Broker.
func (n *Node) ClearPresence(id string) {
	var had bool
	n.share(func() { _, had = n.presence[id]; delete(n.presence, id) }, func(h broker.Handler) {
		if had {
			h.HandlePresenceGone(n.id, id)
		}
	})
}

// SetConnections implements broker.Broker.
func (n *Node) SetConnections(org string, c int) {
	n.share(func() {
		if c > 0 {
			n.conns[org] = c
		} else {
			delete(n.conns, org)
		}
	}, func(h broker.Handler) { h.HandleConnections(n.id, org, c) })
}

// share applies change to n's state under the bus lock, then calls tell
// for every other open node's handler, outside it.
func (n *Node) share(change func(), tell func(broker.Handler)) {
	n.bus.mu.Lock()
	if n.closed || n.h == nil {
		n.bus.mu.Unlock()
		return
	}
	change()
	others := n.others()
	n.bus.mu.Unlock()
	for _, h := range others {
		tell(h)
	}
}

// others returns the handlers of the other open nodes; bus.mu is held.
func (n *Node) others() []broker.Handler {
	var out []broker.Handler
	for _, o := range n.bus.nodes {
		if o != n && !o.closed {
			out = append(out, o.h)
		}
	}
	return out
}

func copyPresence(p *broker.Presence) *broker.Presence {
	cp := *p
	cp.Data = append([]byte(nil), p.Data...)
	return &cp
}

// Interest implements broker.Broker.
func (n *Node) Interest(key string, wildcard bool, delta int) {
	n.bus.mu.Lock()
	defer n.bus.mu.Unlock()
	p := pattern{key, wildcard}
	if n.interest[p] += delta; n.interest[p] <= 0 {
		delete(n.interest, p)
	}
}

// GroupInterest implements broker.Broker.
func (n *Node) GroupInterest(name, key string, wildcard bool, delta int) {
	n.bus.mu.Lock()
	defer n.bus.mu.Unlock()
	g := groupKey{name, pattern{key, wildcard}}
	if n.groups[g] += delta; n.groups[g] <= 0 {
		delete(n.groups, g)
	}
}

// Publish implements broker.Broker: a copy to every other node with
// interest in m.Key, one to one node per group matching it (round-robin
// over the nodes with members), and, for a retained publish, a retained copy
// to every other node.
func (n *Node) Publish(m *broker.Message) error {
	type delivery struct {
		to        *Node
		kind      int // 0 message, 1 group, 2 retained
		name, key string
	}
	var out []delivery
	b := n.bus
	b.mu.Lock()
	if n.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	groups := map[groupKey][]*Node{}
	for _, o := range b.nodes {
		if o.closed {
			continue
		}
		if o != n {
			for p := range o.interest {
				if matches(p, m.Key) {
					out = append(out, delivery{to: o})
					break
				}
			}
			if m.Retain {
				out = append(out, delivery{to: o, kind: 2})
			}
		}
		for g := range o.groups {
			if matches(g.pattern, m.Key) {
				groups[g] = append(groups[g], o)
			}
		}
	}
	if b.next == nil {
		b.next = map[string]int{}
	}
	for g, nodes := range groups {
		id := g.name + "\x00" + g.key
		pick := nodes[b.next[id]%len(nodes)]
		b.next[id]++
		out = append(out, delivery{to: pick, kind: 1, name: g.name, key: g.key})
	}
	b.sent += len(out)
	b.mu.Unlock()
	for _, d := range out {
		cp := *m
		cp.Data = append([]byte(nil), m.Data...)
		switch d.kind {
		case 0:
			d.to.h.HandleMessage(&cp)
		case 1:
			d.to.h.HandleGroupMessage(&cp, d.name, d.key)
		case 2:
			d.to.h.HandleRetained(&cp)
		}
	}
	return nil
}

// Close implements broker.Broker: the node leaves the bus and the others
// are told HandleNodeDown. An in-memory bus has no liveness timeout, so a
// node that stops without a goodbye and one that closes look the same.
func (n *Node) Close() error {
	n.bus.mu.Lock()
	if n.closed {
		n.bus.mu.Unlock()
		return nil
	}
	n.closed = true
	var others []broker.Handler
	if n.h != nil {
		others = n.others()
	}
	n.bus.mu.Unlock()
	for _, h := range others {
		h.HandleNodeDown(n.id)
	}
	return nil
}

func matches(p pattern, key string) bool {
	if p.wildcard {
		return topic.Match(p.key, key)
	}
	return p.key == key
}

var _ broker.Broker = (*Node)(nil)
