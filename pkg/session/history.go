package session

import (
	"sync"

	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// History is a durable message history the session appends every accepted
// publish to (Config.History): client publishes on every transport
// (WebSocket, MQTT, wills) and the node's own (Inject: POST
// /internal/publish). *history.History implements it.
//
// Each entry is appended under the publish's routing key (the resolved
// topic, hub.Publication.Key) with its msgId ("" when RECORD_MESSAGES is
// false, which turns the history's duplicate detection off for it), and
// its data is the publish's `message` frame as a subscriber to the exact
// topic receives it (wire.AppendMessage, wire-reference.md §3.2), encoded
// once: a msgpack map {type:"message", topic (as published, display
// topic), data (the publisher's raw msgpack, verbatim), msgId and
// requiresAck:true (only with a msgId), filter (only when set), from (the
// publisher's actorTokenId, or "server"), fromType ("actor" or
// "server"), timestamp (Unix milliseconds of the accept)}. It never holds
// sourceTopic or isReplay: a replay decodes the entry and sets them for
// the subscriber it is sent to.
type History interface {
	// Append queues data as the next entry of topic and returns at once;
	// false when the entry is dropped (the history is behind or closed).
	// It copies data: the caller reuses the buffer afterwards.
	Append(topic, msgID string, data []byte) bool
}

// historyBufs holds the encoding buffers of history entries: Append
// copies the entry, so a buffer goes back at once.
var historyBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// keep appends pub to the history, when there is one. A dropped entry is
// counted by the history, never an error of the publish.
func (p *Protocol) keep(pub *hub.Publication) {
	if p.cfg.History == nil {
		return
	}
	bp := historyBufs.Get().(*[]byte)
	b := wire.AppendMessage((*bp)[:0], &pub.Msg)
	p.cfg.History.Append(pub.Key, pub.Msg.MsgID, b)
	if cap(b) <= 64<<10 { // a large publish's buffer is not kept
		*bp = b
		historyBufs.Put(bp)
	}
}
