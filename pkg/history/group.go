package history

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// GroupOptions shape the consumer of a durable group (GroupConsumer).
type GroupOptions struct {
	// AckWait is how long an entry handed out stays unacknowledged before
	// JetStream hands it out again (to any node's fetch).
	AckWait time.Duration
	// MaxAckPending bounds the entries handed out and not acknowledged
	// yet; past it the consumer hands out nothing more.
	MaxAckPending int
	// Inactive is how long the consumer is kept without a fetch: a group
	// with no member anywhere that long loses its place.
	Inactive time.Duration
}

// GroupConsumerName is the durable consumer name of the group name on the
// routing key topic: "grp-" and the first 40 hex digits of a SHA-256 of
// both, so any group name and topic make a valid, stable name.
func GroupConsumerName(name, topic string) string {
	sum := sha256.Sum256([]byte(name + "\x00" + topic))
	return "grp-" + hex.EncodeToString(sum[:20])
}

// GroupConsumer returns the durable consumer of the load-balanced group
// name on the routing key topic (a concrete key, no wildcard): the entries
// of topic, each handed out to one fetch at a time, across every node, and
// handed out again when not acknowledged within AckWait or when refused
// (Nak). It is made when it does not exist yet, starting at the next entry
// appended (a group gets what is published after its first member ever
// joined, as wire-reference.md §6.6's cursor starts at "now"); otherwise
// the existing one is returned as it is, with its place. It fails when
// JetStream does not answer within ctx or refuses the consumer.
func (h *History) GroupConsumer(ctx context.Context, name, topic string, o GroupOptions) (jetstream.Consumer, error) {
	durable := GroupConsumerName(name, topic)
	cons, err := h.st.Consumer(ctx, durable)
	if err == nil {
		return cons, nil
	}
	if !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("history: group consumer %s: %w", durable, err)
	}
	cons, err = h.st.CreateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:           durable,
		Description:       "kraken durable group " + name + " on " + topic,
		FilterSubject:     h.Subject(topic),
		DeliverPolicy:     jetstream.DeliverNewPolicy,
		AckPolicy:         jetstream.AckExplicitPolicy,
		AckWait:           o.AckWait,
		MaxAckPending:     o.MaxAckPending,
		MaxDeliver:        -1,
		InactiveThreshold: o.Inactive,
	})
	if errors.Is(err, jetstream.ErrConsumerExists) {
		cons, err = h.st.Consumer(ctx, durable) // another node made it meanwhile
	}
	if err != nil {
		return nil, fmt.Errorf("history: group consumer %s: %w", durable, err)
	}
	return cons, nil
}

// MaxAge is the age bound of the history's entries (Config.MaxAge, its
// default applied).
func (h *History) MaxAge() time.Duration { return h.cfg.MaxAge }
