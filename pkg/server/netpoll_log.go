package server

import (
	"bytes"
	"sync/atomic"

	"go.uber.org/zap"
)

// netpollLog receives netpoll's own log lines (it logs through the standard
// library's log package) and writes them through the server's zap logger,
// so LOG_FORMAT and LOG_LEVEL apply to them too. Failures ("accept conn
// failed: too many open files") are warnings; routine lines ("re-accept conn
// success"), which come once per connection while recovering from
// descriptor exhaustion, are debug.
type netpollLog struct{ log atomic.Pointer[zap.Logger] }

var netpollLogger netpollLog

// Write implements io.Writer for netpoll's logger: one line per call,
// prefixed with the standard log timestamp.
func (n *netpollLog) Write(p []byte) (int, error) {
	log := n.log.Load()
	if log == nil {
		return len(p), nil
	}
	msg := bytes.TrimSpace(p)
	if i := bytes.Index(msg, []byte("NETPOLL: ")); i >= 0 {
		msg = msg[i+len("NETPOLL: "):]
	}
	level := zap.InfoLevel
	switch {
	case bytes.Contains(msg, []byte("failed")):
		level = zap.WarnLevel
	case bytes.Contains(msg, []byte("success")):
		level = zap.DebugLevel
	}
	if ce := log.Check(level, string(msg)); ce != nil {
		ce.Write()
	}
	return len(p), nil
}
