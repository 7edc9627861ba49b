package reactor

import (
	"bytes"
	"sync/atomic"

	"github.com/cloudwego/netpoll"
	"go.uber.org/zap"
)

// init shrinks netpoll's per-connection buffers, nodes of 512 bytes
// instead of 4–8 KiB, so an idle connection costs a few KiB, not twelve,
// and sends netpoll's log lines to netpollLogger. It is done at init, before
// netpoll can have a poller running: these are globals its pollers read, so
// setting them later (at the first Listen) raced with any netpoll use
// before it in the process, such as a test's own event loop.
func init() {
	netpoll.LinkBufferCap = 512
	_ = netpoll.Configure(netpoll.Config{BufferSize: 512, LoggerOutput: &netpollLogger})
}

// netpollLog receives netpoll's own log lines (it logs through the standard
// library's log package) and writes them through a zap logger
// (Config.NetpollLogger), so LOG_FORMAT and LOG_LEVEL apply to them too.
// Failures ("accept conn failed: too many open files") are warnings;
// routine lines ("re-accept conn success"), which come once per connection
// while recovering from descriptor exhaustion, are debug, and so is a
// detach of a socket the poller no longer holds (ENOENT, at shutdown).
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
	case bytes.Contains(msg, []byte("detach operator failed")) && bytes.Contains(msg, []byte("no such file or directory")):
		// A socket closed while the loop shuts down is no longer in the
		// poller when netpoll detaches it (ENOENT): nothing was lost.
		level = zap.DebugLevel
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
