package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/admin"
	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// The commands of kraken admin (cli_admin.go): each parses its flags,
// calls the admin API and prints its answer.

func adminList(c *adminCmd) int {
	actor := c.fs.String("actor", "", "only the connections of this actor")
	project := c.fs.String("project", "", "only the connections of this project")
	transport := c.fs.String("transport", "", "only websocket or mqtt connections")
	remote := c.fs.String("remote-addr", "", "only the connections from this IP address or CIDR network")
	node := c.fs.String("node", "", "only the connections of this node")
	limit := c.fs.Int("limit", 0, "at most this many connections per page, 1 to 1000 (default 100; 1000 with --all)")
	all := c.fs.Bool("all", false, "follow the pages to the last")
	if code, done := c.parse(c.argv); done {
		return code
	}
	if *transport != "" && *transport != "websocket" && *transport != "mqtt" {
		return c.usageError(fmt.Errorf("--transport %q: want websocket or mqtt", *transport))
	}
	if *limit < 0 || *limit > adminPageAll {
		return c.usageError(fmt.Errorf("--limit %d: want 1 to %d", *limit, adminPageAll))
	}
	q := url.Values{}
	for k, v := range map[string]string{"actor": *actor, "project": *project, "transport": *transport,
		"remote_addr": *remote, "node": *node} {
		if v != "" {
			q.Set(k, v)
		}
	}
	switch {
	case *limit > 0:
		q.Set("limit", strconv.Itoa(*limit))
	case *all:
		q.Set("limit", strconv.Itoa(adminPageAll))
	}
	return c.withSignals(func() int {
		var merged admin.ConnectionsPage
		nodes := map[string]int{} // index in merged.Nodes
		for first := true; ; first = false {
			raw, err := c.call("GET", "/api/connections?"+q.Encode(), nil)
			if err != nil {
				return c.fail(err)
			}
			var page admin.ConnectionsPage
			if err := c.decode(raw, &page); err != nil {
				return c.fail(err)
			}
			if first && !*all && c.json {
				if !c.warnNodes(page.Nodes) {
					return exitFail
				}
				c.writeJSON(raw)
				return exitOK
			}
			merged.Connections = append(merged.Connections, page.Connections...)
			merged.Total = page.Total
			for _, n := range page.Nodes { // a node that failed on any page stays failed
				if i, ok := nodes[n.Node]; !ok {
					nodes[n.Node] = len(merged.Nodes)
					merged.Nodes = append(merged.Nodes, n)
				} else if merged.Nodes[i].Answered && (!n.Answered || n.Error != "") {
					merged.Nodes[i] = n
				}
			}
			merged.Next = page.Next
			if !*all || page.Next == "" || page.Next == q.Get("after") || len(page.Connections) == 0 {
				break
			}
			q.Set("after", page.Next)
		}
		if !c.warnNodes(merged.Nodes) {
			return exitFail
		}
		if c.json {
			merged.Next = ""
			if merged.Connections == nil {
				merged.Connections = []admin.Connection{}
			}
			b, _ := json.MarshalIndent(merged, "", "  ")
			c.writeJSON(b)
			return exitOK
		}
		c.printConnections(merged, *all)
		return exitOK
	})
}

// printConnections prints page as a table and the total.
func (c *adminCmd) printConnections(page admin.ConnectionsPage, all bool) {
	if len(page.Connections) == 0 {
		fmt.Fprintf(c.stdout, "no connections (total %d)\n", page.Total)
		return
	}
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tCONN_ID\tACTOR\tPROJECT\tTRANSPORT\tREMOTE\tCONNECTED\tSUBS\tQUEUED")
	for _, cn := range page.Connections {
		actor := orDash(cn.Actor)
		if !cn.Authenticated && cn.Actor == "" {
			actor = "(not authenticated)"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", orDash(cn.Node), cn.ConnID, actor, orDash(cn.Project),
			orDash(cn.Transport), orDash(cn.RemoteAddr), cn.ConnectedAt.UTC().Format(time.RFC3339), cn.Subscriptions, cn.QueuedBytes)
	}
	_ = w.Flush()
	shown := len(page.Connections)
	switch {
	case shown >= page.Total:
		fmt.Fprintf(c.stdout, "total %d\n", page.Total)
	case page.Next != "" && !all:
		fmt.Fprintf(c.stdout, "total %d, %d shown: --all lists every one, --limit a larger page\n", page.Total, shown)
	default: // connections came and went between the pages
		fmt.Fprintf(c.stdout, "total %d, %d shown\n", page.Total, shown)
	}
}

func adminDisconnect(c *adminCmd) int {
	connID := c.fs.Uint64("conn-id", 0, "the connection with this id (CONN_ID of kraken admin list)")
	node := c.fs.String("node", "", "the node of --conn-id on a cluster (NODE of kraken admin list); with --actor or --project, only that node")
	actor := c.fs.String("actor", "", "every connection of this actor")
	project := c.fs.String("project", "", "every connection of this project")
	transport := c.fs.String("transport", "", "only websocket or mqtt connections")
	remote := c.fs.String("remote-addr", "", "only the connections from this IP address or CIDR network")
	code := c.fs.Int("code", 0, "the close code sent to WebSocket clients: "+disconnect.OperatorCodeList()+" (default 1008)")
	reason := c.fs.String("reason", "", "the close frame's text, at most 123 bytes (default disconnected_by_operator)")
	if code, done := c.parse(c.argv); done {
		return code
	}
	if *connID == 0 && *actor == "" && *project == "" {
		return c.usageError(errors.New("name the connections: --conn-id ID [--node N], --actor A or --project P"))
	}
	if *transport != "" && *transport != "websocket" && *transport != "mqtt" {
		return c.usageError(fmt.Errorf("--transport %q: want websocket or mqtt", *transport))
	}
	if *code != 0 {
		if _, ok := disconnect.OperatorCodes[ws.StatusCode(*code)]; !ok {
			return c.usageError(fmt.Errorf("--code %d: want one of %s", *code, disconnect.OperatorCodeList()))
		}
	}
	if len(*reason) > 123 {
		return c.usageError(fmt.Errorf("--reason is %d bytes: at most 123 fit in a close frame", len(*reason)))
	}
	body := admin.DisconnectRequest{ConnID: *connID, Node: *node, Actor: *actor, Project: *project,
		Transport: *transport, Remote: *remote, Code: *code, Reason: *reason}
	return c.withSignals(func() int {
		var res admin.ActionResult
		if code, done := c.ask("POST", "/api/disconnect", body, &res, func() []admin.NodeStatus { return res.Nodes }); done {
			return code
		}
		fmt.Fprintf(c.stdout, "disconnected %s\n", plural(res.Disconnected, "connection"))
		c.printNodeCounts(res.Nodes)
		return exitOK
	})
}

// ask calls method path with body, decodes the answer into v, warns
// about the nodes that did not take part (nodes, read once v is decoded)
// and, with --json, prints the answer as it came. done says the command
// ends there, with code: on a failure, or once the JSON is printed.
func (c *adminCmd) ask(method, path string, body, v any, nodes func() []admin.NodeStatus) (code int, done bool) {
	raw, err := c.call(method, path, body)
	if err != nil {
		return c.fail(err), true
	}
	if err := c.decode(raw, v); err != nil {
		return c.fail(err), true
	}
	if !c.warnNodes(nodes()) {
		return exitFail, true
	}
	if c.json {
		c.writeJSON(raw)
		return exitOK, true
	}
	return 0, false
}

// printNodeCounts prints each node's count, one line per node that
// answered.
func (c *adminCmd) printNodeCounts(nodes []admin.NodeStatus) {
	w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, n := range nodes {
		if n.Count == nil {
			continue
		}
		self := ""
		if n.Self {
			self = " (the node asked)"
		}
		fmt.Fprintf(w, "  %s%s\t%d\n", printable(n.Node), self, *n.Count)
	}
	_ = w.Flush()
}

func adminRevoke(c *adminCmd) int {
	actor := c.fs.String("actor", "", "revoke this actor: close its connections, drop its cached validations")
	token := c.fs.String("token", "", "revoke the actor this token belongs to (- reads the token from standard input)")
	reason := c.fs.String("reason", "", "the disconnect reason and close text sent to its clients (default token_revoked)")
	if code, done := c.parse(c.argv); done {
		return code
	}
	if (*actor == "") == (*token == "") {
		return c.usageError(errors.New("name one of --actor A or --token T"))
	}
	if len(*reason) > 123 {
		return c.usageError(fmt.Errorf("--reason is %d bytes: at most 123 fit in a close frame", len(*reason)))
	}
	if *token == "-" {
		line, err := bufio.NewReader(io.LimitReader(c.stdin, 64<<10)).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return c.fail(fmt.Errorf("read the token from standard input: %v", err))
		}
		if *token = strings.TrimSpace(line); *token == "" {
			return c.usageError(errors.New("--token -: standard input holds no token"))
		}
	}
	body := admin.RevokeRequest{Actor: *actor, Token: *token, Reason: *reason}
	return c.withSignals(func() int {
		var res admin.ActionResult
		if code, done := c.ask("POST", "/api/revoke", body, &res, func() []admin.NodeStatus { return res.Nodes }); done {
			return code
		}
		forgotten := 0
		if res.Forgotten != nil {
			forgotten = *res.Forgotten
		}
		fmt.Fprintf(c.stdout, "revoked actor %s: %s closed, %s dropped\n", printable(res.Actor),
			plural(res.Disconnected, "connection"), plural(forgotten, "cached validation"))
		c.printNodeCounts(res.Nodes)
		return exitOK
	})
}

func adminDrain(c *adminCmd) int {
	node := c.fs.String("node", "", "the node to drain (default the node asked)")
	stay := c.fs.Bool("stay", false, "keep the process up once drained, not ready, until it is stopped")
	wait := c.fs.Duration("wait", 0, "return once the node holds no client connection, failing after this long (0: return at once)")
	if code, done := c.parse(c.argv); done {
		return code
	}
	if *wait < 0 {
		return c.usageError(fmt.Errorf("--wait %v: want a duration of 0 or more", *wait))
	}
	exit := !*stay
	body := admin.DrainRequest{Node: *node, Exit: &exit}
	return c.withSignals(func() int {
		raw, err := c.call("POST", "/api/drain", body, http.StatusAccepted)
		var res struct {
			Draining string             `json:"draining"`
			Exit     bool               `json:"exit"`
			Nodes    []admin.NodeStatus `json:"nodes"`
		}
		decoded := raw != nil && json.Unmarshal(raw, &res) == nil
		var refused *apiError
		if errors.As(err, &refused) && refused.Status == http.StatusConflict && *wait > 0 && decoded && len(res.Nodes) == 1 {
			// Draining already (SIGUSR2, another operator, a preStop run
			// twice): waiting for its end is still what was asked.
			name := res.Nodes[0].Node
			fmt.Fprintf(c.stdout, "node %s: %s; waiting for it\n", printable(name), refused.Msg)
			return c.waitDrained(name, true, *wait)
		}
		if err != nil {
			for _, n := range res.Nodes {
				if !n.Answered { // the others' errors are the one printed below
					c.warnNodes([]admin.NodeStatus{n})
				}
			}
			return c.fail(err)
		}
		if c.json {
			c.writeJSON(raw)
			return exitOK
		}
		if res.Draining == "" {
			return c.fail(fmt.Errorf("the answer of %s names no node draining", c.base))
		}
		then := "it exits once drained"
		if !res.Exit {
			then = "it stays up, not ready, until it is stopped"
		}
		fmt.Fprintf(c.stdout, "draining node %s: %s\n", printable(res.Draining), then)
		if *wait > 0 {
			return c.waitDrained(res.Draining, res.Exit, *wait)
		}
		return exitOK
	})
}

// waitDrained polls node's client connections every half second until it
// holds none (or, when it exits once drained, until it stops answering),
// and fails after wait.
func (c *adminCmd) waitDrained(node string, exits bool, wait time.Duration) int {
	deadline := time.Now().Add(wait)
	q := url.Values{"node": {node}, "limit": {"1"}}
	for {
		raw, err := c.call("GET", "/api/connections?"+q.Encode(), nil)
		var page admin.ConnectionsPage
		var refused *apiError
		switch {
		case c.ctx != nil && c.ctx.Err() != nil:
			return c.fail(fmt.Errorf("stopped waiting for node %s: %w", printable(node), c.ctx.Err()))
		case err != nil && exits && errors.As(err, &refused) &&
			(refused.Status == 0 || refused.Status == http.StatusNotFound):
			// The listener is gone, or the node is no longer live in
			// the cluster: it has exited.
			fmt.Fprintf(c.stdout, "node %s is gone\n", printable(node))
			return exitOK
		case err != nil:
			return c.fail(err)
		case c.decode(raw, &page) != nil:
		case page.Total == 0 && nodeAnswered(page.Nodes, node):
			fmt.Fprintf(c.stdout, "node %s holds no client connection\n", printable(node))
			return exitOK
		}
		if time.Now().After(deadline) {
			return c.fail(fmt.Errorf("node %s still holds %s after %v", printable(node), plural(page.Total, "connection"), wait))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// nodeAnswered reports whether node answered in full (not in part, not
// late) among nodes.
func nodeAnswered(nodes []admin.NodeStatus, node string) bool {
	for _, n := range nodes {
		if n.Node == node {
			return n.Answered && n.Error == ""
		}
	}
	return false
}

func adminTopics(c *adminCmd) int {
	prefix := c.fs.String("prefix", "", "only the topics that begin with this")
	node := c.fs.String("node", "", "only the topics of this node")
	limit := c.fs.Int("limit", 0, "at most this many topics, 1 to 1000 (default 100)")
	if code, done := c.parse(c.argv); done {
		return code
	}
	if *limit < 0 || *limit > adminPageAll {
		return c.usageError(fmt.Errorf("--limit %d: want 1 to %d", *limit, adminPageAll))
	}
	q := url.Values{}
	if *prefix != "" {
		q.Set("prefix", *prefix)
	}
	if *node != "" {
		q.Set("node", *node)
	}
	if *limit > 0 {
		q.Set("limit", strconv.Itoa(*limit))
	}
	return c.withSignals(func() int {
		var page admin.TopicsPage
		if code, done := c.ask("GET", "/api/topics?"+q.Encode(), nil, &page, func() []admin.NodeStatus { return page.Nodes }); done {
			return code
		}
		if len(page.Topics) == 0 {
			fmt.Fprintln(c.stdout, "no topics")
			return exitOK
		}
		w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "TOPIC\tWILDCARD\tSUBSCRIBERS\tGROUPS")
		for _, t := range page.Topics {
			wild := "no"
			if t.Wildcard {
				wild = "yes"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\n", printable(t.Topic), wild, t.Subscribers, t.Groups)
		}
		_ = w.Flush()
		if len(page.Topics) < page.Total {
			fmt.Fprintf(c.stdout, "total %d, %d shown: --limit a larger page, --prefix fewer topics\n", page.Total, len(page.Topics))
		} else {
			fmt.Fprintf(c.stdout, "total %d\n", page.Total)
		}
		return exitOK
	})
}

func adminInfo(c *adminCmd) int {
	settings := c.fs.Bool("settings", false, "also print each node's settings (secrets masked)")
	if code, done := c.parse(c.argv); done {
		return code
	}
	return c.withSignals(func() int {
		var page admin.InfoPage
		if code, done := c.ask("GET", "/api/info", nil, &page, func() []admin.NodeStatus { return page.Nodes }); done {
			return code
		}
		self := map[string]bool{}
		for _, s := range page.Nodes {
			self[s.Node] = s.Self
		}
		for i, in := range page.Info {
			if i > 0 {
				fmt.Fprintln(c.stdout)
			}
			c.printInfo(in, self[in.Node], *settings)
		}
		return exitOK
	})
}

// printInfo prints one node's summary.
func (c *adminCmd) printInfo(in admin.Info, self, settings bool) {
	out := c.stdout
	state := "ready"
	switch {
	case in.Draining:
		state = "draining"
	case !in.Ready:
		state = "NOT READY"
	}
	asked := ""
	if self {
		asked = " (the node asked)"
	}
	fmt.Fprintf(out, "node %s%s: %s, version %s, up %s (since %s)\n", printable(in.Node), asked, state,
		printable(in.Version), (time.Duration(in.UptimeSeconds) * time.Second).Round(time.Second), in.StartedAt.UTC().Format(time.RFC3339))
	for _, k := range sortedKeys(in.NotReady) {
		fmt.Fprintf(out, "  not ready: %s: %s\n", printable(k), printable(in.NotReady[k]))
	}
	for _, k := range sortedKeys(in.Warnings) {
		fmt.Fprintf(out, "  warning: %s: %s\n", printable(k), printable(in.Warnings[k]))
	}
	fmt.Fprintf(out, "  connections: %d websocket, %d mqtt, %d authenticated; %s\n",
		in.Connections["websocket"], in.Connections["mqtt"], in.Connections["authenticated"], plural(int(in.Subscriptions), "subscription"))
	fmt.Fprintf(out, "  since start: %d published, %d deliveries, %d slow consumers\n", in.Published, in.Deliveries, in.SlowConsumers)
	if len(in.Refused) > 0 {
		fmt.Fprintf(out, "  refused: %s\n", countList(in.Refused))
	}
	if len(in.Closed) > 0 {
		fmt.Fprintf(out, "  closed: %s\n", countList(in.Closed))
	}
	if len(in.Peers) > 0 {
		peers := make([]string, len(in.Peers))
		for i, p := range in.Peers {
			peers[i] = printable(p)
		}
		fmt.Fprintf(out, "  peers: %s\n", strings.Join(peers, ", "))
	}
	if settings && len(in.Settings) > 0 {
		fmt.Fprintln(out, "  settings:")
		for _, k := range sortedKeys(in.Settings) {
			fmt.Fprintf(out, "    %s=%s\n", printable(k), printable(in.Settings[k]))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// countList renders counts by name as "name 3, other 1", the largest first.
func countList(m map[string]uint64) string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = printable(k) + " " + strconv.FormatUint(m[k], 10)
	}
	return strings.Join(parts, ", ")
}
