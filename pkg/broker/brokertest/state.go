package brokertest

import (
	"fmt"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// presence returns a presence of node with every field set; ID, RoomSlug
// and Data hold bytes a backend must escape or keep as they are.
func presence(node, id, room string, v byte) *broker.Presence {
	return &broker.Presence{Node: node, ID: id, RoomID: room, RoomSlug: "lobby/" + room + " é.*>",
		ActorTokenID: "actor-" + id, Data: []byte{0x82, 0xa1, 'v', v, 0xa1, 'z', 0xc4, 0x03, 0x00, 0xff, '.'},
		JoinedAt: 1_796_000_000 + int64(v)}
}

func samePresence(a, b *broker.Presence) bool {
	return a.Node == b.Node && a.ID == b.ID && a.RoomID == b.RoomID && a.RoomSlug == b.RoomSlug &&
		a.ActorTokenID == b.ActorTokenID && string(a.Data) == string(b.Data) && a.JoinedAt == b.JoinedAt
}

// has reports whether n's view holds want for its member.
func has(n node, want *broker.Presence) bool {
	p, _ := n.rec.State()
	got, ok := p[Member{want.Node, want.ID}]
	return ok && samePresence(got, want)
}

// countOf returns n's view of node's count of org (0: none).
func countOf(n node, node, org string) int {
	_, c := n.rec.State()
	return c[OrgCount{node, org}]
}

func eventsOf(n node, kind EventKind, node string) []Event {
	var out []Event
	for _, e := range n.rec.Events() {
		if e.Kind == kind && e.Node == node {
			out = append(out, e)
		}
	}
	return out
}

func noOwnState(t *testing.T, n node) {
	t.Helper()
	for _, e := range n.rec.Events() {
		if e.Node == n.id {
			t.Fatalf("node %s was told its own shared state: %+v", n.id, e)
		}
	}
}

func presenceReaches(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b", "c")
	p := presence("a", "conn:1/2.3 é*", "room-1", 1)
	ns[0].b.SetPresence(p)
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" gets a's presence, fields byte for byte", func() bool { return has(n, p) })
	}
	quiet(c)
	noOwnState(t, ns[0])
	for _, n := range ns[1:] {
		if got := eventsOf(n, EventPresence, "a"); len(got) != 1 {
			t.Fatalf("node %s got %d presence calls for one SetPresence", n.id, len(got))
		}
	}
}

func presenceReplaces(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b")
	b := ns[1]
	p1 := presence("a", "c1", "room-1", 1)
	ns[0].b.SetPresence(p1)
	eventually(t, "b gets the join", func() bool { return has(b, p1) })
	p2 := presence("a", "c1", "room-1", 2)
	ns[0].b.SetPresence(p2)
	eventually(t, "b gets the update", func() bool { return has(b, p2) })
	p3 := presence("a", "c1", "room-2", 3)
	ns[0].b.SetPresence(p3)
	eventually(t, "b gets the move", func() bool { return has(b, p3) })
	quiet(c)
	if p, _ := b.rec.State(); len(p) != 1 {
		t.Fatalf("b holds %d members after a join, an update and a move of one connection, want 1", len(p))
	}
	if got := eventsOf(b, EventPresenceGone, "a"); len(got) != 0 {
		t.Fatalf("an update or a move gave %d HandlePresenceGone, want none", len(got))
	}
}

func presenceClears(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b", "c")
	p := presence("a", "c1", "room-1", 1)
	ns[0].b.SetPresence(p)
	ns[0].b.SetPresence(presence("a", "c2", "room-1", 2))
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" gets the joins", func() bool { ps, _ := n.rec.State(); return len(ps) == 2 })
	}
	ns[0].b.ClearPresence("c1")
	ns[0].b.ClearPresence("never-set")
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" gets the leave", func() bool { return len(eventsOf(n, EventPresenceGone, "a")) == 1 })
	}
	quiet(c)
	for _, n := range ns[1:] {
		gone := eventsOf(n, EventPresenceGone, "a")
		if len(gone) != 1 || gone[0].ID != "c1" {
			t.Fatalf("node %s got leaves %+v, want one for c1 (clearing an id never set is a no-op)", n.id, gone)
		}
		if ps, _ := n.rec.State(); len(ps) != 1 {
			t.Fatalf("node %s holds %d members, want c2 only", n.id, len(ps))
		}
	}
	noOwnState(t, ns[0])
}

func connectionCounts(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b", "c")
	ns[0].b.SetConnections("org-1", 3)
	ns[0].b.SetConnections("org/2 é", 1)
	ns[1].b.SetConnections("org-1", 2)
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" gets a's counts", func() bool {
			return countOf(n, "a", "org-1") == 3 && countOf(n, "a", "org/2 é") == 1
		})
	}
	eventually(t, "a and c get b's count", func() bool {
		return countOf(ns[0], "b", "org-1") == 2 && countOf(ns[2], "b", "org-1") == 2
	})
	ns[0].b.SetConnections("org-1", 4)
	eventually(t, "b gets the new count", func() bool { return countOf(ns[1], "a", "org-1") == 4 })
	ns[0].b.SetConnections("org-1", 0)
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" gets the count withdrawn", func() bool { return countOf(n, "a", "org-1") == 0 })
	}
	quiet(c)
	want := map[string]map[OrgCount]int{
		"b": {{"a", "org/2 é"}: 1},
		"c": {{"a", "org/2 é"}: 1, {"b", "org-1"}: 2},
	}
	for _, n := range ns[1:] {
		if _, counts := n.rec.State(); fmt.Sprint(counts) != fmt.Sprint(want[n.id]) {
			t.Fatalf("node %s holds counts %v, want %v", n.id, counts, want[n.id])
		}
	}
	noOwnState(t, ns[0])
}

func lateNodeGetsState(t *testing.T, c Cluster) {
	ns, more := startCluster(t, c, "a", "b")
	pa := presence("a", "c1", "room-1", 1)
	pb := presence("b", "c9", "room-2", 9)
	gone := presence("a", "c2", "room-1", 2)
	ns[0].b.SetPresence(pa)
	ns[0].b.SetPresence(gone)
	ns[0].b.SetConnections("org-1", 5)
	ns[1].b.SetPresence(pb)
	ns[1].b.SetConnections("org-1", 1)
	eventually(t, "b has a's state", func() bool {
		return has(ns[1], pa) && has(ns[1], gone) && countOf(ns[1], "a", "org-1") == 5
	})
	ns[0].b.ClearPresence("c2")
	eventually(t, "b has a's leave", func() bool { p, _ := ns[1].rec.State(); return len(p) == 1 })
	eventually(t, "a has b's state", func() bool { return has(ns[0], pb) && countOf(ns[0], "b", "org-1") == 1 })
	late := more("late")
	eventually(t, "the late node gets the current presence and counts", func() bool {
		p, counts := late.rec.State()
		return has(late, pa) && has(late, pb) && len(p) == 2 && counts[OrgCount{"a", "org-1"}] == 5 &&
			counts[OrgCount{"b", "org-1"}] == 1
	})
	quiet(c)
	if p, counts := late.rec.State(); len(p) != 2 || len(counts) != 2 {
		t.Fatalf("the late node holds %d members and counts %v, want 2 and 2", len(p), counts)
	}
}

// downOnce checks that n was told node is down exactly once and nothing
// of node's after it, and holds none of node's state.
func downOnce(t *testing.T, n node, node string) {
	t.Helper()
	down := 0
	for _, e := range n.rec.Events() {
		switch {
		case e.Kind == EventNodeDown && e.Node == node:
			down++
		case down > 0 && e.Node == node:
			t.Fatalf("node %s was told %+v after node %s was down", n.id, e, node)
		}
	}
	if down != 1 {
		t.Fatalf("node %s was told %d times that %s is down, want once", n.id, down, node)
	}
	p, counts := n.rec.State()
	for m := range p {
		if m.Node == node {
			t.Fatalf("node %s still holds %v", n.id, m)
		}
	}
	for k := range counts {
		if k.Node == node {
			t.Fatalf("node %s still holds the count %v", n.id, k)
		}
	}
}

// withState gives node a two members and a count and waits until the
// others hold them.
func withState(t *testing.T, ns []node) {
	t.Helper()
	ps := []*broker.Presence{presence("a", "c1", "room-1", 1), presence("a", "c2", "room-2", 2)}
	for _, p := range ps {
		ns[0].b.SetPresence(p)
	}
	ns[0].b.SetConnections("org-1", 2)
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" holds a's state", func() bool {
			return has(n, ps[0]) && has(n, ps[1]) && countOf(n, "a", "org-1") == 2
		})
	}
}

func closedNodeDown(t *testing.T, c Cluster) {
	ns := startNodes(t, c, "a", "b", "c")
	withState(t, ns)
	if err := ns[0].b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" is told a is down", func() bool { return len(eventsOf(n, EventNodeDown, "a")) > 0 })
	}
	quiet(c)
	time.Sleep(c.LivenessTimeout) // room for a purge, which must tell nothing
	for _, n := range ns[1:] {
		downOnce(t, n, "a")
	}
}

func killedNodeDown(t *testing.T, c Cluster) {
	ns, more := startCluster(t, c, "a", "b", "c")
	withState(t, ns)
	killed := time.Now()
	c.Kill(ns[0].b)
	bound := 2*c.LivenessTimeout + 500*time.Millisecond
	for _, n := range ns[1:] {
		eventually(t, "node "+n.id+" judges a down", func() bool { return len(eventsOf(n, EventNodeDown, "a")) > 0 })
		took := eventsOf(n, EventNodeDown, "a")[0].At.Sub(killed)
		t.Logf("node %s judged the killed node down after %v (liveness timeout %v)", n.id, took.Round(time.Millisecond), c.LivenessTimeout)
		if took > bound {
			t.Errorf("node %s judged the killed node down after %v, want within %v", n.id, took, bound)
		}
	}
	time.Sleep(c.LivenessTimeout + c.Settle) // the purge
	for _, n := range ns[1:] {
		downOnce(t, n, "a")
	}
	late := more("late")
	quiet(c)
	for _, e := range late.rec.Events() {
		if e.Node == "a" && e.Kind != EventNodeDown {
			t.Fatalf("a node started after the purge was told %+v of the killed node", e)
		}
	}
}
