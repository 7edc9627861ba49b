package sessionkv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/natssubject"
)

// Defaults of Config.
const (
	DefaultPrefix   = "kraken"
	DefaultReplicas = 1
	DefaultTTL      = 24 * time.Hour
)

// AckTimeout bounds the wait for the stream's acknowledgement of one
// record of Save, whatever the context; past it Save fails.
const AckTimeout = 10 * time.Second

// ListenFlush bounds Listen's wait for the server to have its
// subscription.
const ListenFlush = 5 * time.Second

// maxPending bounds the records of Save published and waiting for their
// acknowledgement, all Save calls of a Store together; Save waits past it.
const maxPending = 4096

// ErrClosed is returned by the methods of a Store after Close.
var ErrClosed = errors.New("sessionkv: store closed")

// Spec is one subscription of a kept session.
type Spec struct {
	// Pattern is the topic as the client subscribed to it (display form).
	Pattern string `json:"p"`
	// Key is the routing key, or the MQTT-style pattern with "+" and a
	// trailing "#", that the subscription matches.
	Key string `json:"k"`
	// Wildcard is true when Key is a pattern.
	Wildcard bool `json:"w,omitempty"`
	// Filters are the subscription's filters, as the client gave them.
	Filters []string `json:"f,omitempty"`
	// QoS is the subscription's delivery level (0, 1 or 2).
	QoS uint8 `json:"q,omitempty"`
	// LoadBalance is true for a shared subscription: one member of Group
	// receives each message.
	LoadBalance bool `json:"lb,omitempty"`
	// Group is the load-balanced group's name ("" when LoadBalance is false).
	Group string `json:"g,omitempty"`
	// Durable is true for a member of a durable group (hub.SubSpec.Durable).
	Durable bool `json:"d,omitempty"`
}

// Record is one resumable session as every node can read it.
type Record struct {
	// ID is the session's identity, any bytes (e.g. "actor\x00clientId");
	// its record is stored under Key(ID).
	ID string `json:"id"`
	// Node is the ID of the node holding the session, live or parked.
	Node string `json:"node"`
	// Live is true when the session's connection was open at Saved.
	Live bool `json:"live"`
	// Specs are the session's subscriptions.
	Specs []Spec `json:"specs"`
	// Position is the session's place in the message stream: every
	// message accepted before it was delivered to the client (and
	// acknowledged, for QoS ≥ 1).
	Position time.Time `json:"pos"`
	// Saved is when the record was written.
	Saved time.Time `json:"saved"`
	// Expiry is how long the session is kept after its connection drops
	// (JSON: nanoseconds).
	Expiry time.Duration `json:"expiry"`
}

// Expires returns when a session parked at Saved may be dropped: Saved +
// Expiry.
func (r Record) Expires() time.Time { return r.Saved.Add(r.Expiry) }

// Config configures a Store. Zero fields take the defaults above.
type Config struct {
	// Conn is the NATS connection the store uses (required); JetStream
	// must be enabled on its servers. The Store does not close it.
	Conn *nats.Conn
	// Prefix is the first subject token, as natsbroker's and history's:
	// the bucket is Bucket(Prefix), the takeover subjects
	// <Prefix>.session.takeover.<node> (default "kraken").
	Prefix string
	// Replicas is the bucket's number of replicas (default 1; at most 5,
	// and no more than the JetStream servers of the cluster).
	Replicas int
	// TTL is how long a record is kept after it was last saved (the
	// bucket's TTL, default 24 h); JetStream removes it then.
	TTL time.Duration
	// Logger receives the store's logs (default: none).
	Logger *zap.Logger
}

func (c *Config) setDefaults() {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Replicas <= 0 {
		c.Replicas = DefaultReplicas
	}
	if c.TTL <= 0 {
		c.TTL = DefaultTTL
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
}

// Bucket returns the key-value bucket name of prefix: "KRAKEN_SESSIONS"
// for the default prefix "kraken" (and ""); otherwise the prefix with
// every byte outside [A-Za-z0-9_-] replaced by '_', then "_SESSIONS".
func Bucket(prefix string) string { return natssubject.StoreName(prefix, "SESSIONS") }

// Key returns the bucket key of the session id: the lower-case hex
// SHA-256 of its bytes (64 characters).
func Key(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Store reads and writes the session records of a cluster in its bucket,
// and carries takeover notices between nodes. It is safe for concurrent
// use.
type Store struct {
	cfg    Config
	log    *zap.Logger
	nc     *nats.Conn
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	bucket string
	put    string // "$KV.<bucket>."

	mu     sync.Mutex
	closed bool
	subs   map[*nats.Subscription]struct{} // Listen's, not stopped
}

// Open makes the bucket of cfg, or updates its settings to cfg's when it
// exists, and returns the Store that uses it. It fails when cfg.Conn is
// nil, JetStream cannot be reached within ctx or is not enabled, or the
// servers refuse the bucket's configuration (say, more replicas than
// servers); the error starts with "sessionkv:".
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Conn == nil {
		return nil, errors.New("sessionkv: Config.Conn is nil")
	}
	cfg.setDefaults()
	js, err := jetstream.New(cfg.Conn,
		jetstream.WithPublishAsyncMaxPending(maxPending),
		jetstream.WithPublishAsyncTimeout(AckTimeout))
	if err != nil {
		return nil, fmt.Errorf("sessionkv: %w", err)
	}
	bucket := Bucket(cfg.Prefix)
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      bucket,
		Description: "kraken resumable sessions",
		History:     1,
		TTL:         cfg.TTL,
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("sessionkv: bucket %s: %w", bucket, err)
	}
	return &Store{cfg: cfg, log: cfg.Logger, nc: cfg.Conn, js: js, kv: kv, bucket: bucket,
		put: "$KV." + bucket + ".", subs: make(map[*nats.Subscription]struct{})}, nil
}

// Bucket returns the name of the store's bucket.
func (s *Store) Bucket() string { return s.bucket }

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Save writes recs, each replacing the record of its ID, and returns once
// the bucket has acknowledged every one. The records are published
// together (JetStream asynchronous publishes, at most 4,096 waiting at a
// time), not one round trip each. It returns the first error, wrapped
// with "sessionkv:": a record that does not encode or is larger than the
// connection's maximum payload, a publish refused or not acknowledged
// within AckTimeout, ctx's error when ctx ends first, ErrClosed after
// Close. The records before or after a failed one may have been saved.
func (s *Store) Save(ctx context.Context, recs []Record) error {
	if s.isClosed() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sessionkv: save: %w", err)
	}
	futures := make([]jetstream.PubAckFuture, 0, len(recs))
	var firstErr error
	for i := range recs {
		data, err := json.Marshal(&recs[i])
		if err != nil {
			firstErr = fmt.Errorf("sessionkv: record %d: %w", i, err)
			break
		}
		f, err := s.publish(ctx, &nats.Msg{Subject: s.put + Key(recs[i].ID), Data: data})
		if err != nil {
			firstErr = fmt.Errorf("sessionkv: save: %w", err)
			break
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			if firstErr == nil {
				firstErr = fmt.Errorf("sessionkv: save: %w", err)
			}
		case <-ctx.Done():
			if firstErr == nil {
				firstErr = fmt.Errorf("sessionkv: save: %w", ctx.Err())
			}
			return firstErr
		}
	}
	return firstErr
}

// publish publishes msg asynchronously; while maxPending publishes wait for
// their acknowledgement it waits, until ctx ends.
func (s *Store) publish(ctx context.Context, msg *nats.Msg) (jetstream.PubAckFuture, error) {
	for {
		f, err := s.js.PublishMsgAsync(msg)
		if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
			return f, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Load returns the record of the session id, ok false when the bucket has
// none (never saved, deleted, or removed by the TTL). The record's ID is
// id. It fails, with an error starting with "sessionkv:", when the bucket
// cannot be read within ctx, the stored value does not decode, or after
// Close (ErrClosed).
func (s *Store) Load(ctx context.Context, id string) (Record, bool, error) {
	if s.isClosed() {
		return Record{}, false, ErrClosed
	}
	e, err := s.kv.Get(ctx, Key(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("sessionkv: load: %w", err)
	}
	if e.Operation() != jetstream.KeyValuePut {
		return Record{}, false, nil
	}
	var r Record
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return Record{}, false, fmt.Errorf("sessionkv: record %s: %w", e.Key(), err)
	}
	r.ID = id
	return r, true, nil
}

// Delete removes the record of the session id; a missing record is no
// error. It fails, with an error starting with "sessionkv:", when the
// bucket cannot be written within ctx, or after Close (ErrClosed).
func (s *Store) Delete(ctx context.Context, id string) error {
	if s.isClosed() {
		return ErrClosed
	}
	if err := s.kv.Delete(ctx, Key(id)); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("sessionkv: delete: %w", err)
	}
	return nil
}

// TakeoverSubject returns the core NATS subject of node's takeover
// notices: <Prefix>.session.takeover.<node>, node escaped as one subject
// token.
func (s *Store) TakeoverSubject(node string) string {
	b := make([]byte, 0, len(s.cfg.Prefix)+len(".session.takeover.")+len(node))
	b = append(b, s.cfg.Prefix...)
	b = append(b, ".session.takeover."...)
	return string(natssubject.AppendLevel(b, node))
}

// TakeOver tells node that the session id is taken over elsewhere: it
// publishes id to node's takeover subject (core NATS, at most once, no
// reply). It fails when the connection refuses the publish (closed, its
// reconnect buffer full) or after Close (ErrClosed); it does not say
// whether node received it.
func (s *Store) TakeOver(node, id string) error {
	if s.isClosed() {
		return ErrClosed
	}
	if err := s.nc.Publish(s.TakeoverSubject(node), []byte(id)); err != nil {
		return fmt.Errorf("sessionkv: takeover: %w", err)
	}
	return nil
}

// Listen calls fn with the session id of each takeover notice sent to
// node, until stop is called or the Store is closed. fn runs on the
// subscription's goroutine, one notice at a time, in the order received:
// it should return quickly (a slow fn makes the subscription fall behind
// and, past the connection's pending limits, lose notices). Listen returns
// once the server has the subscription (a flush, within ListenFlush), so a
// TakeOver sent afterwards by any connection reaches it. It fails when the
// connection cannot subscribe or flush, or after Close (ErrClosed). stop
// may be called more than once.
func (s *Store) Listen(node string, fn func(id string)) (stop func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	sub, err := s.nc.Subscribe(s.TakeoverSubject(node), func(m *nats.Msg) { fn(string(m.Data)) })
	if err != nil {
		return nil, fmt.Errorf("sessionkv: listen: %w", err)
	}
	if err := s.nc.FlushTimeout(ListenFlush); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("sessionkv: listen: %w", err)
	}
	s.subs[sub] = struct{}{}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[sub]; ok {
			delete(s.subs, sub)
			if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				s.log.Debug("sessionkv: takeover unsubscribe", zap.String("node", node), zap.Error(err))
			}
		}
	}, nil
}

// Close stops every Listen, gives up the acknowledgements that Saves under
// way wait for (those Saves fail) and makes later calls fail with
// ErrClosed. It does not close Config.Conn. Calling it again does nothing.
func (s *Store) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	for sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
	s.js.CleanupPublisher()
}
