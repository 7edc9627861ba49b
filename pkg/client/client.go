package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tinylib/msgp/msgp"
)

// Status is the connection state of a Client.
type Status int32

const (
	// StatusDisconnected: not connected; Connect may be called.
	StatusDisconnected Status = iota
	// StatusConnecting: Connect is in progress.
	StatusConnecting
	// StatusConnected: authenticated and serving.
	StatusConnected
	// StatusReconnecting: the connection was lost and attempts to restore
	// it are scheduled.
	StatusReconnecting
	// StatusClosed: Close was called; the client cannot be used again.
	StatusClosed
)

func (s Status) String() string {
	switch s {
	case StatusDisconnected:
		return "disconnected"
	case StatusConnecting:
		return "connecting"
	case StatusConnected:
		return "connected"
	case StatusReconnecting:
		return "reconnecting"
	case StatusClosed:
		return "closed"
	}
	return "status(" + strconv.Itoa(int(s)) + ")"
}

// Info describes the authenticated actor, from the broker's auth reply
// (wire-reference.md §2.3).
type Info struct {
	ActorTokenID string
	ProjectID    string
	ActorType    string
	// ProtocolVersion is the negotiated version (1 when the broker sent
	// none).
	ProtocolVersion int
	// RestoredSubscriptions is the broker's restoredSubscriptions list, as
	// raw MessagePack: the subscriptions of a resumed session (see
	// ReplayInfo) and those the auth backend lists; empty otherwise.
	RestoredSubscriptions Data
}

// Meta describes one delivered message (wire-reference.md §3.2; decisions.md
// OQ-36, D-2).
type Meta struct {
	// Topic is the subscription's topic, exactly as subscribed.
	Topic string
	// SourceTopic is the concrete topic of a delivery to a wildcard
	// subscription; "" otherwise.
	SourceTopic string
	// MsgID is the broker's message id; "" when the broker records none.
	MsgID string
	// Filter is the filter the message was published with; "" for none.
	Filter string
	// Sender is the publisher's actor token id (`from`); FromType is
	// "actor" or "server".
	Sender, FromType string
	// Timestamp is when the broker accepted the publish; zero if unknown.
	Timestamp time.Time
	// IsReplay marks a message replayed from storage: on kraken, a message
	// missed while disconnected and replayed, with its original MsgID,
	// after a reconnect resumed the session (see ReplayInfo).
	IsReplay bool
}

// Hydration is a `hydration` frame: the answer of the hydration webhook
// the broker called after a subscribe (wire-reference.md §5.3).
type Hydration struct {
	// Pattern is the subscribed topic as sent, e.g. "demo/general/history";
	// "" from a broker that sends only Topic.
	Pattern string
	// Topic is the last level of the subscribed topic, e.g. "history".
	Topic string
	// Data is the webhook's answer as one MessagePack value.
	Data Data
}

// Handler receives the messages of one subscription: data is the raw
// MessagePack value (see Data.Decode). Handlers run one at a time on the
// client's handler goroutine, never on the reader, and may call the
// client's methods.
type Handler func(data Data, meta Meta)

// Client is a connection to a kraken broker that survives reconnects. Its
// methods are safe for concurrent use.
type Client struct {
	token string
	opts  Options

	mu       sync.Mutex
	status   Status
	cn       *conn
	info     Info
	subs     map[string]*subscription
	subSeq   uint64
	unsubW   map[string][]chan error
	filtW    map[string][]*filtersReq
	pubW     map[string]chan error
	presence *presenceState
	presW    []*presenceReq
	lobbies  map[string]bool
	lobbyW   map[string][]*lobbyReq
	replay   replayState
	handled  handled
	disp     *dispatcher
	started  bool

	closed    chan struct{}
	closeCtx  context.Context
	closeStop context.CancelFunc
	wg        sync.WaitGroup

	acks      ackQueue
	refSeq    atomic.Uint64
	refPrefix string
}

// subscription is one subscribed topic with the options it was made with.
type subscription struct {
	topic   string
	seq     uint64
	handler Handler
	opts    subOptions
	active  bool // the broker confirmed it on the current connection
	lb      bool // loadBalance of the broker's reply
	waiters []subWaiter
}

// subWaiter is a Subscribe call, or install re-subscribing after a
// reconnect, waiting for the broker's answer.
type subWaiter struct {
	ch chan error
}

type filtersReq struct {
	filters FilterSet
	ch      chan error
}

// New returns a client for token. It does not connect: call Connect.
func New(token string, opts Options) *Client {
	opts.setDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	var rb [4]byte
	_, _ = rand.Read(rb[:])
	c := &Client{
		token: token, opts: opts,
		subs: map[string]*subscription{}, unsubW: map[string][]chan error{},
		filtW: map[string][]*filtersReq{}, pubW: map[string]chan error{},
		lobbies: map[string]bool{}, lobbyW: map[string][]*lobbyReq{},
		closed: make(chan struct{}), closeCtx: ctx, closeStop: cancel,
		refPrefix: hex.EncodeToString(rb[:]),
	}
	c.acks.kick = make(chan struct{}, 1)
	return c
}

// Status returns the current connection state.
func (c *Client) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Info returns the actor information of the last successful auth.
func (c *Client) Info() Info {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// SubscriptionInfo describes a subscription the client holds.
type SubscriptionInfo struct {
	Topic string
	QoS   int
	// LoadBalance and Group are the options it was made with.
	LoadBalance bool
	Group       string
	Filters     FilterSet
	// Active reports that the broker confirmed it on the current
	// connection.
	Active bool
}

// Subscriptions lists the client's subscriptions, in the order they were
// first made; they are re-made with these options after a reconnect.
func (c *Client) Subscriptions() []SubscriptionInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]SubscriptionInfo, 0, len(c.subs))
	for _, s := range c.sortedSubsLocked() {
		out = append(out, SubscriptionInfo{Topic: s.topic, QoS: s.opts.qos, LoadBalance: s.opts.loadBalance,
			Group: s.opts.group, Filters: s.opts.filters.clone(), Active: s.active})
	}
	return out
}

func (c *Client) sortedSubsLocked() []*subscription {
	subs := make([]*subscription, 0, len(c.subs))
	for _, s := range c.subs {
		subs = append(subs, s)
	}
	slices.SortFunc(subs, func(a, b *subscription) int { return int(a.seq) - int(b.seq) })
	return subs
}

// Connect opens the connection and authenticates. It returns the broker's
// refusal as a *Error (e.g. ErrAccessDenied). After a successful Connect the
// client reconnects by itself when the connection is lost (unless
// Options.DisableReconnect). Calling Connect again after the client gave up
// reconnecting re-makes every subscription.
func (c *Client) Connect(ctx context.Context) error {
	c.mu.Lock()
	switch c.status {
	case StatusClosed:
		c.mu.Unlock()
		return ErrClosed
	case StatusConnecting, StatusConnected, StatusReconnecting:
		c.mu.Unlock()
		return ErrAlreadyConnected
	}
	c.status = StatusConnecting
	if !c.started {
		c.started = true
		c.disp = newDispatcher(c.opts.HandlerQueueSize, func(n uint64) {
			c.report(&SlowConsumerError{Dropped: n})
		})
	}
	c.mu.Unlock()

	cn, info, err := c.dial(ctx, false)
	if err != nil {
		c.mu.Lock()
		if c.status == StatusConnecting {
			c.status = StatusDisconnected
		}
		c.mu.Unlock()
		return err
	}
	return c.install(cn, info)
}

// Close sends the acks still batched (Options.AckInterval), closes the
// connection and stops every goroutine of the client. It
// is idempotent. Pending requests fail with ErrClosed; queued deliveries are
// discarded and no callback runs after Close returns, except a handler that
// is running at that moment, which Close does not wait for (so a handler
// may call Close).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.status == StatusClosed {
		c.mu.Unlock()
		return nil
	}
	c.status = StatusClosed
	close(c.closed)
	c.closeStop()
	cn := c.cn
	c.cn = nil
	c.failPendingLocked(ErrClosed)
	for _, s := range c.subs {
		for _, w := range s.waiters {
			w.ch <- ErrClosed
		}
		s.waiters = nil
	}
	disp := c.disp
	c.mu.Unlock()
	if cn != nil {
		// The acks still batched go out first: a message handled and not
		// acked would be sent again (a resumed session, a durable group).
		for ids := c.acks.take(c.opts.AckBatchSize); len(ids) > 0; ids = c.acks.take(c.opts.AckBatchSize) {
			if cn.write(batchAckFrame(ids)) != nil {
				break
			}
		}
		cn.closeWith(1000, "Client disconnect")
	}
	c.wg.Wait()
	if disp != nil {
		disp.close()
	}
	return nil
}

// install makes cn the live connection, starts its goroutines, re-makes the
// subscriptions, lobby subscriptions and presence, waits for the broker to
// confirm the subscriptions and then reports OnConnect.
func (c *Client) install(cn *conn, info Info) error {
	c.mu.Lock()
	if c.status == StatusClosed {
		c.mu.Unlock()
		cn.closeWith(1000, "Client disconnect")
		return ErrClosed
	}
	c.cn, c.info, c.status = cn, info, StatusConnected
	c.replay = replayState{}
	c.wg.Add(2) // owned by wg: Close waits for the loops of the connection
	go c.readLoop(cn)
	go c.pingLoop(cn)
	var frames [][]byte
	var waits []chan error
	for _, s := range c.sortedSubsLocked() {
		s.active = false
		ch := make(chan error, 1)
		s.waiters = append(s.waiters, subWaiter{ch: ch})
		waits = append(waits, ch)
		frames = append(frames, subscribeFrame(s.topic, &s.opts))
	}
	for id := range c.lobbies {
		frames = append(frames, newFrame("lobbySubscribe").str("lobbyId", id).bytes())
	}
	if c.presence != nil {
		frames = append(frames, c.presence.frame())
	}
	c.mu.Unlock()

	for _, f := range frames {
		if cn.write(f) != nil {
			break
		}
	}
	deadline := time.NewTimer(c.opts.RequestTimeout)
	defer deadline.Stop()
wait:
	for _, ch := range waits {
		select {
		case err := <-ch:
			var be *Error
			if errors.As(err, &be) {
				c.report(fmt.Errorf("client: re-subscribe refused: %w", err))
			}
		case <-cn.done:
			return nil // lost again; the reconnect loop takes over
		case <-deadline.C:
			c.report(errors.New("client: the broker did not confirm every re-subscription in time"))
			break wait
		case <-c.closed:
			return ErrClosed
		}
	}
	c.emit(func() {
		if c.opts.OnConnect != nil {
			c.opts.OnConnect(info)
		}
	})
	return nil
}

// lost handles the end of connection cn: it fails the requests waiting on
// it and starts reconnecting.
func (c *Client) lost(cn *conn, cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cn != cn {
		return
	}
	c.cn = nil
	cn.closeWith(0, "") // the connection is already over
	if c.status == StatusClosed {
		return
	}
	lostErr := disconnected(cause)
	c.failPendingLocked(lostErr)
	if c.opts.DisableReconnect {
		c.status = StatusDisconnected
		c.failSubWaitersLocked(lostErr)
	} else {
		c.status = StatusReconnecting
		c.wg.Add(1)
		go c.reconnectLoop() // owned by wg, as the loops
	}
	c.emit(func() {
		if c.opts.OnDisconnect != nil {
			c.opts.OnDisconnect(cause)
		}
	})
}

// failPendingLocked fails every request tied to the current connection.
// Unsubscribes succeed: without a connection nothing is subscribed.
func (c *Client) failPendingLocked(err error) {
	for ref, ch := range c.pubW {
		ch <- err
		delete(c.pubW, ref)
	}
	for t, ws := range c.unsubW {
		for _, ch := range ws {
			ch <- nil
		}
		delete(c.unsubW, t)
	}
	for t, rs := range c.filtW {
		for _, r := range rs {
			r.ch <- err
		}
		delete(c.filtW, t)
	}
	for _, r := range c.presW {
		r.ch <- presenceResult{err: err}
	}
	c.presW = nil
	for id, rs := range c.lobbyW {
		for _, r := range rs {
			r.ch <- lobbyResult{err: err}
		}
		delete(c.lobbyW, id)
	}
}

// failSubWaitersLocked fails Subscribe calls still waiting for the broker
// and forgets their subscriptions.
func (c *Client) failSubWaitersLocked(err error) {
	for t, s := range c.subs {
		if s.active || len(s.waiters) == 0 {
			continue
		}
		for _, w := range s.waiters {
			w.ch <- err
		}
		s.waiters = nil
		delete(c.subs, t)
	}
}

// reconnectLoop retries with exponential back-off until a connection is
// installed, the client is closed, the token is refused or the attempts
// run out.
func (c *Client) reconnectLoop() {
	defer c.wg.Done()
	for attempt := 1; ; attempt++ {
		if m := c.opts.MaxReconnectAttempts; m > 0 && attempt > m {
			c.giveUp(ErrReconnectFailed)
			return
		}
		delay := c.opts.backoff(attempt, mrand.Float64())
		c.emit(func() {
			if c.opts.OnReconnecting != nil {
				c.opts.OnReconnecting(attempt, delay)
			}
		})
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-c.closed:
			t.Stop()
			return
		}
		cn, info, err := c.dial(c.closeCtx, true)
		if err != nil {
			if c.isClosed() {
				return
			}
			if permanentAuth(err) {
				c.giveUp(err)
				return
			}
			continue
		}
		_ = c.install(cn, info)
		return
	}
}

func (c *Client) giveUp(err error) {
	c.mu.Lock()
	if c.status != StatusReconnecting {
		c.mu.Unlock()
		return
	}
	c.status = StatusDisconnected
	c.failSubWaitersLocked(err)
	c.mu.Unlock()
	c.report(err)
}

func (c *Client) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// emit queues an event callback on the handler goroutine.
func (c *Client) emit(fn func()) {
	if c.disp != nil {
		c.disp.event(fn)
	}
}

// report sends err to OnError on the handler goroutine.
func (c *Client) report(err error) {
	if c.opts.OnError == nil {
		return
	}
	c.emit(func() { c.opts.OnError(err) })
}

// conn returns the live connection, or the error a request gets without
// one.
func (c *Client) liveConn() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveConnLocked()
}

func (c *Client) liveConnLocked() (*conn, error) {
	if c.status == StatusClosed {
		return nil, ErrClosed
	}
	if c.cn == nil {
		return nil, ErrNotConnected
	}
	return c.cn, nil
}

// requestCtx bounds ctx by RequestTimeout when it has no deadline.
func (c *Client) requestCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, c.opts.RequestTimeout)
}

// wait waits for a reply on ch, ctx or Close.
func (c *Client) wait(ctx context.Context, ch chan error) error {
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		select {
		case err := <-ch:
			return err
		default:
			return ErrClosed
		}
	}
}

func (c *Client) nextRef() string {
	return strconv.FormatUint(c.refSeq.Add(1), 10) + "-" + c.refPrefix
}

// handleFrame routes one decoded frame from the broker; it runs on the
// reader goroutine and never blocks on handlers.
func (c *Client) handleFrame(f *inFrame) {
	switch f.typ {
	case "message":
		c.onMessage(f)
	case "subscribed":
		c.onSubscribed(f)
	case "unsubscribed":
		c.mu.Lock()
		if ws := c.unsubW[f.topic]; len(ws) > 0 {
			ws[0] <- nil
			c.shift(c.unsubW, f.topic)
		}
		c.mu.Unlock()
	case "filtersUpdated":
		c.mu.Lock()
		if rs := c.filtW[f.topic]; len(rs) > 0 {
			r := rs[0]
			c.filtW[f.topic] = rs[1:]
			if len(rs) == 1 {
				delete(c.filtW, f.topic)
			}
			if s := c.subs[f.topic]; s != nil {
				s.opts.filters = r.filters
			}
			r.ch <- nil
		}
		c.mu.Unlock()
	case "published":
		c.mu.Lock()
		if ch := c.pubW[f.msgRef]; ch != nil {
			delete(c.pubW, f.msgRef)
			ch <- nil
		}
		c.mu.Unlock()
	case "error":
		c.onErrorFrame(f)
	case "hydration":
		if h := c.opts.OnHydration; h != nil {
			hy := Hydration{Pattern: f.pattern, Topic: f.topic, Data: Data(f.data)}
			if hy.Data == nil {
				hy.Data = nilData
			}
			c.emit(func() { h(hy) })
		}
	case "replayStart":
		c.onReplayStart(f)
	case "replayEnd":
		c.onReplayEnd(f)
	case "presence", "presenceList", "lobbySubscribed", "lobbyUnsubscribed", "lobbyPresenceList", "lobbyPresence":
		c.onPresenceFrame(f)
	}
}

func (c *Client) shift(m map[string][]chan error, k string) {
	if len(m[k]) <= 1 {
		delete(m, k)
		return
	}
	m[k] = m[k][1:]
}

func (c *Client) onMessage(f *inFrame) {
	// A replayed copy of a message handed to a handler already (its ack
	// was lost with the connection) is acked again, not handled again.
	key := handledKey{f.topic, f.msgID}
	track := f.requiresAck && f.msgID != ""
	c.mu.Lock()
	var h Handler
	if s := c.subs[f.topic]; s != nil {
		h = s.handler
	}
	dup := track && f.isReplay && c.handled.has(key)
	if dup {
		c.replay.dups++
		h = nil
	}
	c.mu.Unlock()
	meta := Meta{Topic: f.topic, SourceTopic: f.sourceTopic, MsgID: f.msgID, Filter: f.filter,
		Sender: f.from, FromType: f.fromType, IsReplay: f.isReplay}
	if f.hasTimestamp && f.timestamp > 0 {
		meta.Timestamp = time.UnixMilli(int64(f.timestamp))
	}
	data := Data(f.data)
	if data == nil {
		data = nilData
	}
	ack := f.requiresAck && f.msgID != "" && !c.opts.DisableAutoAck
	if h == nil {
		if ack {
			c.acks.add(meta.MsgID, c.opts.AckBatchSize)
		}
		return
	}
	queued := c.disp.deliver(func() {
		h(data, meta)
		if ack {
			c.acks.add(meta.MsgID, c.opts.AckBatchSize)
		}
	})
	if queued && track {
		c.mu.Lock()
		c.handled.add(key)
		c.mu.Unlock()
	}
}

func (c *Client) onSubscribed(f *inFrame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.subs[f.topic]
	if s == nil {
		return
	}
	s.active, s.lb = true, f.loadBalance
	for _, w := range s.waiters {
		w.ch <- nil
	}
	s.waiters = nil
}

// onErrorFrame routes an error frame to the request it answers: by msgRef
// for publishes, by lobbyId for lobby requests, by topic for a pending
// subscribe or setFilters. Anything else goes to OnError.
func (c *Client) onErrorFrame(f *inFrame) {
	e := &Error{Code: f.code, Err: f.errStr, Hint: f.hint, Detail: f.detail, Topic: f.topic,
		MsgRef: f.msgRef, LobbyID: f.lobbyID, MaxSizeBytes: f.maxSizeBytes,
		Limit: f.limit, RetryAfterMs: f.retryAfterMs}
	c.mu.Lock()
	if f.msgRef != "" {
		if ch := c.pubW[f.msgRef]; ch != nil {
			delete(c.pubW, f.msgRef)
			ch <- e
			c.mu.Unlock()
			return
		}
	} else if f.lobbyID != "" {
		if rs := c.lobbyW[f.lobbyID]; len(rs) > 0 {
			c.lobbyW[f.lobbyID] = rs[1:]
			rs[0].ch <- lobbyResult{err: e}
			c.mu.Unlock()
			return
		}
	} else if f.hasTopic {
		s := c.subs[f.topic]
		rs := c.filtW[f.topic]
		switch {
		case e.Err == "not_subscribed" && len(rs) > 0:
			c.popFilters(f.topic, e)
			c.mu.Unlock()
			return
		case s != nil && !s.active && len(s.waiters) > 0 && isSubscribeError(e.Err):
			// The Subscribe call gets the error; a re-subscribe refused
			// after a reconnect is reported by install.
			delete(c.subs, f.topic)
			for _, w := range s.waiters {
				w.ch <- e
			}
			s.waiters = nil
			c.mu.Unlock()
			return
		case len(rs) > 0 && isFilterError(e.Err):
			c.popFilters(f.topic, e)
			c.mu.Unlock()
			return
		}
	}
	c.mu.Unlock()
	c.report(e)
}

func (c *Client) popFilters(topic string, err error) {
	rs := c.filtW[topic]
	rs[0].ch <- err
	if len(rs) == 1 {
		delete(c.filtW, topic)
	} else {
		c.filtW[topic] = rs[1:]
	}
}

// ackQueue collects the msgIds to acknowledge (wire-reference.md §6.4).
type ackQueue struct {
	mu   sync.Mutex
	ids  []string
	kick chan struct{}
}

// maxPendingAcks bounds the ids kept while disconnected.
const maxPendingAcks = 10000

func (q *ackQueue) add(id string, batch int) {
	q.mu.Lock()
	if len(q.ids) >= maxPendingAcks {
		q.ids = q.ids[1:]
	}
	q.ids = append(q.ids, id)
	n := len(q.ids)
	q.mu.Unlock()
	if n == 1 || n >= batch {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
}

func (q *ackQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ids)
}

// take removes up to max ids.
func (q *ackQueue) take(max int) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(max, len(q.ids))
	if n == 0 {
		return nil
	}
	out := append([]string(nil), q.ids[:n]...)
	q.ids = append(q.ids[:0], q.ids[n:]...)
	return out
}

func batchAckFrame(ids []string) []byte {
	b := msgp.AppendMapHeader(nil, 2)
	b = msgp.AppendString(msgp.AppendString(b, "type"), "batchAck")
	b = msgp.AppendArrayHeader(msgp.AppendString(b, "msgIds"), uint32(len(ids)))
	for _, id := range ids {
		b = msgp.AppendString(b, id)
	}
	return b
}
