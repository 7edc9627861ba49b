package client

import (
	"context"
	"errors"
	"slices"
)

// Subscribe subscribes to topic and returns once the broker has answered
// `subscribed`, or with the broker's refusal as a *Error (e.g.
// ErrUnknownTopic with its Hint). Messages on topic go to handler (one
// handler per topic: subscribing again replaces the handler and the
// options).
//
// The subscription is kept with its options (QoS, load-balance group,
// filters) and made again after every reconnect. While the client is
// reconnecting, Subscribe waits for the new connection. Without a deadline
// on ctx it waits at most Options.RequestTimeout.
func (c *Client) Subscribe(ctx context.Context, topic string, handler Handler, opts ...SubscribeOption) error {
	if handler == nil {
		return errors.New("client: Subscribe needs a handler")
	}
	o := subOptions{qos: 1}
	for _, opt := range opts {
		opt.applySubscribe(&o)
	}
	o.filters = o.filters.clone()
	c.mu.Lock()
	switch {
	case c.status == StatusClosed:
		c.mu.Unlock()
		return ErrClosed
	case c.status == StatusDisconnected || c.status == StatusConnecting:
		c.mu.Unlock()
		return ErrNotConnected
	}
	s := c.subs[topic]
	if s == nil {
		c.subSeq++
		s = &subscription{topic: topic, seq: c.subSeq}
		c.subs[topic] = s
	}
	s.handler, s.opts, s.active = handler, o, false
	ch := make(chan error, 1)
	s.waiters = append(s.waiters, subWaiter{ch: ch})
	cn := c.cn
	c.mu.Unlock()
	if cn != nil {
		// A failed write means the connection is lost: the subscription is
		// sent again on the next one.
		_ = cn.write(subscribeFrame(topic, &o))
	}
	ctx, cancel := c.requestCtx(ctx)
	defer cancel()
	err := c.wait(ctx, ch)
	if err != nil && ctx.Err() != nil && !errors.Is(err, ErrClosed) {
		c.abandon(s, ch)
	}
	return err
}

// abandon forgets a subscription whose Subscribe gave up waiting, and asks
// the broker to drop it in case it was made after all.
func (c *Client) abandon(s *subscription, ch chan error) {
	c.mu.Lock()
	s.waiters = slices.DeleteFunc(s.waiters, func(w subWaiter) bool { return w.ch == ch })
	if c.subs[s.topic] != s || s.active {
		c.mu.Unlock()
		return
	}
	delete(c.subs, s.topic)
	cn := c.cn
	c.mu.Unlock()
	if cn != nil {
		_ = cn.write(newFrame("unsubscribe").str("topic", s.topic).bytes())
	}
}

// Unsubscribe drops the subscription to topic: its handler is not called
// again. With a live connection it waits for the broker's `unsubscribed`;
// otherwise it returns at once.
func (c *Client) Unsubscribe(ctx context.Context, topic string) error {
	c.mu.Lock()
	if c.status == StatusClosed {
		c.mu.Unlock()
		return ErrClosed
	}
	if s := c.subs[topic]; s != nil {
		for _, w := range s.waiters {
			w.ch <- ErrUnsubscribed
		}
		delete(c.subs, topic)
	}
	cn := c.cn
	if cn == nil {
		c.mu.Unlock()
		return nil
	}
	ch := make(chan error, 1)
	c.unsubW[topic] = append(c.unsubW[topic], ch)
	c.mu.Unlock()
	if err := cn.write(newFrame("unsubscribe").str("topic", topic).bytes()); err != nil {
		return nil // the connection is gone, and the subscription with it
	}
	ctx, cancel := c.requestCtx(ctx)
	defer cancel()
	return c.wait(ctx, ch)
}

// ErrUnsubscribed is returned by a Subscribe that was still waiting when
// Unsubscribe was called for the same topic.
var ErrUnsubscribed = errors.New("client: unsubscribed while subscribing")

// SetFilters replaces the filters of the subscription to topic with simple
// filter values (none: receive everything on the topic). It returns once
// the broker has answered `filtersUpdated`, or its refusal as a *Error.
// The new filters are kept for re-subscribing after a reconnect.
func (c *Client) SetFilters(ctx context.Context, topic string, values ...string) error {
	return c.SetFilterSet(ctx, topic, FilterSet{Values: values})
}

// SetFilterSet is SetFilters with AND groups.
func (c *Client) SetFilterSet(ctx context.Context, topic string, fs FilterSet) error {
	fs = fs.clone()
	c.mu.Lock()
	if c.status == StatusClosed {
		c.mu.Unlock()
		return ErrClosed
	}
	s := c.subs[topic]
	if s == nil {
		c.mu.Unlock()
		return &Error{Err: "not_subscribed", Topic: topic, Detail: "this client holds no subscription to the topic"}
	}
	cn := c.cn
	if cn == nil {
		// Not connected: the filters take effect with the re-subscribe.
		s.opts.filters = fs
		c.mu.Unlock()
		return nil
	}
	r := &filtersReq{filters: fs, ch: make(chan error, 1)}
	c.filtW[topic] = append(c.filtW[topic], r)
	c.mu.Unlock()
	frame := newFrame("setFilters").str("topic", topic).raw("filters", appendFilterSet(nil, fs)).bytes()
	if err := cn.write(frame); err != nil {
		return cn.lostError()
	}
	ctx, cancel := c.requestCtx(ctx)
	defer cancel()
	return c.wait(ctx, r.ch)
}
