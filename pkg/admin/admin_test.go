package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// The list covers every client connection with who it is and what it
// holds, filters by actor, project, transport and address, and pages by
// a cursor that visits each connection once, in id order.
func TestConnectionsListAndFilters(t *testing.T) {
	tn := startNode(t, nodeOptions{})
	bob1 := tn.client(t, "dev-token-bob")
	bob1.Send("type", "subscribe", "topic", "demo/general/a")
	bob1.ExpectType("subscribed")
	tn.client(t, "dev-token-bob")
	tn.client(t, "dev-token-alice")
	tn.client(t, "dev-token-dan")
	testpeer.Dial(t, tn.ws) // upgraded, never authenticated

	page := tn.connections(t, "")
	if page.Total != 5 || len(page.Connections) != 5 || page.Next != "" {
		t.Fatalf("all: total %d, %d listed, next %q; want 5, 5, none", page.Total, len(page.Connections), page.Next)
	}
	actors := map[string]int{}
	for _, c := range page.Connections {
		actors[c.Actor]++
		if c.Node != "node-a" || c.Transport != "websocket" || !strings.HasPrefix(c.RemoteAddr, "127.0.0.1:") ||
			time.Since(c.ConnectedAt) > time.Minute || c.Authenticated != (c.Actor != "") {
			t.Errorf("connection %+v", c)
		}
		if c.Actor == "bob" && c.ConnID == page.Connections[0].ConnID && c.Subscriptions != 1 {
			t.Errorf("bob's first connection holds %d subscriptions, want 1", c.Subscriptions)
		}
	}
	if actors["bob"] != 2 || actors["alice"] != 1 || actors["dan"] != 1 || actors[""] != 1 {
		t.Fatalf("actors %v", actors)
	}
	for query, want := range map[string]int{
		"actor=bob": 2, "project=demo-project": 3, "project=other-project": 1, "transport=websocket": 5,
		"transport=mqtt": 0, "remote_addr=127.0.0.1": 5, "remote_addr=127.0.0.0/8": 5, "remote_addr=10.0.0.0/8": 0,
		"actor=bob&project=other-project": 0,
	} {
		if got := tn.connections(t, query); got.Total != want || len(got.Connections) != want {
			t.Errorf("%s: total %d, %d listed; want %d", query, got.Total, len(got.Connections), want)
		}
	}
	// Pages of two: 2, 2, 1, each id once and in order.
	var ids []uint64
	after := ""
	for pages := 0; ; pages++ {
		p := tn.connections(t, "limit=2&after="+after)
		if p.Total != 5 || pages > 3 {
			t.Fatalf("page %d: total %d", pages, p.Total)
		}
		for _, c := range p.Connections {
			ids = append(ids, c.ConnID)
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if len(ids) != 5 {
		t.Fatalf("paged ids %v, want 5", ids)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("paged ids %v: not ascending", ids)
		}
	}
	for _, bad := range []string{"limit=0", "limit=1001", "transport=carrier-pigeon", "remote_addr=nowhere", "conn_id=x", "after=nonsense"} {
		if status, body := tn.call(t, http.MethodGet, "/api/connections?"+bad, nil); status != http.StatusBadRequest ||
			!strings.Contains(string(body), `"error"`) {
			t.Errorf("%s: %d %s, want 400 with the reason", bad, status, body)
		}
	}
}

// A disconnect closes exactly the connections named, with the code and
// reason the operator chose (1008 disconnected_by_operator by default);
// the others keep their connection. A target is required, and a code
// outside the documented table is refused.
func TestDisconnect(t *testing.T) {
	tn := startNode(t, nodeOptions{})
	alice := tn.client(t, "dev-token-alice")
	bob := tn.client(t, "dev-token-bob")
	dan := tn.client(t, "dev-token-dan")
	aliceID := tn.connections(t, "actor=alice").Connections[0].ConnID

	var res admin.ActionResult
	tn.post(t, "/api/disconnect", map[string]any{"conn_id": aliceID, "code": 1012, "reason": "maintenance"}, 200, &res)
	if res.Disconnected != 1 || len(res.Nodes) != 1 || !res.Nodes[0].Answered || !res.Nodes[0].Self {
		t.Fatalf("disconnect by id: %+v", res)
	}
	if code, reason := alice.ExpectClose(); code != 1012 || reason != "maintenance" {
		t.Fatalf("alice closed %d %q, want 1012 \"maintenance\"", code, reason)
	}
	tn.post(t, "/api/disconnect", map[string]any{"project": "other-project"}, 200, &res)
	if res.Disconnected != 1 {
		t.Fatalf("disconnect by project: %+v", res)
	}
	if code, reason := dan.ExpectClose(); code != 1008 || reason != "disconnected_by_operator" {
		t.Fatalf("dan closed %d %q, want 1008 \"disconnected_by_operator\"", code, reason)
	}
	bob.Send("type", "subscribe", "topic", "demo/general/still-here")
	bob.ExpectType("subscribed")

	for _, bad := range []any{
		map[string]any{}, map[string]any{"actor": "bob", "code": 4001}, map[string]any{"actor": "bob", "code": 1001},
		map[string]any{"actor": "bob", "reason": strings.Repeat("x", 124)}, map[string]any{"actor": "bob", "extra": 1},
		"not json", map[string]any{"actor": "bob", "transport": "x"},
	} {
		if status, body := tn.call(t, http.MethodPost, "/api/disconnect", bad); status != http.StatusBadRequest {
			t.Errorf("%v: %d %s, want 400", bad, status, body)
		}
	}
	bob.ExpectNothing(100 * time.Millisecond) // none of those closed bob
	if got := tn.connections(t, "actor=bob").Total; got != 1 {
		t.Fatalf("bob's connections after the refused disconnects: %d", got)
	}
}

// With ADMIN_SECRET set, every /api/ path needs it as a bearer secret:
// none or a wrong one is 401 with the reason and a WWW-Authenticate
// header; the right one is served. An unknown /api/ path is 404.
func TestSecretRequired(t *testing.T) {
	tn := startNode(t, nodeOptions{secret: "ops-key"})
	paths := []string{"GET /api/connections", "POST /api/disconnect", "POST /api/revoke", "GET /api/topics",
		"GET /api/presence", "GET /api/info", "POST /api/drain", "GET /api/openapi.json", "GET /api/nothing"}
	for _, p := range paths {
		method, path, _ := strings.Cut(p, " ")
		for _, secret := range []string{"", "ops-ke", "ops-key-and-more"} {
			status, body := tn.callWith(t, secret, method, path, nil)
			if status != http.StatusUnauthorized || !strings.Contains(string(body), "ADMIN_SECRET") {
				t.Errorf("%s with secret %q: %d %s, want 401 naming ADMIN_SECRET", p, secret, status, body)
			}
		}
	}
	if status, _ := tn.call(t, http.MethodGet, "/api/info", nil); status != 200 {
		t.Fatalf("with the secret: %d", status)
	}
	if status, body := tn.call(t, http.MethodGet, "/api/nothing", nil); status != 404 || !strings.Contains(string(body), "openapi.json") {
		t.Fatalf("unknown path: %d %s", status, body)
	}
}

// Topics are listed with their subscriptions, most first, and narrowed by
// prefix and limit.
func TestTopics(t *testing.T) {
	tn := startNode(t, nodeOptions{})
	for _, sub := range []struct{ token, topic string }{
		{"dev-token-bob", "demo/general/a"}, {"dev-token-alice", "demo/general/a"}, {"dev-token-bob", "demo/general/b"},
	} {
		p := tn.client(t, sub.token)
		p.Send("type", "subscribe", "topic", sub.topic)
		p.ExpectType("subscribed")
	}
	var page admin.TopicsPage
	tn.get(t, "/api/topics", &page)
	if page.Total != 2 || len(page.Topics) != 2 || page.Topics[0].Subscribers != 2 || page.Topics[1].Subscribers != 1 ||
		!strings.HasSuffix(page.Topics[0].Topic, "/a") || !strings.HasSuffix(page.Topics[1].Topic, "/b") {
		t.Fatalf("topics %+v", page)
	}
	tn.get(t, "/api/topics?limit=1", &page)
	if page.Total != 2 || len(page.Topics) != 1 {
		t.Fatalf("limit 1: %+v", page)
	}
	prefix := strings.TrimSuffix(page.Topics[0].Topic, "a")
	tn.get(t, "/api/topics?prefix="+prefix+"b", &page)
	if page.Total != 1 || page.Topics[0].Subscribers != 1 {
		t.Fatalf("prefix %sb: %+v", prefix, page)
	}
}

// Presence lists the rooms with members, and one room's members with their
// presence data as JSON; an empty room is 404.
func TestPresence(t *testing.T) {
	tn := startNode(t, nodeOptions{})
	bob := tn.client(t, "dev-token-bob")
	bob.Send("type", "presence", "roomId", "general", "data", map[string]any{"status": "away"})
	bob.ExpectFields("type", "presence", "event", "join")
	var out struct{ Rooms []admin.PresenceRoom }
	tn.get(t, "/api/presence", &out)
	if len(out.Rooms) != 1 || out.Rooms[0].RoomID != "room-general" || out.Rooms[0].Room != "general" || out.Rooms[0].Members != 1 {
		t.Fatalf("rooms %+v", out.Rooms)
	}
	tn.get(t, "/api/presence?room=general", &out)
	if len(out.Rooms) != 1 || len(out.Rooms[0].List) != 1 {
		t.Fatalf("room general: %+v", out.Rooms)
	}
	m := out.Rooms[0].List[0]
	var data map[string]any
	if err := json.Unmarshal(m.Presence, &data); err != nil || m.Actor != "bob" || m.Node != "node-a" || data["status"] != "away" {
		t.Fatalf("member %+v (%s)", m, m.Presence)
	}
	if status, _ := tn.call(t, http.MethodGet, "/api/presence?room=nowhere", nil); status != 404 {
		t.Fatalf("empty room: %d, want 404", status)
	}
}

// Info reports the node, its readiness and what it holds.
func TestInfo(t *testing.T) {
	tn := startNode(t, nodeOptions{})
	tn.client(t, "dev-token-bob")
	tn.client(t, "dev-token-alice")
	var page admin.InfoPage
	tn.get(t, "/api/info", &page)
	if len(page.Info) != 1 {
		t.Fatalf("nodes %+v", page)
	}
	in := page.Info[0]
	if in.Node != "node-a" || in.Version != "test" || !in.Ready || in.Draining || in.Connections["websocket"] != 2 ||
		in.Connections["authenticated"] != 2 || len(in.Peers) != 0 {
		t.Fatalf("info %+v", in)
	}
	// A refused auth and a client that hangs up are counted as the metrics
	// count them.
	bad := testpeer.Dial(t, tn.ws)
	bad.Send("type", "auth", "token", "no-such-token")
	bad.ExpectFields("type", "auth", "success", false)
	_ = bad.Conn.Close()
	waitFor(t, 5*time.Second, "the refusal and the close counted", func() bool {
		tn.get(t, "/api/info", &page)
		in = page.Info[0]
		return in.Refused["auth:denied"] == 1 && in.Closed["peer_closed"] == 1
	})
}

// POST /api/drain asks the node's drain (exit by default, or stay), and
// answers 409 with the reason when one has begun already.
func TestDrainAsked(t *testing.T) {
	asked := make(chan bool, 4)
	refuse := false
	tn := startNode(t, nodeOptions{drain: func(exit bool) error {
		if refuse {
			return fmt.Errorf("a drain or a shutdown has already begun")
		}
		asked <- exit
		return nil
	}})
	tn.post(t, "/api/drain", nil, http.StatusAccepted, nil)
	if exit := <-asked; !exit {
		t.Fatal("an empty drain request stayed; want exit")
	}
	tn.post(t, "/api/drain", map[string]any{"exit": false}, http.StatusAccepted, nil)
	if exit := <-asked; exit {
		t.Fatal("exit false exited")
	}
	refuse = true
	status, body := tn.call(t, http.MethodPost, "/api/drain", nil)
	if status != http.StatusConflict || !strings.Contains(string(body), "already begun") {
		t.Fatalf("a second drain: %d %s, want 409 with the reason", status, body)
	}
	if status, _ := tn.call(t, http.MethodPost, "/api/drain", map[string]any{"node": "elsewhere"}); status != http.StatusNotFound {
		t.Fatalf("a drain of an unknown node: %d, want 404", status)
	}
}

// Requests are read strictly, so that a typo never widens or narrows an
// action without a word: an unknown or misspelt field or query parameter,
// a field given twice, invalid UTF-8 are 400 with the reason; a body over
// 64 KiB is 413; a path with another method is 405 with Allow; a trailing
// slash is 404 naming the path meant. The bearer scheme is
// case-insensitive.
func TestStrictRequests(t *testing.T) {
	tn := startNode(t, nodeOptions{secret: "k"})
	bob := tn.client(t, "dev-token-bob")
	for _, c := range []struct {
		body string
		want string
	}{
		{`{"ACTOR":"bob"}`, `unknown field \"ACTOR\"`},
		{`{"actor":"nobody","actor":"bob"}`, `field \"actor\" is given twice`},
		{"{\"actor\":\"\xff\"}", "not valid UTF-8"},
		{`{"actor":"bob"} {"actor":"bob"}`, "more than one JSON value"},
		{`["bob"]`, "not a JSON object"},
		{`{"actor":7}`, "not the JSON object expected"},
	} {
		status, body := tn.call(t, http.MethodPost, "/api/disconnect", c.body)
		if status != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
			t.Errorf("%q: %d %s, want 400 with %q", c.body, status, body, c.want)
		}
	}
	if status, body := tn.call(t, http.MethodPost, "/api/disconnect", `{"actor":"`+strings.Repeat("b", 70<<10)+`"}`); status != http.StatusRequestEntityTooLarge ||
		!strings.Contains(string(body), "65536 bytes") {
		t.Errorf("a 70 KiB body: %d %s, want 413 naming the bound", status, body)
	}
	for path, want := range map[string]string{
		"/api/connections?user=bob":             `unknown query parameter \"user\"`,
		"/api/connections?actor=a&actor=b":      `\"actor\" is given twice`,
		"/api/info?verbose=1":                   `unknown query parameter \"verbose\"`,
		"/api/presence?room=general&x=y":        `unknown query parameter \"x\"`,
		"/api/topics?prefix=demo&limits=100":    `unknown query parameter \"limits\"`,
		"/api/connections?actor=x%zz&project=p": "the query is malformed",
	} {
		if status, body := tn.call(t, http.MethodGet, path, nil); status != http.StatusBadRequest || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d %s, want 400 with %q", path, status, body, want)
		}
	}
	bob.ExpectNothing(50 * time.Millisecond) // nothing of that reached bob

	req, _ := http.NewRequest(http.MethodGet, tn.admin.URL+"/api/disconnect", nil)
	req.Header.Set("Authorization", "bearer k") // lower case: the scheme is case-insensitive
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET /api/disconnect: %d Allow %q, want 405 Allow POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
	if status, body := tn.call(t, http.MethodGet, "/api/connections/", nil); status != http.StatusNotFound ||
		!strings.Contains(string(body), "did you mean /api/connections") {
		t.Errorf("a trailing slash: %d %s", status, body)
	}
	if status, body := tn.callWith(t, "", http.MethodGet, "/api/info", nil); status != 401 || !strings.Contains(string(body), "missing bearer secret") {
		t.Errorf("no Authorization: %d %s", status, body)
	}
	req, _ = http.NewRequest(http.MethodGet, tn.admin.URL+"/api/info", nil)
	req.Header.Set("Authorization", "Basic a2s=")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("Basic authorization: %d, want 401", resp.StatusCode)
	}
}

// A request a web page of another site makes (a form POSTing /api/drain,
// a rebound DNS name) is refused with 403 and the reason, so a browser
// that opens a hostile page cannot act on a loopback admin listener that
// has no secret; tools and the status page (same-origin) are served.
func TestRequestsFromOtherSitesAreRefused(t *testing.T) {
	drained := make(chan bool, 4)
	tn := startNode(t, nodeOptions{drain: func(exit bool) error { drained <- exit; return nil }})
	for _, c := range []struct {
		header, value, want string
	}{
		{"Origin", "https://evil.example", "another origin"},
		{"Sec-Fetch-Site", "cross-site", "another site"},
		{"Sec-Fetch-Site", "same-site", "another site"},
		{"Host", "evil.example:9469", "not a loopback address"},
	} {
		req, _ := http.NewRequest(http.MethodPost, tn.admin.URL+"/api/drain", nil)
		if c.header == "Host" {
			req.Host = c.value
		} else {
			req.Header.Set(c.header, c.value)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), c.want) {
			t.Errorf("%s: %s: %d %s, want 403 with %q", c.header, c.value, resp.StatusCode, body, c.want)
		}
	}
	select {
	case <-drained:
		t.Fatal("a refused request drained the node")
	default:
	}
	req, _ := http.NewRequest(http.MethodPost, tn.admin.URL+"/api/drain", nil)
	req.Header.Set("Origin", tn.admin.URL) // the status page's own origin
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || !<-drained {
		t.Fatalf("a same-origin drain: %d, want 202", resp.StatusCode)
	}
}
