package client

import (
	"context"
)

// Publish publishes data to topic and returns once the broker has
// acknowledged it (`published`, correlated by msgRef), or with the broker's
// refusal as a *Error (e.g. ErrUnknownTopic, ErrRateLimited).
//
// data is encoded with Marshal: nil is sent as the MessagePack nil, a Data
// is sent as it is. The acknowledgement means the broker accepted the
// message, not that a subscriber received it. Publish needs a live
// connection (ErrNotConnected otherwise); when the connection is lost
// before the answer it returns ErrDisconnected. Without a deadline on ctx
// it waits at most Options.RequestTimeout.
func (c *Client) Publish(ctx context.Context, topic string, data any, opts ...PublishOption) error {
	o := pubOptions{qos: 1}
	for _, opt := range opts {
		opt.applyPublish(&o)
	}
	raw, err := Marshal(data)
	if err != nil {
		return err
	}
	if o.msgRef == "" {
		o.msgRef = c.nextRef()
	}
	ch := make(chan error, 1)
	c.mu.Lock()
	cn, err := c.liveConnLocked()
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.pubW[o.msgRef] = ch
	c.mu.Unlock()
	if err := cn.write(publishFrame(topic, raw, &o)); err != nil {
		c.forgetPub(o.msgRef)
		return cn.lostError()
	}
	ctx, cancel := c.requestCtx(ctx)
	defer cancel()
	err = c.wait(ctx, ch)
	if ctx.Err() != nil && err == ctx.Err() {
		c.forgetPub(o.msgRef)
	}
	return err
}

func (c *Client) forgetPub(ref string) {
	c.mu.Lock()
	delete(c.pubW, ref)
	c.mu.Unlock()
}

// Emit publishes data to topic without waiting for the broker: it returns
// once the frame is written. A refusal from the broker goes to
// Options.OnError as a *Error carrying Topic. Emit sends no msgRef unless
// WithMsgRef is given.
func (c *Client) Emit(topic string, data any, opts ...PublishOption) error {
	o := pubOptions{qos: 1}
	for _, opt := range opts {
		opt.applyPublish(&o)
	}
	raw, err := Marshal(data)
	if err != nil {
		return err
	}
	cn, err := c.liveConn()
	if err != nil {
		return err
	}
	if err := cn.write(publishFrame(topic, raw, &o)); err != nil {
		return cn.lostError()
	}
	return nil
}
