package listener

import (
	"sync"

	"github.com/NoLagApp/kraken/pkg/auth"
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/hub"
)

// clients maps each connected client identifier to its connection, for
// the takeover of MQTT 3.1.1 §3.1.4: a CONNECT with the identifier of a
// connected client closes that client [MQTT-3.1.4-2]. An identifier is
// scoped by the actor of the token (the resumable sessions' identity,
// decisions.md OQ-51), so one tenant's device cannot close another's that
// happens to use the same identifier. This node's connections only: a
// client that reconnects to another node of a cluster does not close the
// old connection, which ends at its keep-alive.
type clients struct {
	mu sync.Mutex
	m  map[string]*conn
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

// take makes st the connection of its client identity and returns the one
// it replaces, or nil.
func (cs *clients) take(st *conn) (old *conn) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil {
		cs.m = make(map[string]*conn)
	}
	old = cs.m[st.clientKey]
	cs.m[st.clientKey] = st
	return old
}

// release forgets st's identity, unless a newer connection took it.
func (cs *clients) release(st *conn) {
	if st.clientKey == "" {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m[st.clientKey] == st {
		delete(cs.m, st.clientKey)
	}
}

// takeOver registers st under its client identifier and closes the
// connection that held it (its will is published when it has closed,
// will.go).
func (l *Listener) takeOver(st *conn, clientID string) {
	st.clientKey = clientKey(st.Conn, clientID)
	if old := l.clients.take(st); old != nil && old != st {
		l.hub.Close(old.Conn, disconnect.New(disconnect.SessionTakenOver))
	}
}
