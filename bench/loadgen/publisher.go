package main

import (
	"context"
	"fmt"
	"time"
)

// publisher writes stamped publish frames on one connection.
type publisher struct {
	c    *conn
	tmpl []*pubTemplate
	buf  []byte
}

// openPublishers opens count authenticated connections without
// subscriptions; their replies (errors, heartbeats) are read by the
// publisher worker's reader goroutines.
func (e *env) openPublishers(count int, topics []string) ([]*publisher, error) {
	r := e.pubW.connect(request{Target: count, Readers: true, Concurrency: 4})
	if r.Errors > 0 || r.Conns < count {
		return nil, fmt.Errorf("publisher connections: %d of %d (%s)", r.Conns, count, r.FirstError)
	}
	tmpl := make([]*pubTemplate, len(topics))
	for i, t := range topics {
		tmpl[i] = newPubTemplate(t, e.cfg.Payload)
	}
	e.pubW.mu.Lock()
	conns := e.pubW.conns[len(e.pubW.conns)-count:]
	e.pubW.mu.Unlock()
	out := make([]*publisher, count)
	for i, c := range conns {
		out[i] = &publisher{c: c, tmpl: tmpl}
	}
	return out, nil
}

// publish sends one message to topic index ti.
func (p *publisher) publish(ti int, seq int64) error {
	p.buf = p.tmpl[ti].appendFrame(p.buf[:0], time.Now().UnixNano(), seq)
	return p.c.write(p.buf, 10*time.Second)
}

// paced sends total messages at rate per second (0 = as fast as possible),
// batching the messages that are due into one write. next returns the
// topic index and sequence number of message i. It returns the number
// sent.
func (p *publisher) paced(ctx context.Context, rate float64, total int, next func(i int) (int, int64)) (int, error) {
	start := time.Now()
	sent := 0
	for sent < total {
		if ctx.Err() != nil {
			return sent, ctx.Err()
		}
		due := total
		if rate > 0 {
			due = int(time.Since(start).Seconds()*rate) + 1
			if due > total {
				due = total
			}
			if due <= sent {
				wait := time.Duration(float64(sent)/rate*1e9) - time.Since(start)
				if wait > 0 {
					time.Sleep(wait)
				}
				continue
			}
		}
		if due-sent > 256 {
			due = sent + 256
		}
		p.buf = p.buf[:0]
		now := time.Now().UnixNano()
		for ; sent < due; sent++ {
			ti, seq := next(sent)
			p.buf = p.tmpl[ti].appendFrame(p.buf, now, seq)
		}
		if err := p.c.write(p.buf, 10*time.Second); err != nil {
			return sent, err
		}
	}
	return sent, nil
}
