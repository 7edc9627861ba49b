package history

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// countBatch bounds the entries asked for at once while counting (their
// headers only, so many at a time).
const countBatch = 4096

// Count returns how many entries of topics (as Read takes them) are stored
// with a sequence in (after, last], counting at most max of them: exact is
// false when there are more (n is then max). It reads the entries'
// headers only, through an ephemeral consumer, so it costs a few requests
// per 4,096 entries and no payload. Read's caller uses it for how many
// entries a Read stopped at its limit left out (ReadResult.Next, Last). It
// fails when the stream cannot be reached within ctx.
func (h *History) Count(ctx context.Context, topics []string, after, last uint64, max int) (n int, exact bool, err error) {
	if after >= last || len(topics) == 0 {
		return 0, true, nil
	}
	filters, _ := h.filters(topics)
	cons, release, err := h.ephemeral(ctx, jetstream.ConsumerConfig{
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    after + 1,
		FilterSubjects: filters,
		HeadersOnly:    true,
	})
	if err != nil {
		return 0, false, fmt.Errorf("history: count consumer: %w", err)
	}
	defer release()
	pending := cons.CachedInfo().NumPending
	for pending > 0 {
		msgs, err := fetchReady(ctx, cons, countBatch)
		if err != nil {
			return n, false, fmt.Errorf("history: count: %w", err)
		}
		if len(msgs) == 0 {
			break // removed meanwhile
		}
		for _, msg := range msgs {
			md, err := msg.Metadata()
			if err != nil {
				continue
			}
			if md.Sequence.Stream > last {
				return n, true, nil
			}
			if n == max {
				return max, false, nil
			}
			n++
			pending = md.NumPending
		}
	}
	return n, true, nil
}
