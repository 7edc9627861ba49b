package natsbroker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"github.com/NoLagApp/kraken/pkg/broker"
)

// The admin API's requests (broker.Operator) go to the subject
// <prefix>.admin, which every node subscribes to; each carries its
// deadline in the header adminDeadline (unix milliseconds) and a reply
// inbox, and each node answers on the inbox with its id in the header
// adminNode. A request that reaches a node after its deadline (the node
// was stopped, frozen or cut off meanwhile) is dropped unanswered and not
// run: the asker has told its operator that the node did not answer, so
// the node must not act on it later. The nodes' clocks are assumed to
// agree within a fraction of the wait (NTP). The publishing connection is
// NoEcho: a node never receives its own request.
const (
	adminDeadline = "Kraken-Deadline-Ms"
	adminNode     = "Kraken-Node"
)

// adminDefaultWait bounds an answer when the asker's context has no
// deadline; adminMargin is the most an answering node keeps, before the
// deadline, for its answer to travel back.
const (
	adminDefaultWait = 5 * time.Second
	adminMargin      = 500 * time.Millisecond
)

var _ broker.Operator = (*Broker)(nil)

// adminSubject is the subject of the admin requests.
func (b *Broker) adminSubject() string { return b.cfg.Prefix + ".admin" }

// Peers returns the other live nodes, as the shared state's watcher knows
// them (nil without JetStream, where nodes do not see each other).
func (b *Broker) Peers() []string {
	if p := b.state.peerIDs.Load(); p != nil {
		return *p
	}
	return nil
}

// downWindow is how long a node judged down stays named by Down.
const downWindow = 10 * time.Minute

// Down returns the nodes judged down (stopped, or silent past
// LivenessTimeout) in the last downWindow and not seen again since, with
// when each was.
func (b *Broker) Down() map[string]time.Time {
	b.downMu.Lock()
	defer b.downMu.Unlock()
	out := make(map[string]time.Time, len(b.down))
	for n, at := range b.down {
		if time.Since(at) < downWindow {
			out[n] = at
		}
	}
	return out
}

// noteDown records that node was judged down; noteUp that it is seen
// again. Both run on the watcher.
func (b *Broker) noteDown(node string) {
	b.downMu.Lock()
	defer b.downMu.Unlock()
	if b.down == nil {
		b.down = map[string]time.Time{}
	}
	for n, at := range b.down {
		if time.Since(at) >= downWindow {
			delete(b.down, n)
		}
	}
	b.down[node] = time.Now()
}

func (b *Broker) noteUp(node string) {
	b.downMu.Lock()
	_, was := b.down[node]
	delete(b.down, node)
	b.downMu.Unlock()
	if was {
		b.log.Info("node back", zap.String("peer", node))
	}
}

// publishPeers stores the ids of peers for Peers; it runs on the watcher.
func (s *shared) publishPeers() {
	ids := make([]string, 0, len(s.peers))
	for id := range s.peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s.peerIDs.Store(&ids)
}

// Ask implements broker.Operator.
func (b *Broker) Ask(ctx context.Context, req []byte) ([]broker.Answer, error) {
	peers := b.Peers()
	if len(peers) == 0 {
		return nil, nil
	}
	wait := adminDefaultWait
	if dl, ok := ctx.Deadline(); ok {
		wait = time.Until(dl)
	}
	if wait <= 0 {
		return nil, ctx.Err()
	}
	inbox := b.nc.NewRespInbox()
	answers := make(chan *nats.Msg, len(peers)+8)
	sub, err := b.nc.ChanSubscribe(inbox, answers)
	if err != nil {
		return nil, fmt.Errorf("natsbroker: admin request: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	msg := &nats.Msg{Subject: b.adminSubject(), Reply: inbox, Data: req, Header: nats.Header{}}
	msg.Header.Set(adminDeadline, strconv.FormatInt(time.Now().Add(wait).UnixMilli(), 10))
	if err := b.nc.PublishMsg(msg); err != nil {
		return nil, fmt.Errorf("natsbroker: admin request: %w", err)
	}
	want := map[string]bool{}
	for _, p := range peers {
		want[p] = true
	}
	var out []broker.Answer
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for len(want) > 0 {
		select {
		case m := <-answers:
			node := m.Header.Get(adminNode)
			if node == "" {
				continue
			}
			delete(want, node)
			out = append(out, broker.Answer{Node: node, Data: m.Data})
		case <-timer.C:
			return out, nil
		case <-ctx.Done():
			return out, nil
		}
	}
	return out, nil
}

// Answer implements broker.Operator: it subscribes this node to the admin
// subject (once). Each request is answered on its own goroutine, bounded
// by the deadline its asker gave; one that arrives past it is dropped.
func (b *Broker) Answer(h func(ctx context.Context, req []byte) []byte) {
	if h == nil || b.nc == nil {
		return
	}
	_, err := b.nc.Subscribe(b.adminSubject(), func(m *nats.Msg) {
		if m.Reply == "" {
			return
		}
		ms, err := strconv.ParseInt(m.Header.Get(adminDeadline), 10, 64)
		if err != nil {
			return // not a request of this version's
		}
		deadline := time.UnixMilli(ms)
		// The answer must be back before the asker stops waiting: the
		// work ends a margin before the deadline (a fifth of what is
		// left, at most adminMargin), and a request with no time left
		// for it is dropped unrun.
		left := time.Until(deadline)
		margin := min(left/5, adminMargin)
		if left-margin <= 0 {
			b.adminLate.Add(1)
			b.log.Warn("admin request from another node dropped: it arrived after its asker stopped waiting",
				zap.Time("deadline", deadline))
			return
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return
		}
		b.answering.Add(1) // owned by the Broker: stop waits for it
		b.mu.Unlock()
		go func() { // one per request, ended before its deadline through h's context
			defer b.answering.Done()
			ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(-margin))
			defer cancel()
			data := h(ctx, m.Data)
			reply := &nats.Msg{Subject: m.Reply, Data: data, Header: nats.Header{}}
			reply.Header.Set(adminNode, b.cfg.Node)
			if err := b.nc.PublishMsg(reply); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
				b.log.Warn("admin answer not sent", zap.Error(err))
			}
		}()
	})
	if err != nil {
		b.log.Warn("admin requests from other nodes will go unanswered", zap.Error(err))
		return
	}
	// Subscribed at the server when Answer returns: a request sent by
	// another node right after is not lost to a SUB still in flight.
	if err := b.nc.FlushTimeout(adminDefaultWait); err != nil && b.nc.IsConnected() {
		b.log.Warn("admin subscription not confirmed by the server yet", zap.Error(err))
	}
}
