package hub

// subscribe adds or replaces c's subscription to spec.Pattern. It keeps
// no reference to spec once it returns (what a later step needs is copied:
// into the group member, into afterInterest's closure), so the op handler
// gives Hub.Subscribe's pooled spec back right after (putSpec).
func (w *worker) subscribe(c *Conn, spec *SubSpec) {
	if c.idx < 0 {
		w.reply(c, spec, nil)
		w.unmark(c, spec)
		return // closed meanwhile
	}
	if old := c.findSub(spec.Pattern); old != nil {
		w.detach(old)
		c.unlinkSub(old)
	} else if int(c.nsubs) >= w.h.cfg.MaxSubscriptions {
		if f := w.h.cfg.OnTooManySubscriptions; f != nil {
			f(c, spec.Pattern, !c.capped) // counted before the client can read the answer
		}
		c.capped = true
		w.reply(c, spec, w.tooMany(c, spec))
		w.unmark(c, spec)
		return
	}
	s := newSub(c, spec)
	s.next = c.subs
	c.subs = s
	c.nsubs++
	if s.wildcard {
		c.nwild++
	}
	w.h.stats.subs.Add(1)
	w.h.forms.count(s, 1)
	if !spec.LoadBalance {
		first := w.tab.insert(s)
		if first {
			w.interest(s, 1)
		}
		if spec.marked {
			w.settle(s.key, s.wildcard)
		}
		if first && w.h.cfg.InterestReady != nil {
			answered, reply, t, noRetained := spec.Reply != nil, spec.Reply, spec.ticket, spec.NoRetained
			w.afterInterest("", s.key, s.wildcard, func() { w.confirm(c, s, answered, reply, t, noRetained) })
			return
		}
		w.confirm(c, s, spec.Reply != nil, spec.Reply, spec.ticket, spec.NoRetained) // no closure: nothing allocated on the common path
		return
	}
	s.x.m = &member{c: c, pattern: spec.Pattern, key: spec.Key, group: spec.Group,
		wild: spec.Wildcard, filters: spec.Filters, reply: spec.Reply, ticket: spec.ticket, marked: spec.marked,
		noRetained: spec.NoRetained, durable: s.x.durable}
	w.h.groupWorker(spec.Group).post(op{kind: opMemberAdd, member: s.x.m})
}

// confirm writes reply, the reply of subscription s (as the answer to
// ticket t when answered, see reply), and then, unless noRetained, the
// retained messages it matches (if s is still c's). It takes its spec's
// fields, not the spec, which subscribe does not keep.
func (w *worker) confirm(c *Conn, s *sub, answered bool, reply []byte, t Ticket, noRetained bool) {
	if answered {
		w.answer(c, t, reply)
	} else {
		w.write(c, reply)
	}
	if !noRetained && c.idx >= 0 && c.findSub(s.pattern()) == s {
		w.sendRetained(c, s.pattern(), s.key, s.wildcard, s.filters(), s.qos)
	}
}

func (w *worker) unsubscribe(c *Conn, pattern string) {
	if s := c.findSub(pattern); s != nil {
		w.detach(s)
		c.unlinkSub(s)
	}
}

// interest tells the hub's interest index and Config.OnInterest that this
// worker's subscriptions to s's key went from none to some (+1) or back
// (-1).
func (w *worker) interest(s *sub, delta int) {
	if delta > 0 {
		w.gain(s.key, s.wildcard)
	} else {
		w.lose(s.key, s.wildcard)
	}
	if f := w.h.cfg.OnInterest; f != nil {
		f(s.key, s.wildcard, delta)
	}
}

// afterInterest runs then on w once Config.InterestReady says the node's
// new interest in key has reached the bus.
func (w *worker) afterInterest(group, key string, wildcard bool, then func()) {
	w.h.cfg.InterestReady(group, key, wildcard, func() {
		w.post(op{kind: opRun, fn: func(*Conn) { then() }})
	})
}

// unmark ends the pending interest mark of spec, a subscription of c that
// added nothing, on the worker Hub.Subscribe marked.
func (w *worker) unmark(c *Conn, spec *SubSpec) {
	if !spec.marked {
		return
	}
	target := w.h.interestWorker(c, spec)
	if target == w {
		w.settle(spec.Key, spec.Wildcard)
		return
	}
	key, wild := spec.Key, spec.Wildcard
	target.post(op{kind: opRun, fn: func(*Conn) { target.settle(key, wild) }})
}

// reply gives frame as the answer to spec's reply when it has one (its
// ticket, Hub.Subscribe), and otherwise just writes it (nil: nothing).
func (w *worker) reply(c *Conn, spec *SubSpec, frame []byte) {
	if spec.Reply != nil {
		w.answer(c, spec.ticket, frame)
		return
	}
	w.write(c, frame)
}

// tooMany is the answer to spec refused for MaxSubscriptions: its TooMany,
// else, for a subscribe that is answered, Config.TooManyFrame's frame.
func (w *worker) tooMany(c *Conn, spec *SubSpec) []byte {
	if f := w.h.cfg.TooManyFrame; f != nil && spec.TooMany == nil && spec.Reply != nil {
		return f(c, spec.Pattern)
	}
	return spec.TooMany
}

// detach removes s from the routing tables (or from its group) but not from
// its connection's list.
func (w *worker) detach(s *sub) {
	w.h.stats.subs.Add(-1)
	w.h.forms.count(s, -1)
	m := s.member()
	if m == nil {
		if w.tab.remove(s) {
			w.interest(s, -1)
		}
		return
	}
	w.h.groupWorker(s.x.group).post(op{kind: opMemberRemove, member: m})
	s.x.m = nil
}

// Subscribed reports whether c holds a subscription to pattern (its
// display topic, as the client sent it). Call it only from Hub.Run.
func (c *Conn) Subscribed(pattern string) bool {
	c.w.mustOwn("Subscribed")
	return c.findSub(pattern) != nil
}

func (c *Conn) findSub(pattern string) *sub {
	for s := c.subs; s != nil; s = s.next {
		if s.pattern() == pattern {
			return s
		}
	}
	return nil
}

func (c *Conn) unlinkSub(target *sub) {
	for p := &c.subs; *p != nil; p = &(*p).next {
		if *p == target {
			*p = target.next
			c.nsubs--
			if target.wildcard {
				c.nwild--
			}
			return
		}
	}
}

// Subscription is a read-only view of one subscription, for code running on
// the connection's worker (Hub.Run).
type Subscription struct {
	Pattern     string
	Filters     []string
	QoS         uint8
	LoadBalance bool
	Group       string
	Durable     bool // a durable group's member (SubSpec.Durable)
}

// SubSpecs returns c's subscriptions as the SubSpecs that would make them
// again (without reply frames), newest first, as a Parker gets them. Call
// it only from Hub.Run.
func (c *Conn) SubSpecs() []SubSpec {
	c.w.mustOwn("SubSpecs")
	out := make([]SubSpec, 0, c.nsubs)
	for s := c.subs; s != nil; s = s.next {
		out = append(out, s.spec())
	}
	return out
}

// Subscriptions lists c's subscriptions. Call it only from Hub.Run.
func (c *Conn) Subscriptions() []Subscription {
	c.w.mustOwn("Subscriptions")
	out := make([]Subscription, 0, c.nsubs)
	for s := c.subs; s != nil; s = s.next {
		out = append(out, Subscription{Pattern: s.pattern(), Filters: s.filters(),
			QoS: s.qos, LoadBalance: s.lb(), Group: s.group(), Durable: s.durable()})
	}
	return out
}

// setFilters replaces the filters of c's subscription to pattern in place
// (Hub.SetFilters). A broadcast subscription is changed here, in the table
// entry itself; a load-balanced one on its group's worker, which then writes
// ok, so the reply follows the change either way.
func (w *worker) setFilters(c *Conn, pattern string, filters []string, ok []byte, t Ticket, spec *SubSpec) {
	s := c.findSub(pattern)
	if s == nil || c.idx < 0 {
		w.answer(c, t, spec.TooMany)
		return
	}
	s.setFilters(filters)
	m := s.member()
	if m == nil {
		w.answer(c, t, ok)
		return
	}
	w.h.groupWorker(s.x.group).post(op{kind: opMemberFilters, member: m, filters: filters, reply: ok, ticket: t})
}

// DropSubscription removes c's subscription to pattern (after a revalidation
// revoked it, OQ-12). Call it only from Hub.Run.
func (c *Conn) DropSubscription(pattern string) {
	c.w.mustOwn("DropSubscription")
	c.w.unsubscribe(c, pattern)
}

// WriteFrame queues frame to c from code running on c's worker (Hub.Run);
// it is flushed at the end of the worker's batch.
func (c *Conn) WriteFrame(frame []byte) {
	c.w.mustOwn("WriteFrame")
	c.w.write(c, frame)
}
