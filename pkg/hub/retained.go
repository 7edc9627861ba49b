package hub

import "github.com/NoLagApp/kraken/pkg/topic"

// retainedEntry is the last retained message of one exact topic (routing key
// plus filter, wire-reference.md §6.7).
type retainedEntry struct {
	pub     *Publication
	expires int64 // unix ns
}

// retainedStore is a worker's copy of the retained messages, indexed by
// routing key and then by filter, so a subscription to an exact topic looks
// up its own entries and only a wildcard subscription scans the keys. Each
// worker updates its copy while it fans the retained publication out, so a
// subscription made on that worker sees either the live message or the
// retained one, never both and never neither. Entries point at the shared
// Publication, so a copy costs one map entry. Owned by the worker; no locks.
type retainedStore struct {
	m   map[string]map[string]retainedEntry // key -> filter -> entry
	n   int                                 // entries
	max int
}

// update stores p, or clears its topic when p carries nil data (OQ-15).
func (rs *retainedStore) update(p *Publication, now, ttl int64) {
	byFilter := rs.m[p.Key]
	if p.ClearRetained {
		if _, ok := byFilter[p.Filter]; ok {
			rs.delete(p.Key, p.Filter)
		}
		return
	}
	if _, ok := byFilter[p.Filter]; !ok {
		if rs.n >= rs.max {
			rs.evictOne(now)
		}
		if rs.m == nil {
			rs.m = make(map[string]map[string]retainedEntry)
		}
		if byFilter = rs.m[p.Key]; byFilter == nil {
			byFilter = make(map[string]retainedEntry, 1)
			rs.m[p.Key] = byFilter
		}
		rs.n++
	}
	byFilter[p.Filter] = retainedEntry{pub: p, expires: now + ttl}
}

func (rs *retainedStore) delete(key, filter string) {
	byFilter := rs.m[key]
	delete(byFilter, filter)
	rs.n--
	if len(byFilter) == 0 {
		delete(rs.m, key)
	}
}

// evictOne drops an expired entry if it finds one, else an arbitrary one.
func (rs *retainedStore) evictOne(now int64) {
	var anyKey, anyFilter string
	found := false
	for k, byFilter := range rs.m {
		for f, e := range byFilter {
			if e.expires <= now {
				rs.delete(k, f)
				return
			}
			if !found {
				anyKey, anyFilter, found = k, f, true
			}
		}
	}
	if found {
		rs.delete(anyKey, anyFilter)
	}
}

// sweep removes expired entries so they really leave memory.
func (rs *retainedStore) sweep(now int64) {
	for k, byFilter := range rs.m {
		for f, e := range byFilter {
			if e.expires <= now {
				rs.delete(k, f)
			}
		}
	}
	if rs.n == 0 {
		rs.m = nil
	}
}

// match calls fn for every live retained publication that a subscription
// with this key and filters would have received.
func (rs *retainedStore) match(key string, wildcard bool, filters []string, now int64, fn func(*Publication)) {
	if rs.n == 0 {
		return
	}
	if !wildcard {
		rs.matchKey(rs.m[key], filters, now, fn)
		return
	}
	for k, byFilter := range rs.m {
		if topic.Match(key, k) {
			rs.matchKey(byFilter, filters, now, fn)
		}
	}
}

func (rs *retainedStore) matchKey(byFilter map[string]retainedEntry, filters []string, now int64, fn func(*Publication)) {
	if filters != nil {
		for _, f := range filters {
			if e, ok := byFilter[f]; ok && e.expires > now {
				fn(e.pub)
			}
		}
		return
	}
	for _, e := range byFilter {
		if e.expires > now {
			fn(e.pub)
		}
	}
}

// sendRetained writes the retained messages matching a new subscription of c,
// right after its `subscribed` reply (wire-reference.md §3.2, OQ-58).
func (w *worker) sendRetained(c *Conn, display, key string, wildcard bool, filters []string, qos uint8) {
	w.retained.match(key, wildcard, filters, w.now(), func(p *Publication) {
		if (!p.Echo && p.Origin == c) || (wildcard && isDollar(p.Topic) && startsWithWildcard(display)) {
			return
		}
		re, _ := c.t.Encoding().(RetainedEncoding)
		if q := deliveryQoS(p, c, qos); q > 0 {
			w.deliverQoS1(p, c, display, wildcard, re, q)
			return
		}
		f := w.frames.get(p, c, display, wildcard)
		if re != nil && f != nil {
			f = re.Retained(f)
		}
		w.write(c, f)
	})
}

// RetainedEncoding is an Encoding whose deliveries of a retained message to
// a new subscription differ from live ones (MQTT's RETAIN flag,
// [MQTT-3.3.1-8]): Retained returns the retained form of frame, a frame
// (Message) or a QoS 1 head (QoS1Encoding) the encoding built, without
// modifying it. It is called per retained delivery, not per publication.
type RetainedEncoding interface {
	Retained(frame []byte) []byte
}
