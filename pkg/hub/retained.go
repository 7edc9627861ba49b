package hub

import "github.com/NoLagApp/kraken/pkg/topic"

// retainedEntry is the last retained message of one exact topic (routing key
// plus filter, protocol.md §6.7).
type retainedEntry struct {
	pub     *Publication
	expires int64 // unix ns
}

// retainedStore is a worker's copy of the retained messages. Each worker
// updates its copy while it fans the publication out, so a subscription made
// on that worker sees either the live message or the retained one, never
// both and never neither. Entries point at the shared Publication, so a copy
// costs one map entry. Owned by the worker; no locks.
type retainedStore struct {
	m   map[string]retainedEntry
	max int
}

func retainedKey(key, filter string) string {
	if filter == "" {
		return key
	}
	return key + "\x00" + filter
}

// update stores p, or clears its topic when p carries nil data (OQ-15).
func (rs *retainedStore) update(p *Publication, now, ttl int64) {
	k := retainedKey(p.Key, p.Filter)
	if p.ClearRetained {
		delete(rs.m, k)
		return
	}
	if rs.m == nil {
		rs.m = make(map[string]retainedEntry)
	}
	if _, ok := rs.m[k]; !ok && len(rs.m) >= rs.max {
		rs.evictOne(now)
	}
	rs.m[k] = retainedEntry{pub: p, expires: now + ttl}
}

// evictOne drops an expired entry if there is one, else an arbitrary one.
func (rs *retainedStore) evictOne(now int64) {
	for k, e := range rs.m {
		if e.expires <= now {
			delete(rs.m, k)
			return
		}
	}
	for k := range rs.m {
		delete(rs.m, k)
		return
	}
}

// sweep removes expired entries so they really leave memory.
func (rs *retainedStore) sweep(now int64) {
	for k, e := range rs.m {
		if e.expires <= now {
			delete(rs.m, k)
		}
	}
	if len(rs.m) == 0 {
		rs.m = nil
	}
}

// match calls fn for every live retained publication that a subscription
// with this key and filters would have received.
func (rs *retainedStore) match(key string, wildcard bool, filters []string, now int64, fn func(*Publication)) {
	if len(rs.m) == 0 {
		return
	}
	if !wildcard && filters != nil {
		for _, f := range filters {
			if e, ok := rs.m[retainedKey(key, f)]; ok && e.expires > now {
				fn(e.pub)
			}
		}
		return
	}
	for _, e := range rs.m {
		p := e.pub
		if e.expires <= now || !acceptsFilter(filters, p.Filter) {
			continue
		}
		if (!wildcard && p.Key == key) || (wildcard && topic.Match(key, p.Key)) {
			fn(p)
		}
	}
}

// sendRetained writes the retained messages matching a new subscription of c,
// right after its `subscribed` reply (protocol.md §3.2, OQ-58).
func (w *worker) sendRetained(c *Conn, display, key string, wildcard bool, filters []string) {
	w.retained.match(key, wildcard, filters, w.now(), func(p *Publication) {
		if !p.Echo && p.Origin == c {
			return
		}
		w.write(c, w.frames.get(p, display, wildcard))
	})
}
