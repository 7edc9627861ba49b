package hub

import "time"

// Parker is a Transport whose connections' subscriptions may outlive them
// (an MQTT persistent session, MQTT 3.1.1 §3.1.2.4): Park is called on
// the connection's worker when it is unregistered, with the subscriptions
// it held (their SubSpecs, newest first), right after they were removed and
// before anything else runs on that worker, so a connection it Adopts
// there with them misses no publication. It must not block.
type Parker interface {
	Park(c *Conn, specs []SubSpec)
}

// Adopt registers a connection on t on c's worker and gives it specs, at
// once, before the worker handles anything else: a closing connection's
// subscriptions live on in it with no publication in between (a parked
// resumable session, pkg/resume). Call it only on c's worker (Hub.Run, or
// Config.OnClose for c). The new connection is in PhaseAuthed without a
// session; its reply frames in specs are ignored.
func (c *Conn) Adopt(t Transport, specs []SubSpec) *Conn {
	c.w.mustOwn("Adopt")
	w := c.w
	w.h.forms.register(t.Encoding())
	now := time.Now().UnixNano()
	n := &Conn{ID: w.h.nextID.Add(1), t: t, enc: t.Encoding().ID(), qos1: qos1Capable(t), w: w, created: now, idx: -1}
	n.lastRead.Store(now)
	n.phase.Store(uint32(PhaseAuthed))
	w.handle(&op{kind: opRegister, c: n})
	for i := range specs {
		s := specs[i]
		s.Reply, s.TooMany = nil, nil
		w.subscribe(n, &s)
	}
	return n
}
