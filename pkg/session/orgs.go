package session

import "sync"

// orgCounter counts live authenticated connections per organisation for the
// connection limit (wire-reference.md §4.11, OQ-8, OQ-43). It is touched only at
// auth and close, never on the message path.
//
// In a cluster the limit is cluster-wide: the counter also holds the other
// nodes' counts (broker.Handler.HandleConnections) and shares its own
// through share after every change. The counts are eventually consistent:
// nodes admitting connections of one organisation within the bus latency
// of each other can together exceed the limit by at most one per node
// (docs/cluster.md).
type orgCounter struct {
	mu     sync.Mutex
	n      map[string]int            // this node's count by org
	remote map[string]map[string]int // org -> node -> that node's count
	// share tells the other nodes this node's new count of org; nil on a
	// single node. It is called with mu held (so counts of one org are
	// shared in order) and must not block.
	share func(org string, n int)
}

// reserve takes a slot for org if fewer than max are held on every node
// together (check and take in one step, so concurrent auths on this node
// cannot overshoot).
func (o *orgCounter) reserve(org string, max int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = make(map[string]int)
	}
	total := o.n[org]
	for _, c := range o.remote[org] {
		total += c
	}
	if total >= max {
		return false
	}
	o.n[org]++
	o.shareLocked(org)
	return true
}

func (o *orgCounter) release(org string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n[org] <= 1 {
		delete(o.n, org)
	} else {
		o.n[org]--
	}
	o.shareLocked(org)
}

func (o *orgCounter) shareLocked(org string) {
	if o.share != nil {
		o.share(org, o.n[org])
	}
}

// setRemote records node's count of org (0: none).
func (o *orgCounter) setRemote(node, org string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n <= 0 {
		if byNode := o.remote[org]; byNode != nil {
			delete(byNode, node)
			if len(byNode) == 0 {
				delete(o.remote, org)
			}
		}
		return
	}
	if o.remote == nil {
		o.remote = make(map[string]map[string]int)
	}
	byNode := o.remote[org]
	if byNode == nil {
		byNode = make(map[string]int)
		o.remote[org] = byNode
	}
	byNode[node] = n
}

// dropNode forgets every count of node (it stopped).
func (o *orgCounter) dropNode(node string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for org, byNode := range o.remote {
		delete(byNode, node)
		if len(byNode) == 0 {
			delete(o.remote, org)
		}
	}
}

// total is org's connection count on every node together.
func (o *orgCounter) total(org string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.n[org]
	for _, c := range o.remote[org] {
		n += c
	}
	return n
}

// Connections returns the authenticated connections of org that count
// toward its limit, on this node and, in a cluster, on the others as last
// shared (wire-reference.md §4.11).
func (p *Protocol) Connections(org string) int { return p.orgs.total(org) }
