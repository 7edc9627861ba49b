package server

import "sync"

// orgCounter counts live authenticated connections per organisation for the
// connection limit (protocol.md §4.11, OQ-8, OQ-43). It is touched only at
// auth and close, never on the message path.
type orgCounter struct {
	mu sync.Mutex
	n  map[string]int
}

// reserve takes a slot for org if fewer than max are held (check and take in
// one step, so concurrent auths cannot overshoot).
func (o *orgCounter) reserve(org string, max int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n == nil {
		o.n = make(map[string]int)
	}
	if o.n[org] >= max {
		return false
	}
	o.n[org]++
	return true
}

func (o *orgCounter) release(org string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n[org] <= 1 {
		delete(o.n, org)
		return
	}
	o.n[org]--
}
