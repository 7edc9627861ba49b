package admin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/node"
)

// Config configures an API.
type Config struct {
	// Secret is the bearer secret every /api/ request must carry
	// (ADMIN_SECRET), the status page's included (GET /status itself holds
	// no figures and needs none): "Authorization: Bearer <Secret>". "" lets
	// every request in: only for an admin listener on loopback, which
	// config.Load enforces.
	Secret string
	// Version is the kraken version GET /api/info reports.
	Version string
	// Settings are the settings GET /api/info reports, by environment
	// variable name (never a secret).
	Settings map[string]string
	// Drain puts this node in lame-duck drain (node.Node.Drain over
	// DRAIN_SECONDS), then, when exit is set, shuts it down and ends the
	// process; it returns at once, with an error when a drain or a
	// shutdown has begun already. nil: POST /api/drain answers 409.
	Drain func(exit bool) error
	// Wait bounds how long a cluster-wide request waits for the other
	// nodes' answers; 0 means 3 s.
	Wait time.Duration
	// Logger receives a line per action (disconnect, revoke, drain); nil
	// means none.
	Logger *zap.Logger
}

// API is the admin API of one node (docs/operations.md, "Admin API"): the
// handlers of /api/... and the answerer of the other nodes' requests.
type API struct {
	n       *node.Node
	op      broker.Operator // nil on a single node
	cfg     Config
	log     *zap.Logger
	started time.Time
}

// New returns n's admin API. When n's broker carries requests between
// nodes (broker.Operator: BROKER_BACKEND=nats), every list and action
// covers the whole cluster, and this node answers the others' requests
// from now on; call New after n.Start.
func New(n *node.Node, cfg Config) *API {
	if cfg.Wait <= 0 {
		cfg.Wait = 3 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	a := &API{n: n, cfg: cfg, log: cfg.Logger, started: time.Now()}
	if op, ok := n.Broker().(broker.Operator); ok {
		a.op = op
		op.Answer(a.answerPeer)
	}
	return a
}

// Mux is where Register adds routes: an *http.ServeMux (its method and
// wildcard patterns).
type Mux interface {
	Handle(pattern string, h http.Handler)
}

// Register adds the API's routes to mux: the /api/ paths of
// docs/operations.md and GET /api/openapi.json, each behind the secret,
// and the status page that reads them, GET /status (status.go), which
// needs no secret itself.
func (a *API) Register(mux Mux) {
	rt := routes{}
	handle := func(pattern string, query []string, h http.HandlerFunc) {
		rt.add(pattern)
		mux.Handle(pattern, a.guard(func(w http.ResponseWriter, r *http.Request) {
			if checkQuery(w, r, query...) {
				h(w, r)
			}
		}))
	}
	mux.Handle("GET /status", http.HandlerFunc(serveStatus))
	handle("GET /api/connections", []string{"node", "conn_id", "actor", "project", "transport", "remote_addr", "limit", "after"},
		a.getConnections)
	handle("POST /api/disconnect", nil, a.postDisconnect)
	handle("POST /api/revoke", nil, a.postRevoke)
	handle("GET /api/topics", []string{"prefix", "node", "limit"}, a.getTopics)
	handle("GET /api/presence", []string{"room"}, a.getPresence)
	handle("GET /api/info", nil, a.getInfo)
	handle("POST /api/drain", nil, a.postDrain)
	handle("GET /api/openapi.json", nil, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openAPI)
	})
	mux.Handle("/api/", a.guard(rt.notFound))
}

// Guard wraps h with the API's secret check: 401 with a reason when the
// request's bearer secret is missing or wrong.
func (a *API) Guard(h http.Handler) http.Handler { return a.guard(h.ServeHTTP) }

func (a *API) guard(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if msg := a.foreign(r); msg != "" {
			writeError(w, http.StatusForbidden, msg)
			return
		}
		if a.cfg.Secret != "" {
			// The scheme is case-insensitive (RFC 9110 §11.1).
			scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
			got = strings.TrimSpace(got)
			if !strings.EqualFold(scheme, "Bearer") || got == "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="kraken admin"`)
				msg := "missing bearer secret: send Authorization: Bearer <ADMIN_SECRET>"
				if r.Header.Get("Authorization") != "" {
					msg = "the Authorization header is not a bearer secret: send Authorization: Bearer <ADMIN_SECRET>"
				}
				writeError(w, http.StatusUnauthorized, msg)
				return
			}
			if subtle.ConstantTimeCompare([]byte(got), []byte(a.cfg.Secret)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="kraken admin", error="invalid_token"`)
				writeError(w, http.StatusUnauthorized, "wrong bearer secret: it must equal ADMIN_SECRET")
				return
			}
		}
		h(w, r)
	})
}

// foreign says why r may come from a web page of another site, "" when it
// does not: a browser that visits a hostile page sends its requests with
// an Origin (and Sec-Fetch-Site) of that page, and a page that rebinds
// its own name to 127.0.0.1 sends its own name as Host. Without a secret
// the listener is on loopback and would otherwise do what any page a
// local browser opens asks (a form can POST /api/drain); with one, the
// checks cost nothing. Tools (curl, kraken admin) send none of these
// headers; the status page is same-origin.
func (a *API) foreign(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "refused: a request from another site's page (Sec-Fetch-Site: " + site + ")"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return "refused: a request from another origin's page (Origin: " + origin + ")"
		}
	}
	if a.cfg.Secret == "" && !edge.LoopbackHost(r.Host) {
		return "refused: Host " + strconv.Quote(r.Host) + " is not a loopback address, and without ADMIN_SECRET only loopback names are served"
	}
	return ""
}

// NodeStatus says how one node took part in a cluster-wide request.
type NodeStatus struct {
	Node string `json:"node"`
	// Self marks the node that was asked.
	Self bool `json:"self,omitempty"`
	// Answered is false for a node that did not answer in time; Error is
	// its error, or "no answer within <wait>".
	Answered bool   `json:"answered"`
	Error    string `json:"error,omitempty"`
	// Count is what the node counted: the connections it matched or
	// closed, the topics it holds.
	Count *int `json:"count,omitempty"`
}

// answerPeer runs another node's request on this node.
func (a *API) answerPeer(ctx context.Context, data []byte) []byte {
	var req request
	var ans answer
	if err := json.Unmarshal(data, &req); err != nil {
		ans = failed(400, "bad request from another node: %v", err)
	} else {
		ans = a.run(ctx, req)
		if req.Filter.Node == "" || req.Filter.Node == a.n.NodeID() { // a request for another node did nothing here
			a.logAction(req, ans, false)
		}
	}
	b, _ := json.Marshal(ans)
	return b
}

// everywhere runs req on this node and on every other live node, and
// returns the answers by node, this node's first, with each node's
// status. A filter naming one node skips the others.
func (a *API) everywhere(ctx context.Context, req request) ([]answer, []NodeStatus) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Wait)
	defer cancel()
	self := a.n.NodeID()
	type remote struct {
		got     []broker.Answer
		missing []string
	}
	var rem remote
	done := make(chan struct{})
	peers := []string(nil)
	var down map[string]time.Time
	if a.op != nil && req.Filter.Node != self {
		peers, down = a.op.Peers(), a.op.Down()
	}
	named := req.Filter.Node == "" || slices.Contains(peers, req.Filter.Node)
	if len(peers) > 0 && named { // a node named that is not live is not asked
		data, _ := json.Marshal(req)
		go func() { // owned here: waited for below
			defer close(done)
			rem.got, _ = a.op.Ask(ctx, data)
		}()
	} else {
		close(done)
	}
	answers := []answer{}
	status := []NodeStatus{}
	if req.Filter.Node == "" || req.Filter.Node == self {
		ans := a.run(ctx, req)
		answers = append(answers, ans)
		status = append(status, nodeStatus(self, true, ans))
	}
	<-done
	seen := map[string]bool{}
	for _, g := range rem.got {
		var ans answer
		if err := json.Unmarshal(g.Data, &ans); err != nil {
			ans = failed(500, "unreadable answer: %v", err)
		}
		seen[g.Node] = true
		if req.Filter.Node != "" && g.Node != req.Filter.Node {
			continue
		}
		answers = append(answers, ans)
		status = append(status, nodeStatus(g.Node, false, ans))
	}
	for _, p := range peers {
		if !seen[p] && (req.Filter.Node == "" || req.Filter.Node == p) {
			status = append(status, NodeStatus{Node: p, Error: "no answer within " + a.cfg.Wait.String() +
				"; it drops the request once that time has passed"})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(down)) {
		if req.Filter.Node == "" || req.Filter.Node == p {
			status = append(status, NodeStatus{Node: p, Error: "judged down at " +
				down[p].UTC().Format(time.RFC3339) + " (stopped, or silent): not asked, its connections not counted"})
		}
	}
	return answers, status
}

func nodeStatus(name string, self bool, ans answer) NodeStatus {
	s := NodeStatus{Node: name, Self: self, Answered: true, Error: ans.Error}
	if ans.Error == "" {
		n := ans.Closed + ans.Matched
		s.Count = &n
	}
	return s
}

// logAction logs an action that changes something (not the lists).
func (a *API) logAction(req request, ans answer, asked bool) {
	switch req.Op {
	case opDisconnect, opRevoke, opDrain:
	default:
		return
	}
	a.log.Info("admin action", zap.String("op", req.Op), zap.Bool("asked_here", asked),
		zap.Uint64("conn_id", req.Filter.ConnID), zap.String("actor", firstOf(req.Actor, req.Filter.Actor)),
		zap.String("project", req.Filter.Project), zap.String("node", req.Filter.Node),
		zap.Int("closed", ans.Closed), zap.Int("forgotten", ans.Forgotten), zap.String("error", ans.Error))
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// writeJSON writes v with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// writeError writes {"error": msg} with status.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}
