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
	// different prefixes: the JetStream names derive from it too
	// (RetainedStream, StateBucket).
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
	// RetainWait is how long Start waits for the node to follow the
	// retained stream (see the package doc); 0 means 5 s.
	RetainWait time.Duration
	// StateReplicas is the replica count of the shared-state KV bucket
	// (StateBucket); 0 means RetainReplicas.
	StateReplicas int
	// Heartbeat is how often the node puts its liveness key; 0 means 1 s.
	// LivenessTimeout is how long another node's keys may go without a put
	// before it is judged down; 0 means 3 s, and it must be at least twice
	// Heartbeat.
	Heartbeat, LivenessTimeout time.Duration
	// StateTimeout bounds each KV call of the shared state, and the
	// goodbye of Close; 0 means 2 s.
	StateTimeout time.Duration
	// StateQueue bounds the own state changes waiting to be written
	// (coalesced per key: a connection's presence, an organisation's
	// count); 0 means 65536. A change past it is dropped, counted, and
	// repaired by rewriting the whole state once the queue is empty.
	StateQueue int
	// Logger receives connection-state lines; nil means none.
	Logger *zap.Logger
}

// Stats are a Broker's counters.
type Stats struct {
	// Published counts NATS messages sent (one per publish, two for a
	// retained one); Dropped the publishes nats.go refused (disconnected
	// with a full reconnect buffer, or closed).
	Published, Dropped uint64
	// Recaptured counts own retained publishes the retained stream had
	// not stored (made before the node followed it, or not acknowledged
	// by it) and stored in it afterwards; Unkept those dropped instead,
	// past MaxRetained subjects waiting. See retained.go.
	Recaptured, Unkept uint64
	// Received counts messages handed to the node; Duplicates those
	// dropped as a second copy of one publish (overlapping interests);
	// Malformed those that did not decode.
	Received, Duplicates, Malformed uint64
	// Reconnects counts reconnections to NATS, of either connection.
	Reconnects uint64
	// StateWrites counts the shared-state KV writes made (puts and deletes
	// of own keys, purges); StateDropped the own state changes dropped on
	// a full queue (repaired later); StateErrors the KV calls and watches
	// that failed (retried; see StateReady); StateMalformed the keys or
	// values that did not decode.
	StateWrites, StateDropped, StateErrors, StateMalformed uint64
	// NodesDown counts the HandleNodeDown calls; Purged the keys of down
	// nodes this node deleted; Rejoins the times this node found itself
	// judged down by the others and wrote its state again.
	NodesDown, Purged, Rejoins uint64
}

// Broker is a broker.Broker over NATS. Create it with New; it is safe for
// concurrent use.
//
// It holds two NATS connections. The first, opened with NoEcho, carries
// every publish, the broadcast-interest and retained subscriptions and
// JetStream, so NATS never sends a node back its own publish: a publish
// costs one message in and one out per interested other node. The second,
// with echo, holds only the queue-group subscriptions, so the publishing
// node's own members stay in the queue group: NATS picks one member node
// among all of them, the publisher included.
//
// Retained messages are a JetStream stream (RetainedStream, retained.go)
// and presence, connection counts and node liveness a JetStream KV bucket
// (StateBucket, state.go). Without JetStream on the servers the state
// stays per node, and retained messages published before a node started
// are lost to it: each logged once at start.
//
// Publications go to the subject of their routing key; a node subscribes to
// the subjects of the keys and patterns it has interest in (one NATS
// subscription per pattern, reference-counted), so NATS sends one message
// per interested node. A load-balanced group is a NATS queue group: each
// node with members of it queue-subscribes, and NATS hands each message to
// one of them. Every node follows every retained publish. nats.go keeps
// the subscriptions across reconnects and buffers publishes while
// disconnected; nothing here blocks on the network.
type Broker struct {
	cfg    Config
	log    *zap.Logger
	msgs   string // subject prefix of publications
	kept   string // subject prefix of retained copies
	seq    atomic.Uint64
	nc     *nats.Conn // NoEcho: publishes, broadcast interest, retained, JetStream
	qc     *nats.Conn // echo: queue groups
	state  *shared
	h      broker.Handler
	dedup  dedup
	stats  counters
	mu     sync.Mutex
	subs   map[interest]*interestSubs
	closed bool

	// waiting are the InterestReady callbacks of interests whose NATS
	// subscriptions are not flushed yet; flushing says a flusher runs.
	waiting  []interestWait
	flushing bool
	// flusher is the flusher goroutine while one runs (Add under mu);
	// stop waits for it once the connections are closed.
	flusher sync.WaitGroup

	ret retention // retained.go

	replicasWarned atomic.Bool // replicas.go

	adminLate atomic.Uint64  // admin requests dropped past their deadline (operator.go)
	answering sync.WaitGroup // admin requests being answered (Add under mu while not closed); stop waits
	downMu    sync.Mutex
	down      map[string]time.Time // nodes judged down, and when (operator.go)
}

type interest struct {
	group    string // "" for broadcast interest
	key      string
	wildcard bool
}

type interestSubs struct {
	count   int
	subs    []*nats.Subscription
	flushed bool // the SUB lines have reached the server (InterestReady)
}

type counters struct {
	published, dropped, received, duplicates, malformed, reconnects atomic.Uint64
	interestFlushFailed                                             atomic.Uint64
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
	if cfg.RetainWait <= 0 {
		cfg.RetainWait = 5 * time.Second
	}
	if cfg.RetainReplicas <= 0 {
		cfg.RetainReplicas = 1
	}
	if cfg.StateReplicas <= 0 {
		cfg.StateReplicas = cfg.RetainReplicas
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = time.Second
	}
	if cfg.LivenessTimeout <= 0 {
		cfg.LivenessTimeout = 3 * time.Second
	}
	if cfg.LivenessTimeout < 2*cfg.Heartbeat {
		return nil, errors.New("natsbroker: LivenessTimeout must be at least twice Heartbeat")
	}
	if cfg.StateTimeout <= 0 {
		cfg.StateTimeout = 2 * time.Second
	}
	if cfg.StateQueue <= 0 {
		cfg.StateQueue = 65536
	}
	b := &Broker{cfg: cfg, log: cfg.Logger, msgs: cfg.Prefix + ".m", kept: cfg.Prefix + ".r",
		subs: map[interest]*interestSubs{}}
	b.seq.Store(uint64(rand.Uint32()) << 32) // this run's sequence space (see codec.go)
	b.state = newShared(b)
	return b, nil
}

// Start connects to NATS, subscribes to the retained subjects and starts
// sharing state. When connected, it waits up to RetainWait for the retained
// stream to be followed (see retained.go; past that, the node follows
// retained publishes live and keeps retrying in the background) and up to
// StateTimeout for the other nodes' current state. A first connection that
// fails is retried in the background (the node serves its own connections
// meanwhile), so Start fails only on a bad configuration.
func (b *Broker) Start(_ context.Context, h broker.Handler) error {
	b.h = h
	url := strings.Join(b.cfg.URLs, ",")
	nc, err := nats.Connect(url, b.options("kraken "+b.cfg.Node, true)...)
	if err != nil {
		return fmt.Errorf("natsbroker: %w", err)
	}
	qc, err := nats.Connect(url, b.options("kraken "+b.cfg.Node+" groups", false)...)
	if err != nil {
		nc.Close()
		return fmt.Errorf("natsbroker: %w", err)
	}
	b.nc, b.qc = nc, qc
	if err := b.followRetained(); err != nil {
		nc.Close()
		qc.Close()
		return err
	}
	b.state.start()
	if nc.IsConnected() {
		b.log.Info("connected to NATS", zap.String("server", nc.ConnectedUrlRedacted()), zap.String("node", b.cfg.Node))
		b.state.waitReady(b.cfg.StateTimeout)
	}
	return nil
}

// options are the nats.go options of one of the two connections; the
// first (publish) one is NoEcho and triggers the shared state's rewrite on
// reconnection.
func (b *Broker) options(name string, first bool) []nats.Option {
	conn := "groups"
	if first {
		conn = "publish"
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(b.cfg.ReconnectBuffer),
		nats.RetryOnFailedConnect(true),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if nc.IsClosed() {
				return // Close, not a loss
			}
			b.log.Warn("NATS connection lost; serving local traffic, reconnecting", zap.String("conn", conn), zap.Error(err))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			b.stats.reconnects.Add(1)
			b.log.Info("NATS reconnected; interest declared again", zap.String("conn", conn),
				zap.String("server", nc.ConnectedUrlRedacted()))
			if first {
				b.state.reconnected()
			}
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			b.log.Warn("NATS error", zap.String("conn", conn), zap.Error(err))
		}),
	}
	if first {
		check := func(nc *nats.Conn) { b.checkReplicas(nc) }
		opts = append(opts, nats.NoEcho(), nats.ConnectHandler(check), nats.DiscoveredServersHandler(check))
	}
	return append(opts, b.cfg.Options...)
}

// Publish implements broker.Broker: one NATS message to the key's subject,
// and for a retained publish one more to its retained subject.
func (b *Broker) Publish(m *broker.Message) error {
	seq := b.seq.Add(1)
	payload := encode(m, seq)
	if err := b.send(keySubject(b.msgs, m.Key), payload); err != nil {
		return err
	}
	if m.Retain {
		subject := keySubject(b.kept, m.Key)
		if b.ret.following.Load() {
			return b.publishRetained(subject, payload, seq) // acknowledged by the stream, or recaptured
		}
		if !b.ret.settled.Load() {
			b.keepPending(subject, payload, seq) // stored in the stream once it is followed
		}
		return b.send(subject, payload)
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

type interestWait struct {
	e    *interestSubs
	done func()
}

// interestFlushWait bounds how long InterestReady waits for NATS to
// confirm the node's new subscriptions before it answers anyway.
const interestFlushWait = 2 * time.Second

// InterestReady implements broker.InterestWaiter: done runs once the NATS
// subscriptions of the node's interest in key (group "" for broadcast)
// have reached its NATS server (a flush: PING, PONG), at once when they
// already have. Callbacks arriving while a flush is under way are served
// by the next one, so a burst of first subscriptions costs a few round
// trips, not one each. Within one NATS server this means the server will
// route the node its next publication on key; across the servers of a
// NATS cluster a subscription also needs the servers' own interest
// propagation (docs/cluster.md).
func (b *Broker) InterestReady(group, key string, wildcard bool, done func()) {
	b.mu.Lock()
	e := b.subs[interest{group: group, key: key, wildcard: wildcard}]
	if e == nil || e.flushed || b.closed {
		b.mu.Unlock()
		done()
		return
	}
	b.waiting = append(b.waiting, interestWait{e: e, done: done})
	start := !b.flushing
	b.flushing = true
	if start {
		b.flusher.Add(1)
	}
	b.mu.Unlock()
	if start {
		go b.flushInterest() // owned by flusher (Add above, under mu)
	}
}

// flushInterest flushes both NATS connections until no callback waits,
// then marks the interests flushed and runs their callbacks.
func (b *Broker) flushInterest() {
	defer b.flusher.Done()
	for {
		b.mu.Lock()
		batch := b.waiting
		b.waiting = nil
		if len(batch) == 0 {
			b.flushing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		err := b.nc.FlushTimeout(interestFlushWait)
		if err == nil && b.qc != b.nc {
			err = b.qc.FlushTimeout(interestFlushWait)
		}
		if err != nil {
			b.stats.interestFlushFailed.Add(1)
			b.log.Warn("NATS did not confirm new subscriptions in time: answering them anyway", zap.Error(err))
		}
		b.mu.Lock()
		for _, w := range batch {
			w.e.flushed = w.e.flushed || err == nil
		}
		b.mu.Unlock()
		for _, w := range batch {
			w.done()
		}
	}
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
			s, err = b.qc.QueueSubscribe(subject, queueName(name, key, in.wildcard), func(msg *nats.Msg) {
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

// Ready reports whether both of the node's connections to NATS are up (an
// error saying which is not otherwise), for readiness checks.
func (b *Broker) Ready() error {
	if b.nc == nil || !b.nc.IsConnected() {
		return errors.New("natsbroker: not connected to NATS")
	}
	if !b.qc.IsConnected() {
		return errors.New("natsbroker: group connection to NATS is down")
	}
	return nil
}

// StateReady implements broker.StateReporter: nil while this node's
// writes to the state bucket (StateBucket) and its watch of it succeed,
// also before Start and when the servers have no JetStream (the state then
// stays per node); otherwise an error naming what fails ("write": own
// keys, heartbeat, making or binding the bucket; "watch"), for how long
// and the last error, and for a bucket of one replica that it is offline
// while its server is down. Each failure is counted in Stats.StateErrors,
// and logged: the first of an outage at once, then at most one line per
// 10 s with the count of those not logged; the end of an outage is logged
// too. It takes a mutex briefly, only while something fails.
func (b *Broker) StateReady() error { return b.state.health.err() }

// ConnectedURL returns the URL of the NATS server the node's publish
// connection is connected to, credentials redacted, or "" while
// disconnected.
func (b *Broker) ConnectedURL() string {
	if b.nc == nil {
		return ""
	}
	return b.nc.ConnectedUrlRedacted()
}

// Stats returns the counters.
func (b *Broker) Stats() Stats {
	return Stats{Published: b.stats.published.Load(), Dropped: b.stats.dropped.Load(),
		Recaptured: b.ret.recaptured.Load(), Unkept: b.ret.unkept.Load(),
		Received: b.stats.received.Load(), Duplicates: b.stats.duplicates.Load(),
		Malformed: b.stats.malformed.Load(), Reconnects: b.stats.reconnects.Load(),
		StateWrites: b.state.stats.writes.Load(), StateDropped: b.state.stats.dropped.Load(),
		StateErrors: b.state.stats.errors.Load(), StateMalformed: b.state.stats.malformed.Load(),
		NodesDown: b.state.stats.nodesDown.Load(), Purged: b.state.stats.purged.Load(),
		Rejoins: b.state.stats.rejoins.Load()}
}

// Close implements broker.Broker: the node deletes its liveness key (the
// others call HandleNodeDown) and its presence and count keys, within
// StateTimeout, then flushes pending publishes (for at most a second) and
// closes both connections.
func (b *Broker) Close() error { return b.stop(true) }

// stop closes the broker; without goodbye it leaves its keys behind, as a
// killed node does (tests).
func (b *Broker) stop(goodbye bool) error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.state.health.close() // what fails from now on is the closing
	if b.nc == nil {
		return nil
	}
	if !goodbye {
		b.nc.Close()
		b.qc.Close()
	}
	// No goodbye while disconnected: the others judge this node down.
	b.state.shutdown(goodbye && b.nc.IsConnected())
	stopped := b.stopRetained()
	for _, c := range []*nats.Conn{b.nc, b.qc} {
		if c.IsConnected() {
			_ = c.FlushTimeout(time.Second)
		}
		c.Close()
	}
	b.state.waitStopped(time.Second)
	b.flusher.Wait()   // a flush on a closed connection returns at once
	b.answering.Wait() // each ends by its request's deadline; its answer fails on the closed connection
	select {
	case <-stopped:
	case <-time.After(time.Second): // ended by the closed connection
	}
	return nil
}

var (
	_ broker.Broker        = (*Broker)(nil)
	_ broker.StateReporter = (*Broker)(nil)
)
