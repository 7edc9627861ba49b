package natsbroker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/natssubject"
)

// Retained messages are the JetStream stream RetainedStream(Prefix) on the
// subjects <Prefix>.r.> (one message per retained subject, the newest). A
// node follows them in one of two ways:
//
//   - live: a core subscription to <Prefix>.r.> gets every retained publish
//     made while it is up, and nothing set before;
//   - through the stream: an ordered consumer (deliver last per subject)
//     replays the newest message of every retained subject, then follows.
//
// Start subscribes live at once, then makes or binds the stream and the
// consumer, retrying in the background with a bounded backoff until it
// works, the servers say they have no JetStream (the node then stays live
// only), or Close. Start waits up to RetainWait for it; past that it
// returns, logs once, and logs again once the stream is followed. When it
// is, the live subscription is dropped. Every retained copy handed over
// sets the node's retained store to that message (HandleRetained stores,
// it does not deliver), so a message that comes both ways during the
// switch, or again in the consumer's replay, is set twice to the same
// value: the consumer hands the newest message of each subject last, in
// stream order.
//
// While the stream is not followed, a retained publish of this node goes
// out live (the other nodes' stores get it) but may miss the stream, when
// the stream does not exist yet or cannot be reached. So the node keeps the
// newest one per subject (at most MaxRetained subjects) and, once it
// follows the stream, stores each in it again ("recaptures" it) unless the
// stream holds that message already or a newer one for the subject: the
// same payload, with the Kraken-Recapture header, published with the
// subject's last sequence expected, so a newer publish made meanwhile wins.
// Nodes that follow live only ignore recaptures (they had the message live,
// and a recapture may be older than what they hold); consumers of the
// stream apply them like any retained publish.
//
// Once the node follows the stream, the stream is the only way its retained
// publishes reach the other nodes that follow it (they have dropped their
// live subscription). So each goes out with a reply subject and the node
// waits, without blocking the publisher, for the stream's acknowledgement:
// a publish the stream refused, that no server took (no stream interest on
// the node's server: the stream's server is down or not reachable), or
// that is not acknowledged within retainAckWait is kept as above, and the
// follower goroutine, which stays until Close, recaptures it every
// retainRetry until the stream has it or a newer one for its subject. A retained publish made while the stream cannot be reached
// thus reaches the other nodes once it can.

// retainAttempt bounds each attempt to make or bind the stream.
const retainAttempt = 5 * time.Second

// retainBackoffMax bounds the wait between two attempts.
const retainBackoffMax = 5 * time.Second

// retainAckWait is how long a retained publish of a node that follows the
// stream waits for the stream's acknowledgement before it is recaptured.
const retainAckWait = 2 * time.Second

// retainRetry is how often the publishes waiting for recapture are tried
// again.
const retainRetry = time.Second

// recaptureHeader marks a retained message a node stores again in the
// stream after following it (see above).
const recaptureHeader = "Kraken-Recapture"

// RetainedStream returns the JetStream stream name of the retained
// messages of prefix: "KRAKEN_RETAINED" for the default prefix "kraken"
// (and ""), which existing deployments already hold; otherwise the prefix
// with every byte outside [A-Za-z0-9_-] replaced by '_', then "_RETAINED".
// Prefixes that map to the same name (say "a.b" and "a_b", or "KRAKEN" and
// the default) would share one stream: give clusters on one NATS system
// prefixes that differ after the mapping.
func RetainedStream(prefix string) string { return natssubject.StoreName(prefix, "RETAINED") }

// retention is a node's following of the retained messages.
type retention struct {
	started   time.Time     // Start: own stored messages older than this are replayed to this node
	following atomic.Bool   // through the stream (the live subscription is then ignored, and gone)
	settled   atomic.Bool   // following, or no JetStream: nothing to recapture any more
	ready     chan struct{} // closed when following
	done      chan struct{} // closed when the follower goroutine ends
	ctx       context.Context
	cancel    context.CancelFunc

	mu      sync.Mutex
	live    *nats.Subscription       // nil once following
	consume jetstream.ConsumeContext // nil until following
	pending map[string]pendingRetained
	warned  bool  // Start gave up waiting and logged it
	lastErr error // of the last failed attempt

	// Once following: acks is the subject prefix of the stream's
	// acknowledgements of own retained publishes (set before following),
	// unacked those not acknowledged yet, by sequence number.
	acks    string
	unacked map[uint64]unackedRetained

	recaptured, unkept atomic.Uint64
}

// pendingRetained is an own retained publish made while the stream was not
// followed: its payload and sequence number.
type pendingRetained struct {
	payload []byte
	seq     uint64
	at      time.Time
}

// unackedRetained is an own retained publish made while following the
// stream, waiting for the stream's acknowledgement.
type unackedRetained struct {
	subject string
	pendingRetained
}

// followRetained subscribes live to the retained subjects and starts the
// follower goroutine; it waits up to RetainWait for the stream to be
// followed, or for the servers to say they have no JetStream.
func (b *Broker) followRetained() error {
	r := &b.ret
	r.started = time.Now()
	r.ready, r.done = make(chan struct{}), make(chan struct{})
	r.ctx, r.cancel = context.WithCancel(context.Background())
	live, err := b.nc.Subscribe(b.kept+".>", b.onRetainedLive)
	if err != nil {
		r.cancel()
		close(r.done)
		return fmt.Errorf("natsbroker: subscribe to retained messages: %w", err)
	}
	r.live = live
	go b.runRetained() // owned by the broker: stopRetained cancels it and waits on r.done
	wait := b.cfg.RetainWait
	if !b.nc.IsConnected() {
		wait = 0 // the first connection is retried: do not hold Start up
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-r.ready:
	case <-r.done:
	case <-t.C:
		r.mu.Lock()
		late, lastErr := !r.settled.Load(), r.lastErr // neither following nor told there is no JetStream
		r.warned = late
		r.mu.Unlock()
		if late {
			b.log.Warn("JetStream not reachable yet: retained messages are followed live and kept in the stream once it is; retrying",
				zap.String("stream", RetainedStream(b.cfg.Prefix)), zap.Duration("waited", wait), zap.Error(lastErr))
		}
	}
	return nil
}

// runRetained makes or binds the stream and the consumer until it works,
// the servers have no JetStream, or Close; once following, it recaptures
// the own retained publishes the stream did not acknowledge, until Close.
func (b *Broker) runRetained() {
	r := &b.ret
	defer close(r.done)
	wait := 100 * time.Millisecond
	for {
		js, st, err := b.tryRetained()
		if err == nil {
			b.retryRetained(js, st)
			return
		}
		if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			b.log.Warn("JetStream unavailable: retained messages set before this node started are not recovered", zap.Error(err))
			r.mu.Lock()
			r.settled.Store(true)
			r.pending = nil
			r.mu.Unlock()
			return
		}
		r.mu.Lock()
		r.lastErr = err
		r.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, retainBackoffMax)
	}
}

// tryRetained makes one attempt; on success the node follows the stream,
// its live subscription is dropped and its pending publishes recaptured.
func (b *Broker) tryRetained() (jetstream.JetStream, jetstream.Stream, error) {
	r := &b.ret
	ctx, cancel := context.WithTimeout(r.ctx, retainAttempt)
	defer cancel()
	js, err := jetstream.New(b.nc)
	if err != nil {
		return nil, nil, err
	}
	if _, err := js.AccountInfo(ctx); err != nil {
		return nil, nil, err // ErrJetStreamNotEnabled without JetStream on the servers
	}
	st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: RetainedStream(b.cfg.Prefix), Subjects: []string{b.kept + ".>"}, MaxMsgsPerSubject: 1,
		MaxAge: b.cfg.RetainTTL, MaxMsgs: b.cfg.MaxRetained, Discard: jetstream.DiscardOld,
		Replicas: b.cfg.RetainReplicas, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, nil, err
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.kept + ".>"}, DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
	if err != nil {
		return nil, nil, err
	}
	acks := b.nc.NewRespInbox()
	acksSub, err := b.nc.Subscribe(acks+".*", b.onRetainedAck)
	if err != nil {
		return nil, nil, err
	}
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		// This node's own publishes from before it started (a fixed
		// NODE_ID across a restart) are replayed; later ones it applied
		// itself.
		md, _ := msg.Metadata()
		b.onRetainedData(msg.Data(), md != nil && md.Timestamp.Before(r.started))
	})
	if err != nil {
		_ = acksSub.Unsubscribe()
		return nil, nil, err
	}
	r.mu.Lock()
	r.consume = cc // stopped by Close, even if Close is under way
	r.acks = acks + "."
	r.following.Store(true)
	r.settled.Store(true)
	live, pending, warned := r.live, r.pending, r.warned
	r.live, r.pending = nil, nil
	r.mu.Unlock()
	close(r.ready)
	if live != nil {
		_ = live.Unsubscribe()
	}
	if warned {
		b.log.Info("JetStream reachable: retained messages are kept in the stream and replayed again",
			zap.String("stream", RetainedStream(b.cfg.Prefix)), zap.Int("recapturing", len(pending)))
	}
	failed, err := b.recapture(ctx, js, st, pending)
	if err != nil {
		b.log.Warn("retained messages not stored in the stream yet; retrying", zap.Int("messages", len(failed)), zap.Error(err))
	}
	b.keepFailed(failed)
	return js, st, nil
}

// publishRetained sends an own retained publish of a node that follows the
// stream, with a reply subject for the stream's acknowledgement; it does
// not wait for it (onRetainedAck, retryRetained).
func (b *Broker) publishRetained(subject string, payload []byte, seq uint64) error {
	r := &b.ret
	r.mu.Lock()
	if r.unacked == nil {
		r.unacked = map[uint64]unackedRetained{}
	}
	r.unacked[seq] = unackedRetained{subject: subject, pendingRetained: pendingRetained{payload: payload, seq: seq, at: time.Now()}}
	reply := r.acks + strconv.FormatUint(seq, 10)
	r.mu.Unlock()
	if err := b.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: payload}); err != nil {
		r.mu.Lock()
		delete(r.unacked, seq)
		r.mu.Unlock()
		b.stats.dropped.Add(1)
		return fmt.Errorf("natsbroker: %w", err)
	}
	b.stats.published.Add(1)
	return nil
}

// onRetainedAck handles the answer to an own retained publish: the
// stream's acknowledgement, its refusal, or no responders (no server took
// it); all but the first keep the publish for recapture.
func (b *Broker) onRetainedAck(msg *nats.Msg) {
	r := &b.ret
	seq, err := strconv.ParseUint(msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:], 10, 64)
	if err != nil {
		return
	}
	r.mu.Lock()
	u, ok := r.unacked[seq]
	delete(r.unacked, seq)
	r.mu.Unlock()
	if !ok {
		return // timed out and kept for recapture already
	}
	var ack struct {
		Stream string          `json:"stream"`
		Error  json.RawMessage `json:"error"`
	}
	if msg.Header.Get("Status") == "" && json.Unmarshal(msg.Data, &ack) == nil && ack.Stream != "" && ack.Error == nil {
		return // stored
	}
	b.keepFailed(map[string]pendingRetained{u.subject: u.pendingRetained})
}

// keepFailed keeps own retained publishes the stream did not store, for
// retryRetained, the newest per subject (at most MaxRetained subjects).
func (b *Broker) keepFailed(failed map[string]pendingRetained) {
	if len(failed) == 0 {
		return
	}
	r := &b.ret
	r.mu.Lock()
	if r.pending == nil {
		r.pending = map[string]pendingRetained{}
	}
	for subject, p := range failed {
		old, ok := r.pending[subject]
		switch {
		case ok && !p.at.After(old.at):
		case !ok && int64(len(r.pending)) >= b.cfg.MaxRetained:
			r.unkept.Add(1)
		default:
			r.pending[subject] = p
		}
	}
	r.mu.Unlock()
}

// retryRetained recaptures, every retainRetry until Close, the own
// retained publishes the stream did not store or did not acknowledge
// within retainAckWait.
func (b *Broker) retryRetained(js jetstream.JetStream, st jetstream.Stream) {
	r := &b.ret
	t := time.NewTicker(retainRetry)
	defer t.Stop()
	warned := false // logged that the stream does not take them, once until it does
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now()
		r.mu.Lock()
		var late map[string]pendingRetained
		for seq, u := range r.unacked {
			if now.Sub(u.at) >= retainAckWait {
				delete(r.unacked, seq)
				if late == nil {
					late = map[string]pendingRetained{}
				}
				if old, ok := late[u.subject]; !ok || u.at.After(old.at) {
					late[u.subject] = u.pendingRetained
				}
			}
		}
		r.mu.Unlock()
		b.keepFailed(late)
		r.mu.Lock()
		pending := r.pending
		r.pending = nil
		r.mu.Unlock()
		if len(pending) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(r.ctx, retainAttempt)
		failed, err := b.recapture(ctx, js, st, pending)
		cancel()
		if r.ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && !warned:
			warned = true
			b.log.Warn("retained messages not stored in the stream yet; retrying", zap.Int("messages", len(failed)), zap.Error(err))
		case err == nil && warned:
			warned = false
			b.log.Info("retained messages stored in the stream again", zap.Int("messages", len(pending)))
		}
		b.keepFailed(failed) // unless a newer one failed meanwhile
	}
}

// keepPending records an own retained publish made while the stream is
// not followed, the newest per subject.
func (b *Broker) keepPending(subject string, payload []byte, seq uint64) {
	r := &b.ret
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.settled.Load() {
		return
	}
	if r.pending == nil {
		r.pending = map[string]pendingRetained{}
	}
	if _, ok := r.pending[subject]; !ok && int64(len(r.pending)) >= b.cfg.MaxRetained {
		r.unkept.Add(1)
		return
	}
	r.pending[subject] = pendingRetained{payload: payload, seq: seq, at: time.Now()}
}

// recapture stores the pending own publishes in the stream, each unless
// the stream holds it already or a newer message for its subject. At the
// first failed JetStream call it stops and returns, with that error, the
// publishes it has not stored, to try again.
func (b *Broker) recapture(ctx context.Context, js jetstream.JetStream, st jetstream.Stream, pending map[string]pendingRetained) (map[string]pendingRetained, error) {
	r := &b.ret
	var failed map[string]pendingRetained
	var firstErr error
	fail := func(subject string, p pendingRetained, err error) {
		if failed == nil {
			failed, firstErr = map[string]pendingRetained{}, err
		}
		failed[subject] = p
	}
	for subject, p := range pending {
		if failed != nil { // the stream cannot be reached: keep the rest for later
			failed[subject] = p
			continue
		}
		var last uint64
		stored, err := st.GetLastMsgForSubject(ctx, subject)
		switch {
		case err == nil:
			if m, seq, err := decode(stored.Data); err == nil && m.Node == b.cfg.Node && seq>>32 == p.seq>>32 {
				if seq >= p.seq {
					continue // captured, or a newer one of this run
				}
			} else if !stored.Time.Before(p.at) {
				continue // another node's (or run's), stored after this publish: newer
			}
			last = stored.Sequence
		case errors.Is(err, jetstream.ErrMsgNotFound):
		default:
			fail(subject, p, err)
			continue
		}
		msg := &nats.Msg{Subject: subject, Data: p.payload, Header: nats.Header{recaptureHeader: []string{"1"}}}
		if _, err := js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(last)); err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
				apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
				continue // a newer one was stored meanwhile
			}
			fail(subject, p, err)
			continue
		}
		r.recaptured.Add(1)
	}
	return failed, firstErr
}

// onRetainedLive is the live subscription's handler, until the node
// follows the stream.
func (b *Broker) onRetainedLive(msg *nats.Msg) {
	if b.ret.following.Load() || msg.Header.Get(recaptureHeader) != "" {
		return
	}
	b.onRetainedData(msg.Data, false)
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

// RetainedReady reports whether the node follows the retained stream in
// JetStream: it has replayed the retained messages set before it started,
// and its retained publishes are kept for nodes that start later. It is
// false while JetStream cannot be reached yet (the node follows live
// retained publishes and retries; its own are stored once it can) and
// when the servers have no JetStream.
func (b *Broker) RetainedReady() bool { return b.ret.following.Load() }

// stopRetained ends the follower goroutine, then stops the consumer; it
// returns once both are done or after a second (Stop waits while nats.go
// makes the consumer again, which it retries as long as the stream is
// missing: closing the connection ends that), with the channel that is
// closed when they are.
func (b *Broker) stopRetained() <-chan struct{} {
	r := &b.ret
	stopped := make(chan struct{})
	if r.cancel == nil {
		close(stopped)
		return stopped
	}
	r.cancel()
	// Ends on its own once the follower has and the consumer is stopped
	// (closing the connection ends a Stop that waits); Broker.stop waits
	// up to a second for it after closing the connection.
	go func() {
		defer close(stopped)
		<-r.done
		r.mu.Lock()
		cc := r.consume
		r.mu.Unlock()
		if cc != nil {
			cc.Stop()
		}
	}()
	select {
	case <-stopped:
	case <-time.After(time.Second):
	}
	return stopped
}
