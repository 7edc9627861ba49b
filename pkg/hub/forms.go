package hub

import (
	"sync"
	"sync/atomic"
)

// MaxEncodings bounds the Encoding IDs whose frames Hub.Publish builds
// ahead (0 … MaxEncodings-1): the transports' own. An encoding with a
// larger ID (a parked session's, pkg/resume) has its frames built by each
// worker that needs them.
const MaxEncodings = 4

// forms is what Hub.Publish needs to encode a publication once per form
// before any worker sees it: the encodings connections have registered,
// and per encoding how many live subscriptions (broadcast ones and group
// members) take its plain form (Encoding.Message) and how many its
// acknowledged form (QoS1Encoding.MessageQoS1). Workers count their
// subscriptions in and out; Publish reads the counts without a lock.
type forms struct {
	mu    sync.Mutex // taken by register only, on an encoding's first connection
	encs  [MaxEncodings]atomic.Pointer[registered]
	plain [MaxEncodings]atomic.Int64
	acked [MaxEncodings]atomic.Int64
	// encoded counts the messages encoded, by encoding ID and form (0 the
	// plain one, 1 the acknowledged one): one add per frame built, by
	// build or by a worker (frameCache), never per delivery.
	encoded [256][2]atomic.Uint64
}

type registered struct{ enc Encoding }

// register records enc, the encoding of a new connection.
func (f *forms) register(enc Encoding) {
	id := enc.ID()
	if id >= MaxEncodings || f.encs[id].Load() != nil {
		return
	}
	f.mu.Lock()
	if f.encs[id].Load() == nil {
		f.encs[id].Store(&registered{enc})
	}
	f.mu.Unlock()
}

// count adds delta to the subscriptions of s's form.
func (f *forms) count(s *sub, delta int64) {
	if s.c.enc >= MaxEncodings {
		return
	}
	if s.qos > 0 && s.c.qos1 {
		f.acked[s.c.enc].Add(delta)
	} else {
		f.plain[s.c.enc].Add(delta)
	}
}

// built is a publication's frames for its own display topic (Topic, not a
// wildcard subscription's pattern), one per form in use when it was
// published; nil where none was built. Workers share them, read-only.
type built struct {
	frames [MaxEncodings][]byte
	acked  [MaxEncodings]*ackedForm
}

// noForms is the forms of a publication for which none was built (no
// subscription took any form when it was published): shared, never
// written, so such a publication allocates nothing here, and p.forms is set
// once all the same (a publication handed on again is not built again
// while workers read it).
var noForms = &built{}

// ackedForm is a QoS1Encoding's head and tail of one message.
type ackedForm struct{ head, tail []byte }

// build encodes p's message once for each form that a subscription takes
// now: the plain form of every encoding with a plain subscription (or an
// acknowledged one, when p is at most once), the acknowledged form of
// every QoS1Encoding with an acknowledged subscription. It runs before p
// reaches any worker, on the publishing goroutine, so workers never wait
// for one another and never encode p's own topic twice; a form that was
// not in use then is built by a worker when it needs it (frameCache).
func (f *forms) build(p *Publication) {
	if p.forms != nil {
		return // published before (a retained copy handed on, a redelivery)
	}
	b := noForms // replaced by a new one for the first form built: nothing is allocated when no form is in use
	for id := range MaxEncodings {
		r := f.encs[id].Load()
		if r == nil {
			continue
		}
		acked := f.acked[id].Load() > 0
		if f.plain[id].Load() > 0 || acked && p.AtMostOnce {
			if b == noForms {
				b = &built{}
			}
			b.frames[id] = r.enc.Message(&p.Msg)
			f.encoded[id][0].Add(1)
		}
		if q, ok := r.enc.(QoS1Encoding); ok && acked && !p.AtMostOnce {
			if b == noForms {
				b = &built{}
			}
			head, tail := q.MessageQoS1(&p.Msg)
			b.acked[id] = &ackedForm{head, tail}
			f.encoded[id][1].Add(1)
		}
	}
	p.forms = b
}

// FramesEncoded returns how many messages the hub has encoded into the form
// of the encoding whose ID is enc since it was built: its plain form
// (Encoding.Message), or with acked its acknowledged form
// (QoS1Encoding.MessageQoS1). Each frame is counted once when it is built,
// never per delivery: once per publication and form in use when it is
// published (Publish), plus each frame a worker builds itself (for a
// wildcard subscription's display topic, a form not in use at publication,
// or an encoding of ID MaxEncodings or more, a parked session's).
func (h *Hub) FramesEncoded(enc uint8, acked bool) uint64 {
	i := 0
	if acked {
		i = 1
	}
	return h.forms.encoded[enc][i].Load()
}
