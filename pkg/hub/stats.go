package hub

import (
	"context"
	"net"
	"net/netip"
	"time"
)

// What the hub tells an operator beyond Stats: per-worker state read for
// /metrics, and connection facts read for logs. Nothing here adds work to
// the delivery path: the worker-owned figures are gathered by one op per
// worker at scrape time, the rest are atomics the hub keeps anyway.

// WorkerStats is one worker's share of the hub at one moment.
type WorkerStats struct {
	// Worker is the worker's index (0 .. Config.Workers-1).
	Worker int
	// Inbox is the number of ops waiting in the worker's inbox, and
	// InboxPublications the publications queued to the worker and not
	// handled yet (those of the batch in hand included); Busy reports
	// that the worker holds Config.MaxPendingPublications of them, so new
	// publishes are refused (Hub.Busy).
	Inbox, InboxPublications int
	Busy                     bool
	// Stale reports that the worker did not answer in time (it is behind,
	// or the hub has stopped): only the inbox fields above are set.
	Stale bool
	// Connections is the number of connections the worker owns.
	Connections int
	// Topics is the number of routing keys and wildcard patterns with at
	// least one broadcast subscriber on this worker. A topic whose
	// subscribers sit on several workers counts once on each.
	Topics int
	// Retained is the number of retained messages in the worker's copy of
	// the retained store (every worker keeps every retained message).
	Retained int
	// OutboundBytes is what the worker's connections have queued and not yet
	// written, and OutboundMaxBytes the largest queue of one of them.
	OutboundBytes    int64
	OutboundMaxBytes int
	// DeliveredBytes is the size of the message frames the worker has
	// delivered (Stats.Deliveries), counted per publication as its shared
	// frame's size times its deliveries here: a frame re-encoded for
	// another display topic counts at the shared frame's size, and
	// load-balanced copies handed over by a cluster's bus are not counted.
	// It never decreases: a Stale worker reports its figure of the last
	// scrape it answered.
	DeliveredBytes uint64
}

// WorkerStats returns every worker's figures. The inbox fields are read at
// once; the rest is gathered on each worker, between two batches, and
// waited for until ctx is done, after which the workers that have not
// answered are reported Stale. It allocates, takes each connection's write
// lock once and is meant for a scrape every few seconds, not for a hot path.
func (h *Hub) WorkerStats(ctx context.Context) []WorkerStats {
	out := make([]WorkerStats, len(h.workers))
	type answer struct {
		i  int
		st WorkerStats
	}
	answers := make(chan answer, len(h.workers)) // never blocks a worker
	stopped := false
	select {
	case <-h.stop:
		stopped = true
	default:
	}
	for i, w := range h.workers {
		out[i] = w.inboxStats()
		out[i].Stale = true
		out[i].DeliveredBytes = w.bytesReported.Load()
		if !stopped {
			w.post(op{kind: opRun, fn: func(*Conn) { answers <- answer{i, w.ownStats()} }})
		}
	}
	if stopped {
		return out
	}
	for range h.workers {
		select {
		case a := <-answers:
			own := a.st
			own.Worker, own.Inbox, own.InboxPublications, own.Busy =
				out[a.i].Worker, out[a.i].Inbox, out[a.i].InboxPublications, out[a.i].Busy
			out[a.i] = own
		case <-ctx.Done():
			return out
		}
	}
	return out
}

// inboxStats reads the inbox figures of WorkerStats, from any goroutine.
func (w *worker) inboxStats() WorkerStats {
	w.in.mu.Lock()
	n := len(w.in.ops)
	w.in.mu.Unlock()
	return WorkerStats{Worker: w.id, Inbox: n, InboxPublications: int(w.in.pubs.Load()), Busy: w.in.full()}
}

// ownStats reads the worker-owned figures of WorkerStats; it runs on the
// worker.
func (w *worker) ownStats() WorkerStats {
	w.bytesReported.Store(w.bytesOut)
	st := WorkerStats{Connections: len(w.conns), Topics: len(w.tab.exact) + len(w.tab.wildN),
		Retained: w.retained.n, DeliveredBytes: w.bytesOut}
	for _, c := range w.conns {
		c.wmu.Lock()
		b := c.queuedBytes()
		c.wmu.Unlock()
		st.OutboundBytes += int64(b)
		st.OutboundMaxBytes = max(st.OutboundMaxBytes, b)
	}
	return st
}

// Accepted returns the number of connections registered since New: every
// accepted TCP connection, WebSocket, MQTT or plain HTTP (Register). The
// parked connections of resumable and MQTT persistent sessions (Adopt)
// are not counted.
func (h *Hub) Accepted() uint64 { return h.accepted.Load() }

// RemoteAddr returns the peer's address when the transport knows it
// (netpoll connections do), else nil. Nothing is stored per connection for
// it: the transport is asked, so it costs nothing until a line is logged.
func (c *Conn) RemoteAddr() net.Addr {
	if ra, ok := c.t.(interface{ RemoteAddr() net.Addr }); ok {
		return ra.RemoteAddr()
	}
	return nil
}

// RemoteAddrPort is RemoteAddr as a netip.AddrPort, without allocating when
// the transport gives it so (reactor.Stream.RemoteAddrPort): the edge
// limits ask for it at the accept, the authentication and the close of
// every connection. The zero AddrPort when the transport knows no address.
func (c *Conn) RemoteAddrPort() netip.AddrPort {
	if ra, ok := c.t.(interface{ RemoteAddrPort() netip.AddrPort }); ok {
		return ra.RemoteAddrPort()
	}
	if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return ta.AddrPort()
	}
	return netip.AddrPort{}
}

// OpenedAt returns when the connection was registered (accepted).
func (c *Conn) OpenedAt() time.Time { return time.Unix(0, c.created) }
