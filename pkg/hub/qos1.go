package hub

import (
	"github.com/NoLagApp/kraken/pkg/disconnect"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// QoS1Encoding is an Encoding whose deliveries can be acknowledged: a
// subscription with QoS 1 on a transport that is an Acker gets each
// message as head + a packet identifier of its own + tail (an MQTT QoS 1
// PUBLISH). head and tail are built once per publication, display topic and
// encoding and shared, read-only, like Message's frame.
type QoS1Encoding interface {
	Encoding
	MessageQoS1(m *wire.Message) (head, tail []byte)
}

// Acker is a Transport that acknowledges deliveries itself (an MQTT
// in-flight window, MQTT 3.1.1 §4.3): Deliver is called on the
// connection's worker for each acknowledged delivery, of QoS qos (1 or 2,
// the minimum of the publication's and the subscription's), with head and
// tail the delivery's shared, read-only parts (QoS1Encoding.MessageQoS1:
// what goes before and after its packet identifier). The Acker sends it
// now, on that worker, with Conn.WriteParts, or keeps head and tail to send
// later from the worker (Hub.Run), in order; it returns false when it can
// keep no more, and the hub then closes the connection as a slow consumer
// (SlowInflight).
type Acker interface {
	Deliver(c *Conn, head, tail []byte, qos uint8) bool
}

// qos1Capable reports whether a connection on t takes QoS 1 deliveries (its transport is an
// Acker and its encoding a QoS1Encoding); fixed at Register.
func qos1Capable(t Transport) bool {
	_, ack := t.(Acker)
	_, enc := t.Encoding().(QoS1Encoding)
	return ack && enc
}

// deliveryQoS is the QoS of p's delivery to a subscription of QoS sub on
// c: the minimum of both (MQTT 3.1.1 §3.8.4), 0 unless c acknowledges
// deliveries.
func deliveryQoS(p *Publication, c *Conn, sub uint8) uint8 {
	if !c.qos1 || p.AtMostOnce {
		return 0
	}
	if p.ExactlyOnce {
		return min(sub, 2)
	}
	return min(sub, 1)
}

// deliverQoS1 hands p to c's Acker as an acknowledged delivery of QoS
// qos; in its retained form when re is not nil (sendRetained).
func (w *worker) deliverQoS1(p *Publication, c *Conn, display string, wildcard bool, re RetainedEncoding, qos uint8) {
	if h := c.heldPubs(); h != nil {
		h.pubs = append(h.pubs, heldPub{p: p, display: display, wildcard: wildcard, qos: qos, re: re})
		return
	}
	head, tail := w.frames.getQoS1(p, c, display, wildcard)
	if head == nil {
		return
	}
	// A closing connection's Acker decides too: a persistent session keeps
	// what its subscriptions get until they are parked (Parker).
	if re != nil {
		head = re.Retained(head)
	}
	if !c.t.(Acker).Deliver(c, head, tail, qos) {
		if !c.Closing() { // counted once per connection, not per refused delivery
			c.w.h.stats.slow[SlowInflight].Add(1)
		}
		c.closeWith(disconnect.New(disconnect.SlowConsumer))
	}
}

// WriteParts queues one acknowledged delivery, head, its packet identifier
// id and tail (Acker), to c from code running on c's worker (an Acker's
// Deliver, or Hub.Run); they must stay unmodified until written. It is
// flushed at the end of the worker's batch, and counted like any other
// delivery against Config.OutboundMaxBytes (a slow consumer past it).
func (c *Conn) WriteParts(head, id, tail []byte) {
	w := c.w
	w.mustOwn("WriteParts")
	c.wmu.Lock()
	// Touched when this delivery starts the queue (an empty part, such as
	// the tail of an empty payload, is not queued).
	empty := c.queueEmpty()
	if c.appendPartsLocked(head, id, tail) && empty && !c.queueEmpty() {
		w.touched = append(w.touched, c)
	}
	c.wmu.Unlock()
	w.bytesOut += uint64(len(head) + len(id) + len(tail))
}

// getQoS1 is frameCache.get for QoS1Encoding's parts.
func (fc *frameCache) getQoS1(p *Publication, c *Conn, display string, wildcard bool) (head, tail []byte) {
	if !wildcard && display == p.Topic && p.forms != nil && c.enc < MaxEncodings {
		if a := p.forms.acked[c.enc]; a != nil {
			return a.head, a.tail
		}
	}
	fc.reset(p)
	for _, e := range fc.entries {
		if e.qos1 && e.enc == c.enc && e.display == display {
			return e.frame, e.tail
		}
	}
	m := p.Msg
	m.Topic = display
	if wildcard {
		m.SourceTopic = p.Topic
	}
	head, tail = c.t.Encoding().(QoS1Encoding).MessageQoS1(&m)
	c.w.h.forms.encoded[c.enc][1].Add(1)
	fc.entries = append(fc.entries, cachedFrame{enc: c.enc, display: display, frame: head, tail: tail, qos1: true})
	return head, tail
}

// appendPartsLocked queues the parts of one frame together, as
// appendLocked does one frame.
func (c *Conn) appendPartsLocked(a, b, d []byte) bool {
	if c.closed || c.closing || c.slow {
		return false
	}
	n := len(a) + len(b) + len(d)
	if c.queuedBytes()+c.heldBytes()+n > c.w.h.cfg.OutboundMaxBytes {
		c.overflowLocked(SlowOutbound)
		return false
	}
	if c.holdLocked(false, a, b, d) {
		return true
	}
	c.queueLocked(a)
	c.queueLocked(b)
	c.queueLocked(d)
	return true
}
