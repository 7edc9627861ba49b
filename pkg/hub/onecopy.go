package hub

// oneCopy picks, for the publication a worker fans out, the one
// subscription each connection that acknowledges deliveries (an MQTT one,
// Conn.qos1) gets it on when several of its subscriptions match: MQTT
// 3.1.1 §3.3.5 says the server MUST deliver respecting the maximum QoS of
// the matching subscriptions [MQTT-3.3.5-1], and a device that subscribed
// to `a/#` and `a/b` expects one copy, as Mosquitto sends. The highest
// delivery QoS wins; between equals, the first match (an exact
// subscription before a wildcard one). Only a connection with a wildcard
// subscription beside another comes here (Conn.nwild): its exact ones have
// distinct patterns, so distinct routing keys unless two display forms of
// one topic resolve to the same key, which then each deliver. A WebSocket
// connection never does (wire-reference.md §6.1: each subscription gets
// its copy). Owned by the worker.
type oneCopy struct {
	index map[*Conn]int32 // connection → its entry in picks, during one fan-out
	picks []oneCopyPick
}

type oneCopyPick struct {
	s        *sub
	wildcard bool
	qos      uint8
}

// add considers s, a matching subscription of a connection with several,
// for p: skipped when it would not deliver p (its filters, echo, a '$'
// topic for a leading wildcard), kept when it is the connection's first
// or gives a higher QoS than the one kept.
func (o *oneCopy) add(p *Publication, s *sub, wildcard bool) {
	if !s.accepts(p.Filter) || (!p.Echo && s.c == p.Origin) {
		return
	}
	if wildcard && isDollar(p.Topic) && startsWithWildcard(s.pattern()) {
		return
	}
	q := deliveryQoS(p, s.c, s.qos)
	if o.index == nil {
		o.index = make(map[*Conn]int32)
	}
	if i, ok := o.index[s.c]; ok {
		if q > o.picks[i].qos {
			o.picks[i] = oneCopyPick{s: s, wildcard: wildcard, qos: q}
		}
		return
	}
	o.index[s.c] = int32(len(o.picks))
	o.picks = append(o.picks, oneCopyPick{s: s, wildcard: wildcard, qos: q})
}

// deliver delivers p on each kept subscription, in the order the
// connections first matched, and empties the selection.
func (o *oneCopy) deliver(w *worker, p *Publication) {
	if len(o.picks) == 0 {
		return
	}
	for i, k := range o.picks {
		w.deliverSubNow(p, k.s, k.wildcard)
		o.picks[i] = oneCopyPick{}
	}
	o.picks = o.picks[:0]
	clear(o.index)
}
