package hub

import (
	"context"
	"errors"
	"sort"
	"strings"
)

// ErrStopped is Gather's error once the hub has stopped (Shutdown): its
// workers run nothing more.
var ErrStopped = errors.New("hub: stopped")

// Gather runs pick on every open connection of h (registered, no close
// decided), each on the connection's own worker, so pick may read what the
// worker owns (Conn.SubscriptionCount, Conn.Subscriptions); it returns
// what pick kept (ok true), worker by worker. Calls on different workers
// run at the same time: pick must only read the connection it is given
// and return a value of its own. It is how the admin API lists and selects
// connections without a lock on the delivery path.
//
// Gather waits for every worker, or for ctx: then it returns what the
// workers that answered gave, and ctx.Err(). A worker that answers late
// leaves its slice in a buffered channel nobody reads; nothing it holds is
// shared with the caller.
func Gather[T any](ctx context.Context, h *Hub, pick func(*Conn) (T, bool)) ([]T, error) {
	answers := make(chan []T, len(h.workers)) // never blocks a worker
	for _, w := range h.workers {
		w.post(op{kind: opRun, fn: func(*Conn) {
			var out []T
			for _, c := range w.conns {
				if c.Closing() {
					continue
				}
				if v, ok := pick(c); ok {
					out = append(out, v)
				}
			}
			answers <- out
		}})
	}
	var all []T
	for range h.workers {
		select {
		case out := <-answers:
			all = append(all, out...)
		case <-ctx.Done():
			return all, ctx.Err()
		case <-h.stop:
			return all, ErrStopped
		}
	}
	return all, nil
}

// SubscriptionCount returns how many subscriptions c holds. Call it only
// on c's worker (Hub.Run, Gather).
func (c *Conn) SubscriptionCount() int {
	c.w.mustOwn("SubscriptionCount")
	return int(c.nsubs)
}

// QueuedBytes returns the bytes of frames queued for c and not yet taken
// by its socket (bounded by Config.OutboundMaxBytes). Safe from any
// goroutine.
func (c *Conn) QueuedBytes() int {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.queuedBytes()
}

// TopicCount is one routing key with its subscriptions on this node
// (Hub.Topics).
type TopicCount struct {
	// Key is the routing key (SubSpec.Key): the resolved topic, or an
	// MQTT-style pattern when Wildcard is set.
	Key      string
	Wildcard bool
	// Subscribers counts the subscriptions to Key, load-balanced ones
	// included; Groups counts the load-balanced groups among them.
	Subscribers int
	Groups      int
}

// SortTopics orders ts as Hub.Topics answers: most subscriptions first,
// then by key, a key before the pattern of the same text.
func SortTopics(ts []TopicCount) {
	sort.Slice(ts, func(i, j int) bool {
		if ts[i].Subscribers != ts[j].Subscribers {
			return ts[i].Subscribers > ts[j].Subscribers
		}
		if ts[i].Key != ts[j].Key {
			return ts[i].Key < ts[j].Key
		}
		return !ts[i].Wildcard && ts[j].Wildcard
	})
}

// Topics returns the routing keys with at least one subscription on h
// whose key starts with prefix ("" for all), sorted by subscriptions,
// most first, then by key; at most limit of them (limit <= 0: all), and
// the number of keys that matched before the limit. It walks every
// subscription of every connection on its worker (Gather): a call costs
// O(subscriptions), meant for an operator, not for a hot path.
func (h *Hub) Topics(ctx context.Context, prefix string, limit int) ([]TopicCount, int, error) {
	type keyOf struct {
		key  string
		wild bool
	}
	type seen struct {
		k      keyOf
		n      int
		groups map[string]struct{}
	}
	per, err := Gather(ctx, h, func(c *Conn) ([]seen, bool) {
		var out []seen
		for s := c.subs; s != nil; s = s.next {
			if strings.HasPrefix(s.key, prefix) {
				e := seen{k: keyOf{s.key, s.wildcard}, n: 1}
				if s.lb() {
					e.groups = map[string]struct{}{s.group(): {}}
				}
				out = append(out, e)
			}
		}
		return out, len(out) > 0
	})
	byKey := map[keyOf]*seen{}
	for _, list := range per {
		for _, e := range list {
			t := byKey[e.k]
			if t == nil {
				t = &seen{k: e.k, groups: map[string]struct{}{}}
				byKey[e.k] = t
			}
			t.n++
			for g := range e.groups {
				t.groups[g] = struct{}{}
			}
		}
	}
	out := make([]TopicCount, 0, len(byKey))
	for _, t := range byKey {
		out = append(out, TopicCount{Key: t.k.key, Wildcard: t.k.wild, Subscribers: t.n, Groups: len(t.groups)})
	}
	SortTopics(out)
	matched := len(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, matched, err
}
