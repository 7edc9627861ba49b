package admin

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/gobwas/ws"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/node"
)

// The operations every node runs on itself: the HTTP handlers run them on
// the node that was asked, and the same request goes to the other nodes
// over the broker (cluster.go), as JSON.

// Operation names (request.Op).
const (
	opConnections = "connections"
	opDisconnect  = "disconnect"
	opRevoke      = "revoke"
	opTopics      = "topics"
	opInfo        = "info"
	opDrain       = "drain"
)

// request is one operation, as a node runs it and as it travels to the
// other nodes.
type request struct {
	Op     string `json:"op"`
	Filter filter `json:"filter"`
	// Connections: the page.
	Limit     int    `json:"limit,omitempty"`
	AfterNode string `json:"after_node,omitempty"`
	AfterID   uint64 `json:"after_id,omitempty"`
	// Disconnect and revoke.
	Code   int    `json:"code,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Revoke: the actor, and the token's key (hex SHA-256) when a token
	// was named.
	Actor    string `json:"actor,omitempty"`
	TokenKey string `json:"token_key,omitempty"`
	// Topics.
	Prefix string `json:"prefix,omitempty"`
	// Drain.
	Exit bool `json:"exit,omitempty"`
}

// filter is node.ConnFilter as JSON, with the node it is for ("": every
// node).
type filter struct {
	Node      string `json:"node,omitempty"`
	ConnID    uint64 `json:"conn_id,omitempty"`
	Actor     string `json:"actor,omitempty"`
	Project   string `json:"project,omitempty"`
	Transport string `json:"transport,omitempty"`
	Remote    string `json:"remote_addr,omitempty"`
}

// connFilter converts f; an error names the bad field.
func (f filter) connFilter() (node.ConnFilter, error) {
	cf := node.ConnFilter{ID: f.ConnID, Actor: f.Actor, Project: f.Project}
	switch f.Transport {
	case "":
	case "websocket":
		cf.Kind = node.KindWebSocket
	case "mqtt":
		cf.Kind = node.KindMQTT
	default:
		return cf, fmt.Errorf("transport %q: want websocket or mqtt", f.Transport)
	}
	if f.Remote != "" {
		if p, err := netip.ParsePrefix(f.Remote); err == nil {
			cf.Remote = p.Masked()
		} else if a, err := netip.ParseAddr(f.Remote); err == nil {
			a = a.Unmap()
			cf.Remote = netip.PrefixFrom(a, a.BitLen())
		} else {
			return cf, fmt.Errorf("remote_addr %q: want an IP address or a CIDR network", f.Remote)
		}
	}
	return cf, nil
}

// Connection is one client connection in GET /api/connections.
type Connection struct {
	Node          string    `json:"node"`
	ConnID        uint64    `json:"conn_id"`
	Actor         string    `json:"actor"`
	Project       string    `json:"project"`
	Transport     string    `json:"transport"`
	RemoteAddr    string    `json:"remote_addr"`
	ConnectedAt   time.Time `json:"connected_at"`
	Authenticated bool      `json:"authenticated"`
	Subscriptions int       `json:"subscriptions"`
	QueuedBytes   int       `json:"queued_bytes"`
}

// answer is one node's answer to a request: the fields of its operation,
// or Error.
type answer struct {
	Error string `json:"error,omitempty"`
	// Status is the HTTP status Error goes with (400, 404, 409, 500).
	Status int `json:"status,omitempty"`
	// Connections: the page, every match, and whether more follow the page.
	Connections []Connection `json:"connections,omitempty"`
	Matched     int          `json:"matched,omitempty"`
	More        bool         `json:"more,omitempty"`
	// Disconnect and revoke: connections closed; revoke: cached
	// validations dropped.
	Closed    int `json:"closed,omitempty"`
	Forgotten int `json:"forgotten,omitempty"`
	// Topics.
	Topics []Topic `json:"topics,omitempty"`
	// Info.
	Info *Info `json:"info,omitempty"`
}

func failed(status int, format string, args ...any) answer {
	return answer{Error: fmt.Sprintf(format, args...), Status: status}
}

// Topic is one routing key in GET /api/topics.
type Topic struct {
	Topic       string `json:"topic"`
	Wildcard    bool   `json:"wildcard"`
	Subscribers int    `json:"subscribers"`
	Groups      int    `json:"groups"`
}

// maxNodeTopics bounds the topics a node answers with, its most
// subscribed: an answer from another node travels as one NATS message
// (1 MB by default). The totals of the topics below a node's first
// maxNodeTopics leave that node's share out.
const maxNodeTopics = 5000

// maxTopicsBytes bounds a node's topics answer, in bytes of JSON (about):
// well under NATS's default 1 MB payload, whatever the topics' lengths.
const maxTopicsBytes = 512 << 10

// run runs req on this node.
func (a *API) run(ctx context.Context, req request) answer {
	self := a.n.NodeID()
	if req.Filter.Node != "" && req.Filter.Node != self {
		return answer{}
	}
	switch req.Op {
	case opConnections:
		return a.connections(ctx, req)
	case opDisconnect:
		cf, err := req.Filter.connFilter()
		if err != nil {
			return failed(400, "%v", err)
		}
		d := disconnect.Disconnect{Reason: disconnect.Operator, Code: ws.StatusCode(req.Code), Text: req.Reason}
		if _, ok := disconnect.OperatorCodes[ws.StatusCode(req.Code)]; req.Code != 0 && !ok || len(req.Reason) > 123 {
			return failed(400, "code %d or a reason of %d bytes: not an operator's close", req.Code, len(req.Reason))
		}
		n, err := a.n.Disconnect(ctx, cf, d)
		switch {
		case errors.Is(err, node.ErrNoFilter):
			return failed(400, "%v", err)
		case err != nil:
			return answer{Closed: n, Error: "partial: some workers did not answer in time (" + err.Error() +
				"); they close their share when they get to it", Status: 503}
		}
		return answer{Closed: n}
	case opRevoke:
		var key *auth.TokenKey
		if req.TokenKey != "" {
			var k auth.TokenKey
			if b, err := hex.DecodeString(req.TokenKey); err == nil && len(b) == len(k) {
				copy(k[:], b)
				key = &k
			}
		}
		if len(req.Reason) > 123 {
			return failed(400, "a reason of %d bytes: at most 123", len(req.Reason))
		}
		closed, forgotten, err := a.n.Revoke(ctx, req.Actor, key, req.Reason)
		if err != nil {
			return answer{Closed: closed, Forgotten: forgotten, Error: "partial: some workers did not answer in time (" +
				err.Error() + "); they revoke their share when they get to it", Status: 503}
		}
		return answer{Closed: closed, Forgotten: forgotten}
	case opTopics:
		tc, matched, _ := a.n.Topics(ctx, req.Prefix, maxNodeTopics)
		size, n := 0, 0
		for ; n < len(tc); n++ { // the answer travels as one NATS message
			if size += len(tc[n].Key) + 64; size > maxTopicsBytes {
				break
			}
		}
		return answer{Topics: topicsOf(tc[:n]), Matched: matched}
	case opInfo:
		info := a.info(ctx)
		return answer{Info: &info}
	case opDrain:
		if req.Filter.Node == "" {
			return failed(400, "a drain names its node")
		}
		if a.cfg.Drain == nil {
			return failed(409, "this node takes no drain from the admin API")
		}
		if err := a.cfg.Drain(req.Exit); err != nil {
			return failed(409, "%v", err)
		}
		return answer{}
	}
	return failed(400, "unknown operation %q", req.Op)
}

// connections runs opConnections: this node's page after the cursor.
func (a *API) connections(ctx context.Context, req request) answer {
	cf, err := req.Filter.connFilter()
	if err != nil {
		return failed(400, "%v", err)
	}
	self := a.n.NodeID()
	after := uint64(0)
	switch {
	case req.AfterNode > self: // the page has passed this node
		after = ^uint64(0)
	case req.AfterNode == self:
		after = req.AfterID
	}
	var list []node.ConnInfo
	ans := answer{}
	if after == ^uint64(0) {
		_, ans.Matched, _, err = a.n.Connections(ctx, cf, after, 1)
	} else {
		list, ans.Matched, ans.More, err = a.n.Connections(ctx, cf, after, req.Limit)
	}
	if err != nil { // some workers did not answer in time: the list is partial
		ans.Error, ans.Status = "partial: "+err.Error(), 503
	}
	for _, ci := range list {
		ans.Connections = append(ans.Connections, Connection{Node: self, ConnID: ci.ID, Actor: ci.Actor,
			Project: ci.Project, Transport: ci.Kind.String(), RemoteAddr: ci.RemoteAddr,
			ConnectedAt: ci.OpenedAt.UTC().Truncate(time.Millisecond), Authenticated: ci.Authenticated,
			Subscriptions: ci.Subscriptions, QueuedBytes: ci.QueuedBytes})
	}
	return ans
}

// parseCursor reads a page cursor, "<node>/<conn_id>".
func parseCursor(s string) (string, uint64, error) {
	i := strings.LastIndexByte(s, '/')
	if i < 0 {
		return "", 0, fmt.Errorf("after %q: want the next value of the previous page", s)
	}
	id, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("after %q: want the next value of the previous page", s)
	}
	return s[:i], id, nil
}

// mergeTopics sums the nodes' topics by key and sorts them as
// hub.Hub.Topics does (node.SortTopics).
func mergeTopics(lists ...[]Topic) []Topic {
	type key struct {
		t string
		w bool
	}
	sum := map[key]*node.TopicCount{}
	for _, l := range lists {
		for _, t := range l {
			k := key{t.Topic, t.Wildcard}
			if s := sum[k]; s != nil {
				s.Subscribers += t.Subscribers
				s.Groups = max(s.Groups, t.Groups) // a group spans nodes: counted once
				continue
			}
			sum[k] = &node.TopicCount{Key: t.Topic, Wildcard: t.Wildcard, Subscribers: t.Subscribers, Groups: t.Groups}
		}
	}
	counts := make([]node.TopicCount, 0, len(sum))
	for _, t := range sum {
		counts = append(counts, *t)
	}
	node.SortTopics(counts)
	return topicsOf(counts)
}

// topicsOf converts the hub's topic counts to the API's.
func topicsOf(tc []node.TopicCount) []Topic {
	out := make([]Topic, len(tc))
	for i, t := range tc {
		out[i] = Topic{Topic: t.Key, Wildcard: t.Wildcard, Subscribers: t.Subscribers, Groups: t.Groups}
	}
	return out
}
