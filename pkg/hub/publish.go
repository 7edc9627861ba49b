package hub

import (
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Publication is one accepted publish, ready to fan out. The publisher builds
// Frame once; every subscription of an encoding-0 connection whose display
// topic equals Topic shares it, and the hub builds any other frame once per
// encoding and display topic.
type Publication struct {
	// Key is the routing key (acl.Resolution.Key) of the published topic.
	Key string
	// Topic is the topic as the publisher sent it.
	Topic string
	// Filter is the normalised publish filter, "" for none (§6.9).
	Filter string
	// Msg is the message: its fields, Topic the display topic of exact
	// subscriptions. Each transport's frame of it is built by the hub
	// (Encoding.Message): once per form in use for display topic Topic
	// when it is published (Hub.Publish), and by a worker for a wildcard
	// subscription's display topic or a form not in use then. Its Data must
	// not alias a reused buffer, and nothing in Msg may change once it is
	// published.
	Msg wire.Message
	// Origin is the publishing connection; with Echo false it gets no copy
	// (wire-reference.md §6.2).
	Origin *Conn
	Echo   bool
	// Retain keeps the publication as the retained message of its exact
	// topic (Key and Filter) for Config.RetainTTL; with ClearRetained (nil
	// data) it removes the retained message instead (wire-reference.md §6.7,
	// OQ-15). Either way it is first delivered like any publication.
	Retain, ClearRetained bool
	// AtMostOnce says the publisher asked for QoS 0: no subscriber gets it
	// as an acknowledged (QoS 1 or 2) delivery (MQTT 3.1.1 §3.8.4: the
	// minimum of the published and the granted QoS). It crosses nodes with
	// the publication (broker.Message.AtMostOnce).
	AtMostOnce bool
	// ExactlyOnce says the publisher asked for QoS 2: a QoS 2 subscription
	// of a connection that acknowledges deliveries gets it at QoS 2, others
	// at their own QoS (MQTT 3.1.1 §3.8.4). Without it, and without
	// AtMostOnce, a publication is delivered at most at QoS 1. It crosses
	// nodes with the publication (broker.Message.ExactlyOnce).
	ExactlyOnce bool
	// NoGroups skips load-balanced groups: on a node of a cluster, a group
	// gets each message from the bus, once cluster-wide (PublishGroup).
	NoGroups bool
	// StoreOnly updates the retained store and delivers nothing: the copy of
	// another node's retained publish that every node follows.
	StoreOnly bool
	// Durable marks a durable group's message from the store
	// (Hub.DeliverDurable): the store, not a resumable session's tap,
	// keeps it until its member acknowledges it.
	Durable bool

	// forms is the frames built at publication (forms.build); set once,
	// before any worker reads it.
	forms *built
}

// frameCache holds, for the publication being fanned out, the frames a
// worker built itself: for a display topic other than the publication's
// own (a wildcard subscription's pattern), or a form nobody took when it
// was published. Owned by a worker.
type frameCache struct {
	pub     *Publication
	entries []cachedFrame
}

type cachedFrame struct {
	enc     uint8
	qos1    bool // frame and tail are a QoS1Encoding's head and tail
	display string
	frame   []byte
	tail    []byte
}

func (fc *frameCache) get(p *Publication, c *Conn, display string, wildcard bool) []byte {
	id := c.enc
	if !wildcard && display == p.Topic && p.forms != nil && id < MaxEncodings {
		if f := p.forms.frames[id]; f != nil {
			return f
		}
	}
	fc.reset(p)
	for _, e := range fc.entries {
		if !e.qos1 && e.enc == id && e.display == display {
			return e.frame
		}
	}
	m := p.Msg
	m.Topic = display
	if wildcard {
		m.SourceTopic = p.Topic
	}
	frame := c.t.Encoding().Message(&m)
	c.w.h.forms.encoded[id][0].Add(1)
	fc.entries = append(fc.entries, cachedFrame{enc: id, display: display, frame: frame})
	return frame
}

// reset empties the cache when p is not the publication it holds.
func (fc *frameCache) reset(p *Publication) {
	if fc.pub != p {
		fc.pub = p
		for i := range fc.entries {
			fc.entries[i] = cachedFrame{}
		}
		fc.entries = fc.entries[:0]
	}
}

// fanOut delivers p to the matching subscriptions of this worker and to one
// member of each matching group this worker owns.
func (w *worker) fanOut(p *Publication) {
	if p.StoreOnly {
		if p.Retain {
			w.retained.update(p, w.now(), int64(w.h.cfg.RetainTTL))
		}
		return
	}
	for _, s := range w.tab.exact[p.Key] {
		w.deliverSub(p, s, false)
	}
	dollar := isDollar(p.Topic)
	w.tab.wild.Match(p.Key, func(s *sub) {
		if !dollar || !startsWithWildcard(s.pattern()) {
			w.deliverSub(p, s, true)
		}
	})
	w.one.deliver(w, p)
	if w.grp.size() > 0 && !p.NoGroups {
		for _, g := range w.grp.exact[p.Key] {
			w.deliverGroup(p, g)
		}
		w.grp.wild.Match(p.Key, func(g *group) { w.deliverGroup(p, g) })
	}
	if p.Retain {
		w.retained.update(p, w.now(), int64(w.h.cfg.RetainTTL))
	}
}

// deliverSub delivers p to the broadcast subscription s: acknowledged when
// s has QoS 1, its connection takes that (an MQTT one) and p was not
// published at most once.
func (w *worker) deliverSub(p *Publication, s *sub, wildcard bool) {
	if s.c.qos1 && s.c.nwild > 0 && s.c.nsubs > 1 {
		// Several subscriptions of an MQTT connection can match only with a
		// wildcard among them (its exact ones have distinct patterns): one
		// copy per connection (onecopy.go).
		w.one.add(p, s, wildcard)
		return
	}
	w.deliverSubNow(p, s, wildcard)
}

// deliverSubNow is deliverSub without the one-copy selection.
func (w *worker) deliverSubNow(p *Publication, s *sub, wildcard bool) {
	if q := deliveryQoS(p, s.c, s.qos); q > 0 {
		if s.accepts(p.Filter) && (p.Echo || s.c != p.Origin) {
			w.deliverQoS1(p, s.c, s.pattern(), wildcard, nil, q)
			w.deliveries.Add(1)
		}
		return
	}
	w.deliver(p, s.c, s.pattern(), wildcard, s.accepts(p.Filter))
}

// isDollar reports a topic beginning with '$', one of the server's (MQTT
// 3.1.1 §4.7.2).
func isDollar(topic string) bool { return len(topic) > 0 && topic[0] == '$' }

// startsWithWildcard reports a pattern whose first level is '+' or '#',
// which does not match a topic beginning with '$' [MQTT-4.7.2-1] (a
// delivery rule, on every transport; grants still treat '$' as any
// character, pkg/topic).
func startsWithWildcard(pattern string) bool {
	return len(pattern) > 0 && (pattern[0] == '+' || pattern[0] == '#') && (len(pattern) == 1 || pattern[1] == '/')
}

func (w *worker) deliver(p *Publication, c *Conn, display string, wildcard, accepted bool) {
	if !accepted || (!p.Echo && c == p.Origin) {
		return
	}
	if wildcard && isDollar(p.Topic) && startsWithWildcard(display) {
		return
	}
	if x := c.x.Load(); x != nil { // one load for what most connections lack
		if x.held != nil {
			x.held.add(p, display, wildcard)
			return
		}
		if t := x.tap.Load(); t != nil && !t.off && !p.Durable {
			c.tapDelivery(t, p, display, wildcard, w.now())
		}
	}
	f := w.frames.get(p, c, display, wildcard)
	w.write(c, f)
	w.bytesOut += uint64(len(f))
	w.deliveries.Add(1)
}

// deliverGroup delivers p to the next member of g that accepts it, and
// returns it (nil when there was none).
func (w *worker) deliverGroup(p *Publication, g *group) *member {
	var skip *Conn
	if !p.Echo {
		skip = p.Origin
	}
	m := g.pick(p.Filter, skip)
	if m == nil {
		return nil
	}
	if m.c.w != w {
		// The member's connection belongs to another worker, which alone
		// writes its held deliveries and tap: hand the delivery over.
		m.c.w.post(op{kind: opDeliver, c: m.c, pub: p, pattern: m.pattern, wild: m.wild})
		return m
	}
	w.deliver(p, m.c, m.pattern, m.wild, true)
	return m
}
