package hub

import (
	"sync"
	"sync/atomic"
)

// maxInterestWorkers is the largest pool whose workers fit one bit each of
// an interest mask; a larger pool hands every publication to every worker.
const maxInterestWorkers = 64

// interest is which workers want a publication: per exact routing key, a
// mask of the workers holding a broadcast subscription or a load-balanced
// group on it, and one mask of the workers holding any wildcard pattern
// (a subscription or a group). Hub.Publish reads it, without a lock, to
// push a publication only into the inboxes of the workers that can
// deliver it (plus every worker for retained messages, which every worker
// keeps); a worker with no interest is not woken.
//
// Each worker sets and clears only its own bit, on its goroutine, when its
// own count for a key (or of wildcard patterns) goes from 0 to 1 and back
// (worker.keyRefs, worker.wildRefs). A subscription still queued for its
// worker must not miss a publication its own connection sends right after
// it (one inbox used to order the two): Hub.Subscribe marks the target
// worker's bit at once and counts the mark pending until that worker has
// handled the subscription; a bit is cleared only while nothing is
// pending on its key, so a mask may name a worker without interest for a
// moment (a wasted wake-up), never the reverse.
type interest struct {
	mu   sync.Mutex // taken by writers only (mark, set, clear, settle): Publish reads atomics
	keys sync.Map   // routing key → *atomic.Uint64, the mask of the workers
	wild atomic.Uint64
}

// marks is one worker's pending interest marks, guarded by interest.mu:
// Hub.Subscribe adds them on the reader, the worker takes them off.
type marks struct {
	keys map[string]int32
	wild int32
}

// mark sets w's bit for key (wild: the wildcard mask) ahead of an op that
// will give w interest in it, and counts it pending until settle.
func (in *interest) mark(w *worker, key string, wild bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wild {
		w.marks.wild++
	} else {
		if w.marks.keys == nil {
			w.marks.keys = make(map[string]int32)
		}
		w.marks.keys[key]++
	}
	in.setLocked(w.id, key, wild)
}

// set records that worker id has interest in key (its count went 0 → 1).
func (in *interest) set(id int, key string, wild bool) {
	in.mu.Lock()
	in.setLocked(id, key, wild)
	in.mu.Unlock()
}

func (in *interest) setLocked(id int, key string, wild bool) {
	bit := uint64(1) << id
	if wild {
		in.wild.Or(bit)
		return
	}
	if v, ok := in.keys.Load(key); ok {
		v.(*atomic.Uint64).Or(bit)
		return
	}
	m := new(atomic.Uint64)
	m.Store(bit)
	in.keys.Store(key, m)
}

// clear records that w has no interest in key any more, unless a mark of
// w's is pending on it (its settle clears it then).
func (in *interest) clear(w *worker, key string, wild bool) {
	in.mu.Lock()
	in.clearLocked(w, key, wild)
	in.mu.Unlock()
}

func (in *interest) clearLocked(w *worker, key string, wild bool) {
	bit := uint64(1) << w.id
	if wild {
		if w.marks.wild == 0 {
			in.wild.And(^bit)
		}
		return
	}
	if w.marks.keys[key] > 0 {
		return
	}
	if v, ok := in.keys.Load(key); ok && v.(*atomic.Uint64).And(^bit) == bit {
		in.keys.Delete(key) // the old mask was this bit alone
	}
}

// settle ends a pending mark of w on key, once its op is handled; refs is
// w's count for it then: 0 (the op added nothing: the connection was gone
// or held too many) clears the bit.
func (in *interest) settle(w *worker, key string, wild bool, refs int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if wild {
		w.marks.wild--
	} else if n := w.marks.keys[key] - 1; n > 0 {
		w.marks.keys[key] = n
	} else {
		delete(w.marks.keys, key)
	}
	if refs == 0 {
		in.clearLocked(w, key, wild)
	}
}

// workers returns the mask of the workers interested in key.
func (in *interest) workers(key string) uint64 {
	m := in.wild.Load()
	if v, ok := in.keys.Load(key); ok {
		m |= v.(*atomic.Uint64).Load()
	}
	return m
}

// gain counts one more interest of w in key (wild: one more wildcard
// pattern), and sets its bit on the first.
func (w *worker) gain(key string, wild bool) {
	if w.h.in == nil {
		return
	}
	if wild {
		if w.wildRefs++; w.wildRefs == 1 {
			w.h.in.set(w.id, key, true)
		}
		return
	}
	if w.keyRefs[key]++; w.keyRefs[key] == 1 {
		w.h.in.set(w.id, key, false)
	}
}

// lose is gain undone. The last one clears w's bit at the end of the
// batch (dropUnwanted), unless the interest came back meanwhile: a closing
// connection's subscriptions adopted by a parked session (Conn.Adopt)
// keep every publication coming.
func (w *worker) lose(key string, wild bool) {
	if w.h.in == nil {
		return
	}
	if wild {
		if w.wildRefs--; w.wildRefs == 0 {
			w.unwanted = append(w.unwanted, unwanted{wild: true})
		}
		return
	}
	if n := w.keyRefs[key] - 1; n > 0 {
		w.keyRefs[key] = n
		return
	}
	delete(w.keyRefs, key)
	w.unwanted = append(w.unwanted, unwanted{key: key})
}

// unwanted is a key (or the wildcard patterns) w lost its last interest
// in during the current batch.
type unwanted struct {
	key  string
	wild bool
}

// dropUnwanted clears w's bits of the keys it has lost all interest in
// during the batch.
func (w *worker) dropUnwanted() {
	for i, u := range w.unwanted {
		if u.wild && w.wildRefs == 0 || !u.wild && w.keyRefs[u.key] == 0 {
			w.h.in.clear(w, u.key, u.wild)
		}
		w.unwanted[i] = unwanted{}
	}
	w.unwanted = w.unwanted[:0]
}

// settle ends the pending mark Hub.Subscribe made on w for key.
func (w *worker) settle(key string, wild bool) {
	if w.h.in == nil {
		return
	}
	refs := w.wildRefs
	if !wild {
		refs = int(w.keyRefs[key])
	}
	w.h.in.settle(w, key, wild, refs)
}
