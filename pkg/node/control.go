package node

import (
	"cmp"
	"context"
	"errors"
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// The node's side of the admin API (pkg/admin, docs/operations.md): what
// this node holds, and the actions on its own connections. The admin API
// carries each to the other nodes of a cluster itself.

// ConnFilter selects client connections (WebSocket and MQTT; plain HTTP
// requests and the connections a transport keeps for itself are never
// selected). A zero field selects every connection; set fields must all
// match.
type ConnFilter struct {
	// ID is a connection id (hub.Conn.ID, the conn_id of the log lines).
	ID uint64
	// Actor is the actor token id (auth.Grant.ActorTokenID); Project the
	// project id. A connection not authenticated yet has neither.
	Actor, Project string
	// Kind is the transport.
	Kind Kind
	// Remote holds the client address (the PROXY protocol's or a trusted
	// proxy's when those apply, docs/SECURITY.md): one address is a /32 or
	// /128 prefix.
	Remote netip.Prefix
}

// Empty reports whether f selects every connection.
func (f ConnFilter) Empty() bool {
	return f.ID == 0 && f.Actor == "" && f.Project == "" && f.Kind == 0 && !f.Remote.IsValid()
}

// ConnInfo describes one client connection.
type ConnInfo struct {
	ID uint64
	// Actor and Project are "" until the connection authenticates.
	Actor, Project string
	Kind           Kind
	// RemoteAddr is the client's address and port ("" when unknown).
	RemoteAddr string
	// OpenedAt is when the connection was accepted.
	OpenedAt time.Time
	// Subscriptions is how many subscriptions it holds; QueuedBytes the
	// bytes queued for it that its socket has not taken yet.
	Subscriptions, QueuedBytes int
	// Authenticated reports whether it has authenticated.
	Authenticated bool
}

// selects reports whether f selects c; it runs on c's worker.
func (n *Node) selects(f ConnFilter, c *hub.Conn) bool {
	k := n.kind(c)
	if k != KindWebSocket && k != KindMQTT || c.Phase() == hub.PhaseHandshake {
		return false
	}
	if f.ID != 0 && c.ID != f.ID || f.Kind != 0 && k != f.Kind {
		return false
	}
	if f.Actor != "" || f.Project != "" {
		s := c.Session()
		if c.Phase() != hub.PhaseAuthed || s == nil {
			return false
		}
		g, _ := s.Grant.(*auth.Grant)
		if g == nil || f.Actor != "" && g.ActorTokenID != f.Actor || f.Project != "" && g.ProjectID != f.Project {
			return false
		}
	}
	if f.Remote.IsValid() && !f.Remote.Contains(peerOf(c)) {
		return false
	}
	return true
}

// Connections returns a page of this node's client connections f
// selects: those with an id above after, the lowest ids first, at most
// limit of them (limit <= 0: all), with matched, how many f selects in
// all, and more, whether some above after were left out. It asks every
// worker twice (hub.Gather): for the ids f selects (8 bytes each), then
// for what the page shows, so a page of a node holding a million
// connections costs the ids, not a million descriptions. On ctx's end it
// returns what it has, and ctx.Err().
func (n *Node) Connections(ctx context.Context, f ConnFilter, after uint64, limit int) (page []ConnInfo, matched int, more bool, err error) {
	ids, err := hub.Gather(ctx, n.hub, func(c *hub.Conn) (uint64, bool) { return c.ID, n.selects(f, c) })
	matched = len(ids)
	slices.Sort(ids)
	ids = ids[sort.Search(len(ids), func(i int) bool { return ids[i] > after }):]
	if limit > 0 && len(ids) > limit {
		ids, more = ids[:limit], true
	}
	if len(ids) == 0 || err != nil {
		return nil, matched, more, err
	}
	want := make(map[uint64]struct{}, len(ids))
	for _, id := range ids {
		want[id] = struct{}{}
	}
	page, err = hub.Gather(ctx, n.hub, func(c *hub.Conn) (ConnInfo, bool) {
		if _, ok := want[c.ID]; !ok {
			return ConnInfo{}, false
		}
		ci := ConnInfo{ID: c.ID, Kind: n.kind(c), OpenedAt: c.OpenedAt(),
			Subscriptions: c.SubscriptionCount(), QueuedBytes: c.QueuedBytes()}
		if ra := c.RemoteAddr(); ra != nil {
			ci.RemoteAddr = ra.String()
		}
		if s := c.Session(); c.Phase() == hub.PhaseAuthed && s != nil {
			if g, _ := s.Grant.(*auth.Grant); g != nil {
				ci.Actor, ci.Project, ci.Authenticated = g.ActorTokenID, g.ProjectID, true
			}
		}
		return ci, true
	})
	slices.SortFunc(page, func(a, b ConnInfo) int { return cmp.Compare(a.ID, b.ID) })
	return page, matched, more, err
}

// ErrNoFilter is Disconnect's error for an empty filter: closing every
// connection is a drain (Drain), not a disconnect.
var ErrNoFilter = errors.New("node: a disconnect needs a connection id, an actor, a project, a transport or an address")

// Disconnect closes this node's client connections f selects with d (a
// close frame with its code and text on a WebSocket; MQTT has no close
// code, its connections are just closed) and returns how many. An empty f
// is refused (ErrNoFilter). When ctx ends before every worker answered,
// the count is of those that did, with ctx.Err(); the others still close
// their share when they get to it.
func (n *Node) Disconnect(ctx context.Context, f ConnFilter, d disconnect.Disconnect) (int, error) {
	if f.Empty() {
		return 0, ErrNoFilter
	}
	// Each is closed on its worker, in the gathering itself: a worker
	// that answers after ctx ended still closes its share.
	closed, err := hub.Gather(ctx, n.hub, func(c *hub.Conn) (struct{}, bool) {
		if !n.selects(f, c) {
			return struct{}{}, false
		}
		c.CloseNow(d)
		return struct{}{}, true
	})
	return len(closed), err
}

// Revoker is the part of an auth backend that forgets validations, for
// Revoke: auth.Cache. Without one, nothing is cached to forget.
type Revoker interface {
	ActorOf(ctx context.Context, token string) (string, error)
	Forget(key *auth.TokenKey, actor string) int
}

func (n *Node) revoker() Revoker {
	r, _ := n.proto.Config().Auth.(Revoker)
	return r
}

// ActorOf returns the actor token is the token of, as the auth backend
// says (auth.Cache.ActorOf): an error wrapping auth.ErrDenied when the
// backend does not know the token.
func (n *Node) ActorOf(ctx context.Context, token string) (string, error) {
	if r := n.revoker(); r != nil {
		return r.ActorOf(ctx, token)
	}
	g, err := n.proto.Config().Auth.Validate(ctx, token)
	switch {
	case err != nil:
		return "", err
	case g == nil: // as the session reads it (access_denied)
		return "", auth.ErrDenied
	}
	return g.ActorTokenID, nil
}

// Revoke revokes actor on this node: the cached validations of the token
// whose key is given (nil: none) and of every token of actor are dropped,
// so a reconnect is validated by the auth backend again, and actor's
// connections are closed as a revoked token's are (session.Protocol.Revoke:
// {type:"disconnect", reason}, then 4001; reason "" means token_revoked).
// It returns the connections closed and the cache entries dropped. The
// backend still decides the next validation: revoking for good is done
// there (the token file, the auth service).
func (n *Node) Revoke(ctx context.Context, actor string, key *auth.TokenKey, reason string) (closed, forgotten int, err error) {
	if r := n.revoker(); r != nil {
		forgotten = r.Forget(key, actor)
	}
	if actor == "" {
		return 0, forgotten, nil
	}
	// As Disconnect: revoked from its worker, even after ctx ended.
	revoked, err := hub.Gather(ctx, n.hub, func(c *hub.Conn) (struct{}, bool) {
		if !n.selects(ConnFilter{Actor: actor}, c) {
			return struct{}{}, false
		}
		n.proto.Revoke(c, reason)
		return struct{}{}, true
	})
	return len(revoked), forgotten, err
}

// TopicCount is one routing key with its subscriptions (hub.TopicCount).
type TopicCount = hub.TopicCount

// SortTopics orders topic counts as Topics answers them (hub.SortTopics):
// most subscriptions first, then by key.
func SortTopics(ts []TopicCount) { hub.SortTopics(ts) }

// Topics returns this node's routing keys with subscriptions, most
// subscribed first (hub.Hub.Topics).
func (n *Node) Topics(ctx context.Context, prefix string, limit int) ([]hub.TopicCount, int, error) {
	return n.hub.Topics(ctx, prefix, limit)
}

// NodeID returns this node's id (NODE_ID; a random one when unset).
func (n *Node) NodeID() string { return n.proto.Config().NodeID }
