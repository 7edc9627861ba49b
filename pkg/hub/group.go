package hub

import "github.com/NoLagApp/kraken/pkg/topic"

// member is a load-balanced subscription as its group's worker sees it. It is
// created by the connection's worker and then owned by the group's worker.
type member struct {
	c       *Conn
	pattern string
	key     string
	group   string
	wild    bool
	filters []string
	g       *group
	pos     int
	reply   []byte // the `subscribed` frame, answering ticket; nil for none
	ticket  Ticket
	marked  bool // the group worker's interest was marked ahead (SubSpec.marked)
	// noRetained: SubSpec.NoRetained, no retained message on joining.
	noRetained bool
	durable    bool // SubSpec.Durable: a member of the group's durable form
}

// group is one shared subscription: a group name and a routing key. Each
// message matching the key goes to exactly one member, round-robin (OQ-34).
type group struct {
	name, key string
	wild      bool
	durable   bool // fed by Hub.DeliverDurable only; not in the exact index
	// ready: a durable group's messages flow (Config.OnDurableInterest
	// called its ready); waiting: the confirmations of members that
	// joined before.
	ready   bool
	waiting []func()
	members []*member
	next    int
}

// pick returns the next member that accepts filter and is not skip, or nil.
func (g *group) pick(filter string, skip *Conn) *member {
	n := len(g.members)
	for i := 0; i < n; i++ {
		m := g.members[(g.next+i)%n]
		if m.c != skip && acceptsFilter(m.filters, filter) {
			g.next = (g.next + i + 1) % n
			return m
		}
	}
	return nil
}

// groups is the index of the load-balanced groups a worker owns. A group is
// owned by the worker its name hashes to, so all its members are in one place
// and round-robin needs no coordination.
type groups struct {
	byID  map[string]*group
	exact map[string][]*group
	wild  *topic.Trie[*group]
}

func newGroups() groups {
	return groups{byID: make(map[string]*group), exact: make(map[string][]*group), wild: topic.NewTrie[*group]()}
}

// groupID is the index key of the group name on key; a durable group's
// (SubSpec.Durable) differs from the plain one of the same name and key.
func groupID(name, key string, durable bool) string {
	if durable {
		return name + "\x00" + key + "\x00d"
	}
	return name + "\x00" + key
}

func (gs *groups) add(m *member) (created bool) {
	id := groupID(m.group, m.key, m.durable)
	g := gs.byID[id]
	if g == nil {
		g = &group{name: m.group, key: m.key, wild: m.wild, durable: m.durable}
		gs.byID[id] = g
		switch {
		case g.durable:
			// Not in the indexes publications are matched against: only
			// Hub.DeliverDurable reaches it, by its ID.
		case g.wild:
			gs.wild.Insert(g.key, g)
		default:
			gs.exact[g.key] = append(gs.exact[g.key], g)
		}
		created = true
	}
	m.g, m.pos = g, len(g.members)
	g.members = append(g.members, m)
	return created
}

func (gs *groups) remove(m *member) (deleted bool) {
	g := m.g
	if g == nil || m.pos >= len(g.members) || g.members[m.pos] != m {
		return false
	}
	last := len(g.members) - 1
	g.members[m.pos] = g.members[last]
	g.members[m.pos].pos = m.pos
	g.members[last] = nil
	g.members = g.members[:last]
	m.g = nil
	if g.next > m.pos {
		g.next--
	}
	if len(g.members) > 0 {
		if g.next >= len(g.members) {
			g.next = 0
		}
		return false
	}
	delete(gs.byID, groupID(g.name, g.key, g.durable))
	if g.durable {
		return true
	}
	if g.wild {
		gs.wild.Remove(g.key, g)
		return true
	}
	list := gs.exact[g.key]
	for i, x := range list {
		if x == g {
			list[i] = list[len(list)-1]
			list = list[:len(list)-1]
			break
		}
	}
	if len(list) == 0 {
		delete(gs.exact, g.key)
	} else {
		gs.exact[g.key] = list
	}
	return true
}

func (gs *groups) size() int { return len(gs.byID) }

// addMember adds m to its group on the group's worker w, tells the
// interest hooks when the group is new here, and then confirms m (its
// `subscribed` reply, the retained messages) once the group gets its
// messages: at once for a plain group without Config.InterestReady, else
// when the bus (InterestReady) or the durable store (OnDurableInterest's
// ready) says so. Members that join a durable group before it is ready
// are confirmed with the first.
func (w *worker) addMember(m *member) {
	created := w.grp.add(m)
	if m.marked {
		w.settle(m.key, m.wild)
	}
	confirm := func() {
		if m.reply != nil {
			w.answer(m.c, m.ticket, m.reply)
		}
		if !m.noRetained && m.g != nil {
			w.sendRetained(m.c, m.pattern, m.key, m.wild, m.filters, 0)
		}
	}
	if created {
		w.h.stats.groups.Add(1)
	}
	if m.durable {
		g := m.g
		if f := w.h.cfg.OnDurableInterest; created && f != nil {
			g.waiting = append(g.waiting, confirm)
			f(m.group, m.key, 1, func() {
				w.post(op{kind: opRun, fn: func(*Conn) {
					waiting := g.waiting
					g.waiting, g.ready = nil, true
					for _, confirm := range waiting {
						confirm()
					}
				}})
			})
			return
		}
		if !g.ready && w.h.cfg.OnDurableInterest != nil {
			g.waiting = append(g.waiting, confirm)
			return
		}
		confirm()
		return
	}
	if created {
		w.gain(m.key, m.wild)
		if f := w.h.cfg.OnGroupInterest; f != nil {
			f(m.group, m.key, m.wild, 1)
		}
	}
	if created && w.h.cfg.InterestReady != nil {
		w.afterInterest(m.group, m.key, m.wild, confirm)
	} else {
		confirm()
	}
}
