package natsbroker

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// Config configures a Broker. Zero fields take the documented defaults.
type Config struct {
	// URLs are the NATS servers (NATS_URL, comma separated), e.g.
	// "nats://127.0.0.1:4222"; required.
	URLs []string
	// Node is this node's id (NODE_ID), the broker.Message.Node of what it
	// publishes; required.
	Node string
	// Prefix is the first subject token of everything the broker sends;
	// "" means "kraken". Several clusters can share one NATS system with
	// different prefixes.
	Prefix string
	// Options are extra nats.go options: credentials (nats.UserCredentials),
	// TLS (nats.RootCAs, nats.ClientCert), and so on.
	Options []nats.Option
	// ReconnectBuffer is what nats.go buffers while disconnected, in bytes;
	// 0 means 8 MiB. Publishes past it are dropped and counted.
	ReconnectBuffer int
	// RetainTTL is how long JetStream keeps a retained message
	// (RETAIN_TTL_SECONDS); 0 means 1 h. MaxRetained bounds the retained
	// topics kept; 0 means 100000.
	RetainTTL   time.Duration
	MaxRetained int64
	// RetainReplicas is the JetStream replica count of the retained
	// stream; 0 means 1 (3 on a three-server cluster survives a server).
	RetainReplicas int
	// Logger receives connection-state lines; nil means none.
	Logger *zap.Logger
}

// Stats are a Broker's counters.
type Stats struct {
	// Published counts NATS messages sent (one per publish, two for a
	// retained one); Dropped the publishes nats.go refused (disconnected
	// with a full reconnect buffer, or closed).
	Published, Dropped uint64
	// Received counts messages handed to the node; Duplicates those
	// dropped as a second copy of one publish (overlapping interests);
	// Malformed those that did not decode.
	Received, Duplicates, Malformed uint64
	// Reconnects counts reconnections to NATS.
	Reconnects uint64
}

// Broker is a broker.Broker over NATS. Create it with New; it is safe for
// concurrent use.
//
// Publications go to the subject of their routing key; a node subscribes to
// the subjects of the keys and patterns it has interest in (one NATS
// subscription per pattern, reference-counted), so NATS sends one message
// per interested node. A load-balanced group is a NATS queue group: each
// node with members of it queue-subscribes, and NATS hands each message to
// one of them. Every node subscribes to the retained subjects and follows
// every retained publish. nats.go keeps the subscriptions across reconnects
// and buffers publishes while disconnected; nothing here blocks on the
// network.
type Broker struct {
	cfg      Config
	log      *zap.Logger
	msgs     string // subject prefix of publications
	kept     string // subject prefix of retained copies
	seq      atomic.Uint64
	nc       *nats.Conn
	h        broker.Handler
	dedup    dedup
	stats    counters
	mu       sync.Mutex
	subs     map[interest]*interestSubs
	closed   bool
	retained jetstream.ConsumeContext // nil without JetStream
}

type interest struct {
	group    string // "" for broadcast interest
	key      string
	wildcard bool
}

type interestSubs struct {
	count int
	subs  []*nats.Subscription
}

type counters struct {
	published, dropped, received, duplicates, malformed, reconnects atomic.Uint64
}

// New checks cfg and returns a Broker; it connects in Start.
func New(cfg Config) (*Broker, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("natsbroker: no NATS URL")
	}
	if cfg.Node == "" {
		return nil, errors.New("natsbroker: no node id")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "kraken"
	}
	if cfg.ReconnectBuffer <= 0 {
		cfg.ReconnectBuffer = 8 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.RetainTTL <= 0 {
		cfg.RetainTTL = time.Hour
	}
	if cfg.MaxRetained <= 0 {
		cfg.MaxRetained = 100000
	}
	if cfg.RetainReplicas <= 0 {
		cfg.RetainReplicas = 1
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, msgs: cfg.Prefix + ".m", kept: cfg.Prefix + ".r",
		subs: map[interest]*interestSubs{}}
	b.seq.Store(uint64(rand.Uint32()) << 32) // this run's sequence space (see codec.go)
	return b, nil
}

// Start connects to NATS and subscribes to the retained subjects. A first
// connection that fails is retried in the background (the node serves its
// own connections meanwhile), so Start fails only on a bad configuration.
func (b *Broker) Start(_ context.Context, h broker.Handler) error {
	b.h = h
	opts := append([]nats.Option{
		nats.Name("kraken " + b.cfg.Node),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(b.cfg.ReconnectBuffer),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() {
				return // Close, not a loss
			}
			b.log.Warn("NATS connection lost; serving local traffic, reconnecting", zap.Error(err))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.stats.reconnects.Add(1)
			b.log.Info("NATS reconnected; interest declared again", zap.String("server", nc.ConnectedUrlRedacted()))
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			b.log.Warn("NATS error", zap.Error(err))
		}),
	}, b.cfg.Options...)
	nc, err := nats.Connect(strings.Join(b.cfg.URLs, ","), opts...)
	if err != nil {
		return fmt.Errorf("natsbroker: %w", err)
	}
	b.nc = nc
	if err := b.followRetained(); err != nil {
		nc.Close()
		return err
	}
	if nc.IsConnected() {
		b.log.Info("connected to NATS", zap.String("server", nc.ConnectedUrlRedacted()), zap.String("node", b.cfg.Node))
	}
	return nil
}

// retainedStream is the JetStream stream of retained messages: one message
// per retained subject, the newest.
const retainedStream = "KRAKEN_RETAINED"

// followRetained makes every retained publish reach this node, the ones
// set before it started included: with JetStream, a stream keeps the newest
// message of each retained subject (for RetainTTL, at most MaxRetained) and
// an ordered consumer replays them, then follows; without JetStream on the
// servers, a core subscription follows live publishes only (logged).
func (b *Broker) followRetained() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	js, err := jetstream.New(b.nc)
	if err == nil {
		var st jetstream.Stream
		st, err = js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: retainedStream, Subjects: []string{b.kept + ".>"}, MaxMsgsPerSubject: 1,
			MaxAge: b.cfg.RetainTTL, MaxMsgs: b.cfg.MaxRetained, Discard: jetstream.DiscardOld,
			Replicas: b.cfg.RetainReplicas, Storage: jetstream.FileStorage,
		})
		if err == nil {
			var cons jetstream.Consumer
			cons, err = st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
				FilterSubjects: []string{b.kept + ".>"}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
			if err == nil {
				started := time.Now()
				b.retained, err = cons.Consume(func(msg jetstream.Msg) {
					// This node's own publishes from before it started (a
					// fixed NODE_ID across a restart) are replayed; later ones
					// it applied itself.
					md, _ := msg.Metadata()
					b.onRetainedData(msg.Data(), md != nil && md.Timestamp.Before(started))
				})
			}
		}
	}
	if err == nil {
		return nil
	}
	b.log.Warn("JetStream unavailable: retained messages set before this node started are not recovered", zap.Error(err))
	if _, err := b.nc.Subscribe(b.kept+".>", func(msg *nats.Msg) { b.onRetainedData(msg.Data, false) }); err != nil {
		return fmt.Errorf("natsbroker: subscribe to retained messages: %w", err)
	}
	return nil
}

// Publish implements broker.Broker: one NATS message to the key's subject,
// and for a retained publish one more to its retained subject.
func (b *Broker) Publish(m *broker.Message) error {
	payload := encode(m, b.seq.Add(1))
	if err := b.send(keySubject(b.msgs, m.Key), payload); err != nil {
		return err
	}
	if m.Retain {
		return b.send(keySubject(b.kept, m.Key), payload)
	}
	return nil
}

func (b *Broker) send(subject string, payload []byte) error {
	if err := b.nc.Publish(subject, payload); err != nil {
		b.stats.dropped.Add(1)
		return fmt.Errorf("natsbroker: %w", err)
	}
	b.stats.published.Add(1)
	return nil
}

// Interest implements broker.Broker.
func (b *Broker) Interest(key string, wildcard bool, delta int) {
	b.change(interest{key: key, wildcard: wildcard}, delta)
}

// GroupInterest implements broker.Broker.
func (b *Broker) GroupInterest(name, key string, wildcard bool, delta int) {
	b.change(interest{group: name, key: key, wildcard: wildcard}, delta)
}

// change applies a reference count change; the NATS subscriptions are made
// on the first reference and dropped with the last. nats.go only queues
// the SUB and UNSUB lines, so this does not wait on the network.
func (b *Broker) change(in interest, delta int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	e := b.subs[in]
	if e == nil {
		if delta <= 0 {
			return
		}
		e = &interestSubs{}
		b.subs[in] = e
	}
	was := e.count
	e.count += delta
	switch {
	case was <= 0 && e.count > 0:
		e.subs = b.subscribe(in)
	case e.count <= 0:
		for _, s := range e.subs {
			_ = s.Unsubscribe()
		}
		delete(b.subs, in)
	}
}

func (b *Broker) subscribe(in interest) []*nats.Subscription {
	subjects := []string{keySubject(b.msgs, in.key)}
	if in.wildcard {
		subjects = patternSubjects(b.msgs, in.key)
	}
	var out []*nats.Subscription
	for _, subject := range subjects {
		var s *nats.Subscription
		var err error
		if in.group == "" {
			s, err = b.nc.Subscribe(subject, b.onMessage)
		} else {
			name, key := in.group, in.key
			s, err = b.nc.QueueSubscribe(subject, queueName(name, key, in.wildcard), func(msg *nats.Msg) {
				b.onGroup(msg, name, key)
			})
		}
		if err != nil {
			b.log.Warn("NATS subscribe failed", zap.String("subject", subject), zap.Error(err))
			continue
		}
		out = append(out, s)
	}
	return out
}

// queueName is the NATS queue group of a kraken group on a key: the group's
// name escaped, and a hash of the key, because a group name is only unique
// per key (hub groups are name and key).
func queueName(name, key string, wildcard bool) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	if wildcard {
		_, _ = h.Write([]byte{0})
	}
	return fmt.Sprintf("%s_%08x", appendLevel(nil, name), h.Sum32())
}

// onMessage hands a publication of another node to the node, once: a key
// that two of this node's interests match arrives on both subscriptions.
func (b *Broker) onMessage(msg *nats.Msg) {
	m, seq, err := decode(msg.Data)
	if err != nil {
		b.stats.malformed.Add(1)
		return
	}
	if m.Node == b.cfg.Node {
		return
	}
	if !b.dedup.first(m.Node, seq) {
		b.stats.duplicates.Add(1)
		return
	}
	b.stats.received.Add(1)
	b.h.HandleMessage(m)
}

func (b *Broker) onGroup(msg *nats.Msg, name, key string) {
	m, _, err := decode(msg.Data)
	if err != nil {
		b.stats.malformed.Add(1)
		return
	}
	b.stats.received.Add(1)
	b.h.HandleGroupMessage(m, name, key)
}

func (b *Broker) onRetainedData(data []byte, replayed bool) {
	m, _, err := decode(data)
	if err != nil {
		b.stats.malformed.Add(1)
		return
	}
	if m.Node == b.cfg.Node && !replayed {
		return
	}
	b.stats.received.Add(1)
	b.h.HandleRetained(m)
}

// Ready reports whether the node is connected to NATS (an error saying why
// not otherwise), for readiness checks.
func (b *Broker) Ready() error {
	if b.nc == nil || !b.nc.IsConnected() {
		return errors.New("natsbroker: not connected to NATS")
	}
	return nil
}

// ConnectedURL returns the URL of the NATS server the node is connected to,
// credentials redacted, or "" while disconnected.
func (b *Broker) ConnectedURL() string {
	if b.nc == nil {
		return ""
	}
	return b.nc.ConnectedUrlRedacted()
}

// Stats returns the counters.
func (b *Broker) Stats() Stats {
	return Stats{Published: b.stats.published.Load(), Dropped: b.stats.dropped.Load(),
		Received: b.stats.received.Load(), Duplicates: b.stats.duplicates.Load(),
		Malformed: b.stats.malformed.Load(), Reconnects: b.stats.reconnects.Load()}
}

// Close implements broker.Broker: pending publishes are flushed (for at
// most a second) and the connection closed.
func (b *Broker) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	if b.nc == nil {
		return nil
	}
	if b.retained != nil {
		b.retained.Stop()
	}
	_ = b.nc.FlushTimeout(time.Second)
	b.nc.Close()
	return nil
}

var _ broker.Broker = (*Broker)(nil)
