package listener

import (
	"sync"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// clients is the listener's client identities (actor and client
// identifier): the connection of each, for the takeover of MQTT 3.1.1
// §3.1.4 (a CONNECT with the identifier of a connected client closes that
// client [MQTT-3.1.4-2]), the persistent sessions kept for them while
// disconnected, and the CONNECTs waiting for the session of a connection
// they took over (sessions.go). An identifier is scoped by the actor of
// the token (the resumable sessions' identity, decisions.md OQ-51), so one
// tenant's device cannot close another's that happens to use the same
// identifier, nor take its session. This node's connections only: a
// client that reconnects to another node of a cluster does not close the
// old connection, which ends at its keep-alive. One mutex, taken at
// CONNECT, at close and when a session is parked or expires.
type clients struct {
	mu sync.Mutex
	// m is identity → its connection, keyed by the connection's own
	// clientKey (connset.go). A Clean Session 0 connection's session state
	// is read from it under the mutex (conn.heldSession).
	m       connSet
	kept    map[string]*kept // identity → its session, while disconnected
	waiting map[string]*conn // identity → a Clean Session 0 CONNECT waiting for a takeover's session
}

// clientKey is the identity of a client: its actor and identifier.
func clientKey(c *hub.Conn, id string) string {
	actor := ""
	if s := c.Session(); s != nil {
		if g, ok := s.Grant.(*auth.Grant); ok {
			actor = g.ActorTokenID
		}
	}
	return actor + "\x00" + id
}

// release forgets a Clean Session 1 connection's identity, unless a newer
// connection took it; a Clean Session 0 one is forgotten by Park.
func (cs *clients) release(st *conn) {
	if st.clientKey == "" || st.persistent() != nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.m.remove(st)
}

// sessions returns the number of sessions kept while disconnected.
func (cs *clients) sessions() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.kept)
}
