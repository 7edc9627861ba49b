package admin

import (
	"context"
	"time"

	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/edge"
	"github.com/NoLagApp/kraken/pkg/node"
	"github.com/NoLagApp/kraken/pkg/session"
)

// Info is one node in GET /api/info: who it is, whether it is ready, what
// it holds now, and its counters since it started (the status page turns
// those into rates).
type Info struct {
	Node          string    `json:"node"`
	Version       string    `json:"version"`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	// Ready is /ready's verdict; NotReady its failing checks, Warnings the
	// problems that leave it ready (name: reason).
	Ready    bool              `json:"ready"`
	NotReady map[string]string `json:"not_ready,omitempty"`
	Warnings map[string]string `json:"warnings,omitempty"`
	Draining bool              `json:"draining"`
	// Connections counts the open client connections by transport
	// ("websocket", "mqtt"), and "authenticated" among them.
	Connections   map[string]int64 `json:"connections"`
	Subscriptions int64            `json:"subscriptions"`
	// Counters since the node started. MessagesIn counts the publishes
	// this node accepted from its clients (and POST /internal/publish);
	// Published the publications it fanned out, other nodes' included, so
	// a cluster's publish rate is the sum of MessagesIn, not of Published.
	MessagesIn    uint64 `json:"messages_in"`
	Published     uint64 `json:"published"`
	Deliveries    uint64 `json:"deliveries"`
	SlowConsumers uint64 `json:"slow_consumers"`
	// Refused counts refusals by reason: the edge limits' (at accept), the
	// auths refused ("auth:<outcome>", kraken_auth_results_total's), and
	// the publishes and subscriptions refused, as "publish:<reason>" and
	// "subscribe:<reason>"; Closed the WebSocket and MQTT connections that
	// ended, by close reason, peer_closed included
	// (kraken_connections_closed_total's).
	Refused map[string]uint64 `json:"refused"`
	Closed  map[string]uint64 `json:"closed"`
	// Peers are the other live nodes this node knows (a cluster on
	// BROKER_BACKEND=nats).
	Peers []string `json:"peers"`
	// Settings are the settings an operator checks first (Config.Settings).
	Settings map[string]string `json:"settings,omitempty"`
}

// info reads this node's Info.
func (a *API) info(context.Context) Info {
	st := a.n.Stats()
	in := Info{Node: a.n.NodeID(), Version: a.cfg.Version, StartedAt: a.started.UTC().Truncate(time.Second),
		UptimeSeconds: time.Since(a.started).Truncate(time.Millisecond).Seconds(),
		Draining:      a.n.Draining(), Subscriptions: st.Hub.Subscriptions,
		Published: st.Hub.Publications, Deliveries: st.Hub.Deliveries, SlowConsumers: st.Hub.SlowConsumers,
		Connections: map[string]int64{
			node.KindWebSocket.String(): st.Open[node.KindWebSocket],
			node.KindMQTT.String():      st.Open[node.KindMQTT],
			"authenticated":             st.AuthenticatedConns,
		},
		Refused: map[string]uint64{}, Closed: map[string]uint64{}, Peers: []string{}, Settings: a.cfg.Settings}
	failing := a.n.NotReady()
	in.Ready = len(failing) == 0
	if len(failing) > 0 {
		in.NotReady = map[string]string{}
		for _, f := range failing {
			in.NotReady[f.Name] = f.Err.Error()
		}
	}
	if w := a.n.ReadyWarnings(); len(w) > 0 {
		in.Warnings = map[string]string{}
		for _, f := range w {
			in.Warnings[f.Name] = f.Err.Error()
		}
	}
	for r, n := range a.n.Refused() {
		if n > 0 {
			in.Refused[edge.Refusal(r).String()] = n
		}
	}
	for r := range session.NumRefusals {
		if n := st.PublishRefused[r]; n > 0 {
			in.Refused["publish:"+session.Refusal(r).String()] = n
		}
		if n := st.SubscribeRefused[r]; n > 0 {
			in.Refused["subscribe:"+session.Refusal(r).String()] = n
		}
	}
	for _, o := range session.AuthOutcomes {
		if n := st.Auth[o]; o != session.AuthOK && n > 0 {
			in.Refused["auth:"+o.String()] = n
		}
	}
	for _, n := range st.Published {
		in.MessagesIn += n
	}
	// As kraken_connections_closed_total: by close reason, peer_closed
	// included; plain HTTP requests (probes) are not connections.
	for k := range st.Closed {
		if node.Kind(k) == node.KindHTTP {
			continue
		}
		for r, n := range st.Closed[k] {
			if n > 0 {
				in.Closed[disconnect.Reason(r).String()] += n
			}
		}
	}
	if a.op != nil {
		in.Peers = append(in.Peers, a.op.Peers()...)
	}
	return in
}
