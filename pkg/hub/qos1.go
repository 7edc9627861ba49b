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

// Acker is a Transport that tracks acknowledged deliveries in a bounded
// in-flight window. Acquire is called on the connection's worker for each
// QoS 1 delivery and returns the identifier's bytes to send between head
// and tail; they must stay unmodified until the peer acknowledges them.
// nil means the window is full: the hub closes the connection as a slow
// consumer.
type Acker interface {
	Acquire() []byte
}

// qos1Capable reports whether a connection on t takes QoS 1 deliveries (its transport is an
// Acker and its encoding a QoS1Encoding); fixed at Register.
func qos1Capable(t Transport) bool {
	_, ack := t.(Acker)
	_, enc := t.Encoding().(QoS1Encoding)
	return ack && enc
}

// deliverQoS1 queues p to c as an acknowledged delivery; in its retained
// form when re is not nil (sendRetained).
func (w *worker) deliverQoS1(p *Publication, c *Conn, display string, wildcard bool, re RetainedEncoding) {
	head, tail := w.frames.getQoS1(p, c, display, wildcard)
	if head == nil {
		return
	}
	if re != nil {
		head = re.Retained(head)
	}
	id := c.t.(Acker).Acquire()
	if id == nil {
		if !c.Closing() { // counted once per connection, not per refused delivery
			c.w.h.stats.slow[SlowInflight].Add(1)
		}
		c.closeWith(disconnect.New(disconnect.SlowConsumer))
		return
	}
	c.wmu.Lock()
	if c.appendPartsLocked(head, id, tail) && len(c.out) == 3 {
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
	if c.outBytes+c.heldBytes()+n > c.w.h.cfg.OutboundMaxBytes {
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
