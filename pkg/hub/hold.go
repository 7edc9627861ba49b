package hub

// held is the deliveries a connection's worker kept back while a replay was
// being put together for it (HoldDeliveries): the publications, in the
// order the worker fanned them out, with how each would have been written.
type held struct {
	pubs []heldPub
}

type heldPub struct {
	p        *Publication
	display  string
	wildcard bool
	qos      uint8            // an acknowledged delivery's QoS (Acker), 0 for a plain one
	re       RetainedEncoding // an acknowledged delivery's retained form, nil for none
}

func (h *held) add(p *Publication, display string, wildcard bool) {
	h.pubs = append(h.pubs, heldPub{p: p, display: display, wildcard: wildcard})
}

// HoldDeliveries makes c's worker keep back every delivery to c, in order,
// until ReleaseDeliveries: a session being resumed gets its replay first.
// Acknowledged deliveries (Acker) are held too, and handed to the Acker
// on release.
// Call it only from Hub.Run; the frames the session writes itself (replies)
// are not held. It costs a nil check per delivery on connections that hold
// nothing.
func (c *Conn) HoldDeliveries() {
	c.w.mustOwn("HoldDeliveries")
	if x := c.extra(); x.held == nil {
		x.held = &held{}
	}
}

// ReleaseDeliveries writes the deliveries held since HoldDeliveries, oldest
// first, but those for which skip (when not nil) returns true, behind what
// is queued to c, flushes c, and delivers to c directly again. Call it only
// from Hub.Run.
func (c *Conn) ReleaseDeliveries(skip func(*Publication) bool) {
	c.w.mustOwn("ReleaseDeliveries")
	h := c.heldPubs()
	if h == nil {
		return
	}
	c.x.Load().held = nil
	w := c.w
	for _, d := range h.pubs {
		if skip != nil && skip(d.p) {
			continue
		}
		if d.qos > 0 {
			w.deliverQoS1(d.p, c, d.display, d.wildcard, d.re, d.qos)
			w.deliveries.Add(1)
			continue
		}
		if t := c.tapped(); t != nil && !t.off {
			c.tapDelivery(t, d.p, d.display, d.wildcard, w.now())
		}
		w.write(c, w.frames.get(d.p, c, d.display, d.wildcard))
		w.deliveries.Add(1)
	}
	c.Flush()
}
