package listener

import "sync"

// inflight is a connection's window of outbound QoS 1 PUBLISHes not yet
// acknowledged: the hub's worker takes a Packet Identifier for each
// delivery (Acquire), the reader gives it back on PUBACK (release). Its
// identifier bytes are what the hub queues between a PUBLISH's shared head
// and tail, so a slot is reused only once its PUBACK came, when they have
// long been written. A full window is a slow consumer (the hub closes the
// connection). Sessions are clean, so nothing is resent after a reconnect
// (MQTT 3.1.1 §4.4 resends only for a persistent session).
type inflight struct {
	mu   sync.Mutex
	ids  []uint16 // the outstanding identifiers by slot, 0 for a free slot
	buf  []byte   // two bytes per slot: the identifier, big-endian
	next uint16   // the last identifier given
	n    int      // outstanding
}

func newInflight(window int) *inflight {
	return &inflight{ids: make([]uint16, window), buf: make([]byte, 2*window)}
}

// acquire returns the bytes of a fresh identifier, or nil when the window
// is full.
func (f *inflight) acquire() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == len(f.ids) {
		return nil
	}
	id := f.nextFree()
	for i, v := range f.ids {
		if v == 0 {
			f.ids[i] = id
			f.n++
			b := f.buf[2*i : 2*i+2 : 2*i+2]
			b[0], b[1] = byte(id>>8), byte(id)
			return b
		}
	}
	return nil
}

// nextFree is the next identifier after f.next, skipping 0 and those still
// outstanding.
func (f *inflight) nextFree() uint16 {
	for {
		f.next++
		if f.next == 0 {
			f.next = 1
		}
		busy := false
		for _, v := range f.ids {
			if v == f.next {
				busy = true
				break
			}
		}
		if !busy {
			return f.next
		}
	}
}

// release frees id's slot; an identifier not outstanding is ignored.
func (f *inflight) release(id uint16) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, v := range f.ids {
		if v == id && id != 0 {
			f.ids[i] = 0
			f.n--
			return
		}
	}
}

// Acquire implements hub.Acker, on the connection's worker: nil when the
// window is full (it exists before any QoS 1 subscription, subscribe).
func (st *conn) Acquire() []byte {
	if st.window == nil {
		return nil
	}
	return st.window.acquire()
}
