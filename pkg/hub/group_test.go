package hub

import "testing"

func TestGroupPickRoundRobinSkipsRefusingMembers(t *testing.T) {
	a, b, c := &Conn{ID: 1}, &Conn{ID: 2}, &Conn{ID: 3}
	gs := newGroups()
	members := []*member{
		{c: a, key: "k", group: "g"},
		{c: b, key: "k", group: "g", filters: []string{"x"}},
		{c: c, key: "k", group: "g"},
	}
	for i, m := range members {
		if created := gs.add(m); created != (i == 0) {
			t.Fatalf("add #%d created=%v", i, created)
		}
	}
	g := gs.byID[groupID("g", "k", false)]
	tests := []struct {
		filter string
		skip   *Conn
		want   *Conn
	}{
		{"", nil, a},
		{"", nil, c}, // b only takes filter "x"
		{"", nil, a},
		{"x", nil, b},
		{"x", nil, c},
		{"", a, c}, // echo:false skips the publisher
	}
	for i, tt := range tests {
		if got := g.pick(tt.filter, tt.skip); got == nil || got.c != tt.want {
			t.Fatalf("pick #%d = %v, want conn %d", i, got, tt.want.ID)
		}
	}
}

func TestGroupRemoveKeepsRotationAndPrunes(t *testing.T) {
	gs := newGroups()
	ms := []*member{{c: &Conn{ID: 1}, key: "k", group: "g"}, {c: &Conn{ID: 2}, key: "k", group: "g"}, {c: &Conn{ID: 3}, key: "k", group: "g"}}
	for _, m := range ms {
		gs.add(m)
	}
	g := ms[0].g
	g.pick("", nil) // 1
	gs.remove(ms[0])
	if got := g.pick("", nil); got != ms[1] && got != ms[2] {
		t.Fatalf("pick after remove = %v", got)
	}
	gs.remove(ms[1])
	if deleted := gs.remove(ms[2]); !deleted || gs.size() != 0 || len(gs.exact) != 0 {
		t.Fatalf("group left behind: deleted=%v size=%d exact=%d", deleted, gs.size(), len(gs.exact))
	}
	if gs.remove(ms[2]) {
		t.Fatal("removing twice reported a deletion")
	}
}

func TestTableInsertRemove(t *testing.T) {
	tab := newTable()
	c := &Conn{ID: 1}
	subs := []*sub{
		newSub(c, &SubSpec{Pattern: "a/b", Key: "app/a/b"}),
		newSub(c, &SubSpec{Pattern: "a/+", Key: "app/a/+", Wildcard: true}),
		newSub(c, &SubSpec{Pattern: "a/b2", Key: "app/a/b"}),
	}
	for _, s := range subs {
		tab.insert(s)
	}
	if tab.size() != 3 {
		t.Fatalf("size = %d", tab.size())
	}
	tab.remove(subs[0])
	if l := tab.exact["app/a/b"]; len(l) != 1 || l[0] != subs[2] || subs[2].pos != 0 {
		t.Fatalf("exact list after remove = %v", l)
	}
	tab.remove(subs[2])
	tab.remove(subs[1])
	if tab.size() != 0 || len(tab.exact) != 0 {
		t.Fatalf("table not empty: %d", tab.size())
	}
}

func TestAcceptsFilter(t *testing.T) {
	tests := []struct {
		filters []string
		filter  string
		want    bool
	}{
		{nil, "", true},
		{nil, "x", true}, // OQ-2: unfiltered receives filtered publishes
		{[]string{"x"}, "", false},
		{[]string{"x", "y"}, "y", true},
		{[]string{"x"}, "X", false},
	}
	for _, tt := range tests {
		if got := acceptsFilter(tt.filters, tt.filter); got != tt.want {
			t.Errorf("acceptsFilter(%v, %q) = %v, want %v", tt.filters, tt.filter, got, tt.want)
		}
	}
}

func TestRetainedStore(t *testing.T) {
	rs := retainedStore{max: 2}
	p1 := &Publication{Key: "app/a/b"}
	p2 := &Publication{Key: "app/a/c", Filter: "f"}
	rs.update(p1, 0, 100)
	rs.update(p2, 0, 100)
	var got []*Publication
	collect := func(p *Publication) { got = append(got, p) }

	rs.match("app/a/b", false, nil, 10, collect)
	rs.match("app/a/+", true, nil, 10, collect)
	rs.match("app/a/c", false, []string{"f"}, 10, collect)
	rs.match("app/a/c", false, []string{"g"}, 10, collect)
	if len(got) != 4 || got[0] != p1 || got[3] != p2 {
		t.Fatalf("matches = %v", got)
	}
	got = nil
	rs.match("app/a/b", false, nil, 100, collect) // expired
	if len(got) != 0 {
		t.Fatalf("expired entry matched: %v", got)
	}
	rs.update(&Publication{Key: "app/a/b", ClearRetained: true}, 10, 100)
	rs.update(&Publication{Key: "app/x"}, 10, 100)
	rs.update(&Publication{Key: "app/y"}, 10, 100) // over max: one entry evicted
	if rs.n != 2 || len(rs.m) != 2 {
		t.Fatalf("entries = %d in %d keys, want the bound 2", rs.n, len(rs.m))
	}
	rs.sweep(1000)
	if rs.m != nil {
		t.Fatalf("sweep left %d entries", len(rs.m))
	}
}
