package session

import "github.com/NoLagApp/kraken/pkg/hub"

// State is the session's part of one connection: its hub record and the
// per-second windows of its rate limit and error budget. A transport
// embeds it in its own per-connection state, so a connection costs no
// allocation of the session's (16 bytes beside the record's pointer). It
// is owned by the connection's reader (the transport's read callback,
// never run concurrently with itself): not safe for concurrent use.
type State struct {
	// Conn is the connection's hub record, set by the transport when it
	// registers the connection.
	Conn *hub.Conn

	sec         uint32 // wall-clock second (unix) of the rate and error windows
	rateN, errN uint32 // publishes / error frames in that second
	failures    uint8  // failed auth attempts (OQ-65)
	resume      uint8  // resumeLive, resumeNever (resume.go); in what was padding
	logged      uint16 // refusal kinds already logged at info (logRefusal)
}

// Record returns Conn, the connection's hub record: what the reactor asks
// of a transport's connection state (reactor.Conn), which embeds State.
func (st *State) Record() *hub.Conn { return st.Conn }

// window moves the rate and error windows to the wall-clock second sec
// (unix), emptying both when it is a new one.
func (st *State) window(sec uint32) {
	if sec != st.sec {
		st.sec, st.rateN, st.errN = sec, 0, 0
	}
}

// allowPublish applies the fixed one-second window rate limit (wire-reference.md
// §6.10): rejected publishes do not count.
func (st *State) allowPublish(sec uint32, limit int) bool {
	st.window(sec)
	if int(st.rateN) >= limit {
		return false
	}
	st.rateN++
	return true
}
