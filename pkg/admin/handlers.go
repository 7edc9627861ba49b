package admin

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/gobwas/ws"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
)

// Page sizes of GET /api/connections.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

// noSuchNode answers 404 when the request named a node (node) and no node
// of that name took part (nodes), and reports whether it did.
func noSuchNode(w http.ResponseWriter, node string, nodes []NodeStatus) bool {
	if node == "" || len(nodes) > 0 {
		return false
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"error": "no node " + strconv.Quote(node) +
		" is live in the cluster: GET /api/info lists the nodes", "nodes": nodes})
	return true
}

// filterOf reads the connection filter of a GET query.
func filterOf(r *http.Request) (filter, error) {
	q := r.URL.Query()
	f := filter{Node: q.Get("node"), Actor: q.Get("actor"), Project: q.Get("project"),
		Transport: q.Get("transport"), Remote: q.Get("remote_addr")}
	if s := q.Get("conn_id"); s != "" {
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil || id == 0 {
			return f, fmt.Errorf("conn_id %q: want a connection id, a positive integer", s)
		}
		f.ConnID = id
	}
	_, err := f.connFilter()
	return f, err
}

// ConnectionsPage is the answer of GET /api/connections.
type ConnectionsPage struct {
	Connections []Connection `json:"connections"`
	// Total counts every connection the filter matched, on every node
	// that answered.
	Total int `json:"total"`
	// Next is the after= value of the next page; "" on the last one.
	Next  string       `json:"next,omitempty"`
	Nodes []NodeStatus `json:"nodes"`
}

func (a *API) getConnections(w http.ResponseWriter, r *http.Request) {
	f, err := filterOf(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req := request{Op: opConnections, Filter: f, Limit: defaultLimit}
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want 1 to %d", s, maxLimit))
			return
		}
		req.Limit = n
	}
	if s := q.Get("after"); s != "" {
		if req.AfterNode, req.AfterID, err = parseCursor(s); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	answers, nodes := a.everywhere(r.Context(), req)
	if noSuchNode(w, f.Node, nodes) {
		return
	}
	page := ConnectionsPage{Connections: []Connection{}, Nodes: nodes}
	more := false
	for _, ans := range answers {
		page.Total += ans.Matched
		page.Connections = append(page.Connections, ans.Connections...)
		more = more || ans.More
	}
	sort.Slice(page.Connections, func(i, j int) bool {
		ci, cj := page.Connections[i], page.Connections[j]
		if ci.Node != cj.Node {
			return ci.Node < cj.Node
		}
		return ci.ConnID < cj.ConnID
	})
	if len(page.Connections) > req.Limit {
		page.Connections, more = page.Connections[:req.Limit], true
	}
	if more && len(page.Connections) > 0 {
		last := page.Connections[len(page.Connections)-1]
		page.Next = last.Node + "/" + strconv.FormatUint(last.ConnID, 10)
	}
	writeJSON(w, http.StatusOK, page)
}

// DisconnectRequest is the body of POST /api/disconnect: one target
// (conn_id, with node on a cluster; or actor; or project; optionally
// narrowed by transport and remote_addr), and the close code and reason
// text sent to WebSocket clients.
type DisconnectRequest struct {
	ConnID    uint64 `json:"conn_id,omitempty"`
	Node      string `json:"node,omitempty"`
	Actor     string `json:"actor,omitempty"`
	Project   string `json:"project,omitempty"`
	Transport string `json:"transport,omitempty"`
	Remote    string `json:"remote_addr,omitempty"`
	// Code is one of disconnect.OperatorCodes; 0 means 1008.
	Code int `json:"code,omitempty"`
	// Reason is the close frame's text, at most 123 bytes of UTF-8; ""
	// means "disconnected_by_operator".
	Reason string `json:"reason,omitempty"`
}

// ActionResult is the answer of POST /api/disconnect and /api/revoke.
type ActionResult struct {
	// Disconnected counts the connections closed, on every node.
	Disconnected int `json:"disconnected"`
	// Actor is the actor a revoked token belongs to; Forgotten counts the
	// cached validations dropped (revoke).
	Actor     string       `json:"actor,omitempty"`
	Forgotten *int         `json:"forgotten,omitempty"`
	Nodes     []NodeStatus `json:"nodes"`
}

func (a *API) postDisconnect(w http.ResponseWriter, r *http.Request) {
	var body DisconnectRequest
	if !readBody(w, r, &body) {
		return
	}
	f := filter{Node: body.Node, ConnID: body.ConnID, Actor: body.Actor, Project: body.Project,
		Transport: body.Transport, Remote: body.Remote}
	if _, err := f.connFilter(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if f.ConnID == 0 && f.Actor == "" && f.Project == "" {
		writeError(w, http.StatusBadRequest, "name the connections: conn_id (with node on a cluster), actor or project")
		return
	}
	if f.ConnID != 0 && f.Node == "" {
		if a.op != nil && (len(a.op.Peers()) > 0 || len(a.op.Down()) > 0) {
			writeError(w, http.StatusBadRequest, "conn_id needs its node on a cluster: every node numbers its connections from 1 (GET /api/connections lists both)")
			return
		}
		f.Node = a.n.NodeID() // a connection id is a node's own
	}
	if body.Code != 0 {
		if _, ok := disconnect.OperatorCodes[ws.StatusCode(body.Code)]; !ok {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("code %d: want one of %s (docs/operations.md)", body.Code, disconnect.OperatorCodeList()))
			return
		}
	}
	if len(body.Reason) > 123 || !utf8.ValidString(body.Reason) {
		writeError(w, http.StatusBadRequest, "reason: at most 123 bytes of UTF-8 (RFC 6455 §5.5)")
		return
	}
	req := request{Op: opDisconnect, Filter: f, Code: body.Code, Reason: body.Reason}
	answers, nodes := a.everywhere(r.Context(), req)
	if noSuchNode(w, f.Node, nodes) {
		return
	}
	res := ActionResult{Nodes: nodes}
	for _, ans := range answers {
		res.Disconnected += ans.Closed
	}
	a.logAction(req, answer{Closed: res.Disconnected}, true)
	writeJSON(w, http.StatusOK, res)
}

// RevokeRequest is the body of POST /api/revoke: actor or token.
type RevokeRequest struct {
	Actor string `json:"actor,omitempty"`
	Token string `json:"token,omitempty"`
	// Reason is the {type:"disconnect"} reason and close text sent to the
	// actor's WebSocket clients; "" means token_revoked.
	Reason string `json:"reason,omitempty"`
}

func (a *API) postRevoke(w http.ResponseWriter, r *http.Request) {
	var body RevokeRequest
	if !readBody(w, r, &body) {
		return
	}
	if (body.Actor == "") == (body.Token == "") {
		writeError(w, http.StatusBadRequest, "name one of actor or token")
		return
	}
	if len(body.Reason) > 123 || !utf8.ValidString(body.Reason) {
		writeError(w, http.StatusBadRequest, "reason: at most 123 bytes of UTF-8 (RFC 6455 §5.5)")
		return
	}
	req := request{Op: opRevoke, Actor: body.Actor, Reason: body.Reason}
	if body.Token != "" {
		ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Wait)
		actor, err := a.n.ActorOf(ctx, body.Token)
		cancel()
		switch {
		case errors.Is(err, auth.ErrDenied):
			writeError(w, http.StatusNotFound, "the auth backend does not know this token, so no actor can be named: revoke the actor instead")
			return
		case err != nil:
			writeError(w, http.StatusBadGateway, "the auth backend did not say whose token this is: "+err.Error())
			return
		}
		key := auth.KeyOf(body.Token)
		req.Actor, req.TokenKey = actor, hex.EncodeToString(key[:])
	}
	answers, nodes := a.everywhere(r.Context(), req)
	res := ActionResult{Actor: req.Actor, Nodes: nodes}
	forgotten := 0
	for _, ans := range answers {
		res.Disconnected += ans.Closed
		forgotten += ans.Forgotten
	}
	res.Forgotten = &forgotten
	a.logAction(req, answer{Closed: res.Disconnected, Forgotten: forgotten}, true)
	writeJSON(w, http.StatusOK, res)
}

// TopicsPage is the answer of GET /api/topics.
type TopicsPage struct {
	Topics []Topic `json:"topics"`
	// Total counts the topics that matched, before the limit.
	Total int          `json:"total"`
	Nodes []NodeStatus `json:"nodes"`
}

func (a *API) getTopics(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := defaultLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want 1 to %d", s, maxLimit))
			return
		}
		limit = n
	}
	answers, nodes := a.everywhere(r.Context(), request{Op: opTopics, Prefix: q.Get("prefix"), Filter: filter{Node: q.Get("node")}})
	if noSuchNode(w, q.Get("node"), nodes) {
		return
	}
	lists := make([][]Topic, len(answers))
	for i, ans := range answers {
		lists[i] = ans.Topics
	}
	all := mergeTopics(lists...)
	total := len(all) // at least: a node answers with its most subscribed keys only
	for _, ans := range answers {
		total = max(total, ans.Matched)
	}
	page := TopicsPage{Topics: all, Total: total, Nodes: nodes}
	if len(all) > limit {
		page.Topics = all[:limit]
	}
	writeJSON(w, http.StatusOK, page)
}

// PresenceRoom is one room in GET /api/presence.
type PresenceRoom struct {
	RoomID  string `json:"room_id"`
	Room    string `json:"room"`
	Members int    `json:"members"`
	// List is the members, oldest first, when one room was asked for.
	List []PresenceMember `json:"list,omitempty"`
}

// PresenceMember is one member of a room.
type PresenceMember struct {
	Node     string `json:"node"`
	ConnID   string `json:"conn_id"`
	Actor    string `json:"actor"`
	JoinedAt int64  `json:"joined_at"`
	// Presence is the member's presence data as JSON (MessagePack binary
	// values become base64 strings).
	Presence json.RawMessage `json:"presence"`
}

func (a *API) getPresence(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), a.cfg.Wait)
	defer cancel()
	room := r.URL.Query().Get("room")
	out := struct {
		Rooms []PresenceRoom `json:"rooms"`
	}{Rooms: []PresenceRoom{}}
	if room == "" {
		rooms, err := a.n.Protocol().PresenceRooms(ctx)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, "the presence registry did not answer: "+err.Error())
			return
		}
		for _, rm := range rooms {
			out.Rooms = append(out.Rooms, PresenceRoom{RoomID: rm.ID, Room: rm.Slug, Members: rm.Members})
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	byRoom, err := a.n.Protocol().PresenceOf(ctx, room)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "the presence registry did not answer: "+err.Error())
		return
	}
	for rm, ms := range byRoom {
		pr := PresenceRoom{RoomID: rm.ID, Room: rm.Slug, Members: len(ms), List: make([]PresenceMember, len(ms))}
		for i, m := range ms {
			pr.List[i] = PresenceMember{Node: m.Node, ConnID: m.ConnID, Actor: m.ActorTokenID, JoinedAt: m.JoinedAt,
				Presence: presenceJSON(m.Presence)}
		}
		out.Rooms = append(out.Rooms, pr)
	}
	sort.Slice(out.Rooms, func(i, j int) bool { return out.Rooms[i].RoomID < out.Rooms[j].RoomID })
	if len(out.Rooms) == 0 {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no room %q with members: GET /api/presence lists the rooms", room))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// presenceJSON converts a MessagePack value to JSON; null when it cannot.
func presenceJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	var buf bytes.Buffer
	if _, err := msgp.UnmarshalAsJSON(&buf, b); err != nil || !json.Valid(buf.Bytes()) {
		return json.RawMessage("null")
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes()))
}

// InfoPage is the answer of GET /api/info: every node that answered, the
// one asked first, and how each node took part, as in every answer.
type InfoPage struct {
	Info  []Info       `json:"info"`
	Nodes []NodeStatus `json:"nodes"`
}

func (a *API) getInfo(w http.ResponseWriter, r *http.Request) {
	answers, status := a.everywhere(r.Context(), request{Op: opInfo})
	page := InfoPage{Info: []Info{}, Nodes: status}
	for _, ans := range answers {
		if ans.Info != nil {
			page.Info = append(page.Info, *ans.Info)
		}
	}
	writeJSON(w, http.StatusOK, page)
}

// DrainRequest is the body of POST /api/drain (it may be empty).
type DrainRequest struct {
	// Node is the node to drain; "" means the one asked.
	Node string `json:"node,omitempty"`
	// Exit says whether the process ends once drained (true, the
	// default) or stays up, not ready and accepting nothing, until it is
	// stopped.
	Exit *bool `json:"exit,omitempty"`
}

func (a *API) postDrain(w http.ResponseWriter, r *http.Request) {
	var body DrainRequest
	if r.ContentLength != 0 {
		if !readBody(w, r, &body) {
			return
		}
	}
	if body.Node == "" {
		body.Node = a.n.NodeID()
	}
	req := request{Op: opDrain, Filter: filter{Node: body.Node}, Exit: body.Exit == nil || *body.Exit}
	answers, nodes := a.everywhere(r.Context(), req)
	if noSuchNode(w, body.Node, nodes) {
		return
	}
	if len(answers) == 0 {
		writeJSON(w, http.StatusGatewayTimeout, map[string]any{"error": "node " + strconv.Quote(body.Node) +
			" did not answer: " + nodes[0].Error, "nodes": nodes})
		return
	}
	a.logAction(req, answers[0], true)
	if ans := answers[0]; ans.Error != "" {
		writeJSON(w, ans.Status, map[string]any{"error": ans.Error, "nodes": nodes})
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"draining": body.Node, "exit": req.Exit, "nodes": nodes})
}
