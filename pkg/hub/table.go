package hub

import "github.com/NoLagApp/kraken/pkg/topic"

// SubSpec describes one subscription as the reactor resolved it.
type SubSpec struct {
	// Pattern is the topic exactly as the client sent it: the display topic
	// of every message frame for this subscription (wire-reference.md §6.1).
	Pattern string
	// Key is the routing key (acl.Resolution.Key). When Wildcard is set it is
	// an MQTT-style pattern matched against publication keys (D-2).
	Key      string
	Wildcard bool
	// Filters are the normalised filter values (§6.9); nil receives every
	// message on the key, filtered or not (OQ-2).
	Filters []string
	// QoS is recorded as sent (0–2); no behaviour depends on it yet (§6.3).
	QoS uint8
	// LoadBalance puts the subscription in Group: each message goes to one
	// member of the group, round-robin (§6.8, OQ-34).
	LoadBalance bool
	Group       string
	// Durable makes a load-balanced subscription to an exact key a member
	// of its group's durable form: a group kept in the durable history
	// (Config.OnDurableInterest), which no publication reaches through
	// the hub, only DeliverDurable (decisions.md OQ-74). A group's durable
	// and plain forms are two groups. Ignored without LoadBalance or with
	// Wildcard.
	Durable bool
	// NoRetained skips the retained messages a new subscription is sent
	// (§6.7): a parked session's subscription (Conn.Adopt) collects only
	// what is published after it.
	NoRetained bool
	// Reply is the frame written once the subscription is in place (the
	// `subscribed` frame), nil for restored subscriptions (§2.6). TooMany is
	// written instead when the per-connection cap is reached (when it is
	// nil and Reply is not, the frame of Config.TooManyFrame).
	Reply, TooMany []byte

	ticket Ticket // the place of Reply or TooMany, reserved by Hub.Subscribe when Reply is set
	marked bool   // Hub.Subscribe marked the interest of its worker ahead (interest.mark)
}

// sub is one subscription on its connection's worker: the SubSpec without
// its one-off reply frames, kept small because an idle connection holds a
// few of them: 48 bytes, a 48-byte allocation (TestConnSize), for a plain
// subscription. Its display pattern is the tail of its routing key (the key
// is the pattern behind an app and scope prefix, wire-reference.md §3.3),
// so it costs an offset, not a string; what only a load-balanced or
// filtered one has, or a pattern that is not the key's tail, is in x.
type sub struct {
	c        *Conn
	next     *sub      // next subscription of the same connection
	key      string    // routing key, shared with the table's other entries for the key
	x        *subExtra // nil for a plain subscription: no filters, no group, the pattern in key
	pos      int32     // index in table.exact[key]
	poff     uint16    // the pattern is key[poff:]; patternInX: it is x.pattern
	qos      uint8
	wildcard bool
}

// patternInX is the sub.poff of a subscription whose pattern is not the
// tail of its key (or is too far into it): x.pattern holds it.
const patternInX = 1<<16 - 1

// subExtra is what a filtered or load-balanced subscription has beside a
// plain one's fields; owned, as the sub, by the connection's worker.
type subExtra struct {
	m       *member // the group member, for load-balanced subscriptions
	filters []string
	group   string
	pattern string // the display pattern when sub.poff is patternInX
	lb      bool
	durable bool
}

func newSub(c *Conn, spec *SubSpec) *sub {
	s := &sub{c: c, key: spec.Key, qos: spec.QoS, wildcard: spec.Wildcard}
	if spec.Filters != nil || spec.LoadBalance || spec.Group != "" {
		s.x = &subExtra{filters: spec.Filters, group: spec.Group, lb: spec.LoadBalance,
			durable: spec.LoadBalance && spec.Durable && !spec.Wildcard}
	}
	if off := len(spec.Key) - len(spec.Pattern); off >= 0 && off < patternInX && spec.Key[off:] == spec.Pattern {
		s.poff = uint16(off)
	} else {
		if s.x == nil {
			s.x = &subExtra{}
		}
		s.x.pattern, s.poff = spec.Pattern, patternInX
	}
	return s
}

// pattern returns the subscription's display pattern, as the client sent
// it.
func (s *sub) pattern() string {
	if s.poff == patternInX {
		return s.x.pattern
	}
	return s.key[s.poff:]
}

// filters returns the subscription's filters; nil accepts every message.
func (s *sub) filters() []string {
	if s.x == nil {
		return nil
	}
	return s.x.filters
}

// setFilters replaces the subscription's filters.
func (s *sub) setFilters(filters []string) {
	if s.x == nil {
		if filters == nil {
			return
		}
		s.x = &subExtra{}
	}
	s.x.filters = filters
}

// lb reports whether the subscription is load-balanced (its group's).
func (s *sub) lb() bool { return s.x != nil && s.x.lb }

// group returns the load-balanced subscription's group name, "" for others.
func (s *sub) group() string {
	if s.x == nil {
		return ""
	}
	return s.x.group
}

// durable reports whether the subscription is a member of a durable group.
func (s *sub) durable() bool { return s.x != nil && s.x.durable }

// member returns the subscription's group member, nil for a broadcast one
// (and for a load-balanced one once detached).
func (s *sub) member() *member {
	if s.x == nil {
		return nil
	}
	return s.x.m
}

// spec rebuilds the subscription's SubSpec (without reply frames).
func (s *sub) spec() SubSpec {
	return SubSpec{Pattern: s.pattern(), Key: s.key, Wildcard: s.wildcard, Filters: s.filters(),
		QoS: s.qos, LoadBalance: s.lb(), Group: s.group(), Durable: s.durable()}
}

func (s *sub) accepts(filter string) bool {
	if s.x == nil {
		return true
	}
	return acceptsFilter(s.x.filters, filter)
}

func acceptsFilter(filters []string, filter string) bool {
	if filters == nil {
		return true
	}
	if filter == "" {
		return false
	}
	for _, f := range filters {
		if f == filter {
			return true
		}
	}
	return false
}

// table is a worker's routing index of broadcast subscriptions. Owned by one
// worker; no locks.
type table struct {
	exact map[string][]*sub
	wild  *topic.Trie[*sub]
	wildN map[string]int32 // subscriptions per wildcard pattern, for interest changes
}

func newTable() table {
	return table{exact: make(map[string][]*sub), wild: topic.NewTrie[*sub](), wildN: make(map[string]int32)}
}

// insert adds s and reports whether it is the first subscription to its key
// (or pattern) on this worker.
func (t *table) insert(s *sub) (first bool) {
	if s.wildcard {
		t.wild.Insert(s.key, s)
		t.wildN[s.key]++
		return t.wildN[s.key] == 1
	}
	list := t.exact[s.key]
	if len(list) > 0 {
		// Share the strings of the subscriptions already on this key, so
		// a topic with many subscribers stores its key once.
		s.key = list[0].key // and so the pattern, its tail
	}
	s.pos = int32(len(list))
	t.exact[s.key] = append(list, s)
	return len(list) == 0
}

// remove takes s out and reports whether it was the last subscription to
// its key (or pattern) on this worker.
func (t *table) remove(s *sub) (last bool) {
	if s.wildcard {
		t.wild.Remove(s.key, s)
		if t.wildN[s.key]--; t.wildN[s.key] <= 0 {
			delete(t.wildN, s.key)
			return true
		}
		return false
	}
	list := t.exact[s.key]
	end := int32(len(list) - 1)
	if s.pos > end || list[s.pos] != s {
		return false
	}
	list[s.pos] = list[end]
	list[s.pos].pos = s.pos
	list[end] = nil
	if end == 0 {
		delete(t.exact, s.key)
		return true
	}
	t.exact[s.key] = list[:end]
	return false
}

// size returns the number of subscriptions in the table.
func (t *table) size() int {
	n := t.wild.Len()
	for _, l := range t.exact {
		n += len(l)
	}
	return n
}
