// Package durable feeds durable load-balanced groups from the message
// history (STORE_BACKEND=jetstream): a group whose messages are kept while
// none of its members is connected, anywhere, and handed out once across
// the nodes when members come back, with what a member took and did not
// acknowledge handed out again (decisions.md OQ-74; the original's
// durable delivery, wire-reference.md §6.6).
//
// Each durable group (a group name on an exact routing key) is a durable
// JetStream consumer of the history stream (history.GroupConsumer). A node
// with members of the group runs one feed for it: a goroutine that fetches
// the consumer's next entries and hands each to the group's next member
// here (hub.Hub.DeliverDurable). An entry is acknowledged to JetStream when
// the member acks its msgId (`ack`, `batchAck`). A member's connection that
// has acked a durable entry before holds what it was handed for as long
// as it stays open, up to Config.MaxHold (the feed tells JetStream it is
// in progress every third of AckWait); one that never acked (the official Go and Python SDKs never
// do) has an entry once its connection stayed open Config.Grace after it.
// An entry is refused (Nak), and so handed out again at once to any node's
// member, when the member's connection closed first, or when this node
// had no member left for it. A node that dies with entries handed out
// leaves them to JetStream's AckWait: they go to another node's members
// then.
package durable

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/history"
	"github.com/NoLagApp/kraken/pkg/hub"
	"github.com/NoLagApp/kraken/pkg/wire"
)

// Defaults of Config.
const (
	DefaultAckWait = 30 * time.Second
	DefaultGrace   = 10 * time.Second
	// DefaultInactive is the least Config.Inactive is: a week.
	DefaultInactive   = 7 * 24 * time.Hour
	DefaultMaxPending = 256
	// DefaultMaxHold is Config.MaxHold's default.
	DefaultMaxHold = 5 * time.Minute
	// fetchBatch is the entries one fetch asks for; fetchWait how long a
	// fetch waits for the first (and bounds how long Close waits for a
	// feed).
	fetchBatch = 64
	fetchWait  = 500 * time.Millisecond
	// retryEvery is the wait before asking JetStream again for a group's
	// consumer it did not give.
	retryEvery = time.Second
	// sweepEvery is how often the entries handed out are checked against
	// Grace and their connections.
	sweepEvery = 250 * time.Millisecond
)

// Config configures Groups.
type Config struct {
	// History is the message history the groups' consumers read
	// (required).
	History *history.History
	// AckWait is how long JetStream waits for an entry handed to this
	// node before it hands it out again (default 30 s): what a node that
	// died had handed out reaches other nodes' members after it.
	AckWait time.Duration
	// Grace is how long the connection of a member that never acked a
	// durable entry must stay open after a delivery for the entry to count
	// as taken (default 10 s, as the resumable sessions' test for a client
	// that never acks, hub.Config.TapAckWait). A member that has acked
	// one holds its entries until it acks them or its connection closes,
	// at most MaxHold.
	Grace time.Duration
	// MaxHold bounds how long an acking member holds an entry it has not
	// acked (default 5 min): past it the entry is given back (a client
	// that dropped it, say its handler queue full, would otherwise keep it
	// from the group while its connection lives), and goes to a member
	// again, maybe the same one.
	MaxHold time.Duration
	// MaxPending bounds the entries of one group handed out and not
	// acknowledged (default 256): a group whose members are slow gets no
	// more until they ack or Grace passes.
	MaxPending int
	// Inactive is how long a group's consumer is kept with no member
	// anywhere, its place with it (default, and at least, DefaultInactive
	// or the history's age bound if longer): past it the group is
	// forgotten, and what is published before a member joins again is not
	// the group's.
	Inactive time.Duration
	// Logger receives the warnings (default: none).
	Logger *zap.Logger
}

// Stats are the counters of Groups (each since New).
type Stats struct {
	Feeds     int    // groups with members on this node now
	Delivered uint64 // entries handed to a member
	Acked     uint64 // entries acknowledged by their member
	Taken     uint64 // entries acknowledged after Grace without the member's ack
	Returned  uint64 // entries given back: member gone, or no member here
	Filtered  uint64 // entries no member here takes (their filter): acknowledged undelivered
	Pending   int    // entries handed out and not settled yet
}

// Groups is the durable groups of one node. Build it with New, give it
// the hub with Attach before the first member joins, and Close it after
// the hub's shutdown. Its methods are safe for concurrent use.
type Groups struct {
	cfg    Config
	hub    atomic.Pointer[hub.Hub]
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	feeds   map[string]*feed    // group "\x00" key → its running feed
	pending map[string]*pending // msgId (or "#stream sequence") → entry handed out
	npend   atomic.Int64        // len(pending), read without mu by Acked
	// ackers are the open connections that acked a durable entry: they
	// hold what they were handed until they ack it or close (settle
	// forgets the closed ones).
	ackers map[*hub.Conn]struct{}

	delivered, acked, taken, returned, filtered atomic.Uint64
}

// feed is the fetch loop of one group on this node.
type feed struct {
	name, key string
	stop      context.CancelFunc
}

// pending is an entry handed to a member and not settled yet.
type pending struct {
	msg jetstream.Msg
	c   *hub.Conn
	at  time.Time // handed out
	// touched is when JetStream was last told the entry is in progress
	// (or at, before that).
	touched time.Time
}

// New returns the Groups of cfg; nothing runs until a group gains a
// member (Interest). Call Attach before that.
func New(cfg Config) *Groups {
	if cfg.AckWait <= 0 {
		cfg.AckWait = DefaultAckWait
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.MaxHold <= 0 {
		cfg.MaxHold = DefaultMaxHold
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.Inactive <= 0 {
		cfg.Inactive = DefaultInactive
		if cfg.History != nil {
			cfg.Inactive = max(cfg.Inactive, cfg.History.MaxAge())
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	g := &Groups{cfg: cfg, feeds: map[string]*feed{}, pending: map[string]*pending{}, ackers: map[*hub.Conn]struct{}{}}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	g.wg.Add(1)
	go g.sweep()
	return g
}

// Attach gives Groups the hub whose durable groups it feeds.
func (g *Groups) Attach(h *hub.Hub) { g.hub.Store(h) }

// Interest implements session.DurableGroups (hub.Config.OnDurableInterest):
// it starts the feed of the group name on key when it gains its first
// member here (delta +1; ready is called once the group's consumer is
// there, or once asking for it failed: the feed keeps asking) and stops
// it when the last one leaves (-1). It never blocks.
func (g *Groups) Interest(name, key string, delta int, ready func()) {
	id := name + "\x00" + key
	g.mu.Lock()
	defer g.mu.Unlock()
	if delta < 0 {
		if f := g.feeds[id]; f != nil {
			f.stop()
			delete(g.feeds, id)
		}
		return
	}
	if g.ctx.Err() != nil || g.feeds[id] != nil {
		if ready != nil {
			ready()
		}
		return
	}
	ctx, stop := context.WithCancel(g.ctx)
	f := &feed{name: name, key: key, stop: stop}
	g.feeds[id] = f
	g.wg.Add(1)
	go g.run(ctx, f, ready)
}

// run is the feed f until ctx ends: it gets the group's consumer, calls
// ready, and hands out what the consumer gives; after a failed fetch it
// gets the consumer again (one removed meanwhile is made anew).
func (g *Groups) run(ctx context.Context, f *feed, ready func()) {
	defer g.wg.Done()
	since := time.Now()
	for ctx.Err() == nil {
		cons := g.consumer(ctx, f, &ready)
		if cons == nil {
			return
		}
		g.fetch(ctx, f, cons, since)
	}
}

// consumer gets the group's consumer, asking again every retryEvery until
// ctx ends (nil then); *ready, when not nil, is called after the first
// answer, a failure included (a store that is down must not hold the
// members' subscribe), and cleared.
func (g *Groups) consumer(ctx context.Context, f *feed, ready *func()) jetstream.Consumer {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := g.cfg.History.GroupConsumer(cctx, f.name, f.key, history.GroupOptions{
			AckWait: g.cfg.AckWait, MaxAckPending: g.cfg.MaxPending, Inactive: g.cfg.Inactive})
		cancel()
		if err != nil && ctx.Err() == nil {
			g.cfg.Logger.Warn("durable group: no consumer in the history; asking again",
				zap.String("group", f.name), zap.String("topic", f.key), zap.Error(err))
		}
		if *ready != nil {
			(*ready)()
			*ready = nil
		}
		if err == nil {
			return c
		}
		if !wait(ctx, retryEvery) {
			return nil
		}
	}
}

// fetch hands out what cons gives until ctx ends or a fetch fails.
func (g *Groups) fetch(ctx context.Context, f *feed, cons jetstream.Consumer, since time.Time) {
	for ctx.Err() == nil {
		batch, err := cons.Fetch(fetchBatch, jetstream.FetchMaxWait(fetchWait))
		if err != nil {
			if ctx.Err() == nil {
				g.cfg.Logger.Warn("durable group: fetch failed", zap.String("group", f.name), zap.Error(err))
				wait(ctx, retryEvery)
			}
			return
		}
		for msg := range batch.Messages() {
			if ctx.Err() != nil {
				// Stopped while the fetch waited: the group may have no
				// member here now; any node's feed takes it again.
				_ = msg.Nak()
				continue
			}
			g.handOut(f, msg, since)
		}
	}
}

// handOut gives msg to the group's next member here.
func (g *Groups) handOut(f *feed, msg jetstream.Msg, since time.Time) {
	m, err := wire.ParseMessage(msg.Data())
	h := g.hub.Load()
	if err != nil || h == nil {
		_ = msg.Term() // not an entry of this broker's: never again
		return
	}
	md, _ := msg.Metadata()
	if md != nil && md.NumDelivered > 1 || m.Timestamp < since.UnixMilli() {
		// Handed out before, or accepted before this feed began: kept
		// while the group had no member here.
		m.IsReplay = true
	}
	id := m.MsgID
	if id == "" && md != nil {
		id = "#" + strconv.FormatUint(md.Sequence.Stream, 10)
	}
	p := &hub.Publication{Key: f.key, Topic: m.Topic, Filter: m.Filter, Msg: m, Echo: true}
	h.DeliverDurable(p, f.name, f.key, func(c *hub.Conn, members bool) {
		switch {
		case c != nil:
		case members:
			// The group has members here and none takes the message's
			// filter: nobody of the group wants it, as in a plain group.
			g.filtered.Add(1)
			_ = msg.Ack()
			return
		default:
			g.returned.Add(1)
			_ = msg.NakWithDelay(time.Second) // no member here now: another node's, or later
			return
		}
		g.delivered.Add(1)
		g.mu.Lock()
		if g.pending[id] == nil {
			g.npend.Add(1)
		}
		// A hand-out of the same entry still pending (JetStream gave it
		// again after AckWait) is superseded: the new one settles it.
		now := time.Now()
		g.pending[id] = &pending{msg: msg, c: c, at: now, touched: now}
		g.mu.Unlock()
	})
}

// Acked implements session.DurableGroups: the entries of msgIDs that were
// handed to c are acknowledged to JetStream. It never blocks (an ack is a
// buffered publish); with nothing handed out it costs one atomic load.
func (g *Groups) Acked(c *hub.Conn, msgIDs []string) {
	if g.npend.Load() == 0 {
		return
	}
	var acks []jetstream.Msg
	g.mu.Lock()
	for _, id := range msgIDs {
		if p := g.pending[id]; p != nil && p.c == c {
			acks = append(acks, p.msg)
			delete(g.pending, id)
			g.npend.Add(-1)
			g.acked.Add(1)
			g.ackers[c] = struct{}{}
		}
	}
	g.mu.Unlock()
	for _, m := range acks {
		_ = m.Ack()
	}
}

// sweep settles, every sweepEvery, the entries handed out whose member's
// connection closed (given back) or, for a member that never acked,
// stayed open Grace (taken), and keeps those of acking members in
// progress.
func (g *Groups) sweep() {
	defer g.wg.Done()
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-g.ctx.Done():
			return
		case now := <-t.C:
			g.settle(now, false)
		}
	}
}

// settle gives back the entries whose connection closed (all of them when
// all is set) and those an acking member held MaxHold, takes those of
// members that never acked past Grace, and
// tells JetStream that those of acking members are in progress every
// third of AckWait. The requests are sent after the lock is let go: a hub
// worker's hand-out never waits on them.
func (g *Groups) settle(now time.Time, all bool) {
	var back, taken, working []jetstream.Msg
	g.mu.Lock()
	for c := range g.ackers {
		if c.Closed() {
			delete(g.ackers, c)
		}
	}
	for id, p := range g.pending {
		_, acker := g.ackers[p.c]
		switch {
		case all || p.c.Closed() || acker && now.Sub(p.at) >= g.cfg.MaxHold:
			back = append(back, p.msg)
		case acker:
			if now.Sub(p.touched) >= g.cfg.AckWait/3 {
				p.touched = now
				working = append(working, p.msg)
			}
			continue
		case now.Sub(p.at) >= g.cfg.Grace:
			taken = append(taken, p.msg)
		default:
			continue
		}
		delete(g.pending, id)
		g.npend.Add(-1)
	}
	g.mu.Unlock()
	g.returned.Add(uint64(len(back)))
	g.taken.Add(uint64(len(taken)))
	for _, m := range back {
		_ = m.Nak()
	}
	for _, m := range taken {
		_ = m.Ack()
	}
	for _, m := range working {
		_ = m.InProgress()
	}
}

// Stats returns the counters.
func (g *Groups) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return Stats{Feeds: len(g.feeds), Delivered: g.delivered.Load(), Acked: g.acked.Load(),
		Taken: g.taken.Load(), Returned: g.returned.Load(), Filtered: g.filtered.Load(), Pending: len(g.pending)}
}

// Close stops every feed, waits for them, and gives back what members had
// not acknowledged (call it after the hub's shutdown closed them): the
// other nodes' members get it at once instead of after AckWait.
func (g *Groups) Close() {
	g.cancel()
	g.wg.Wait()
	g.settle(time.Now(), true)
}

// wait waits d or until ctx ends, and reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
