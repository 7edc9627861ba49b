package broker

import (
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// client is one connection: readLoop owns token, authed and subs;
// writeLoop owns the socket's write side.
type client struct {
	b    *Broker
	conn *websocket.Conn
	send chan []byte
	done chan struct{}
	once sync.Once

	token  string
	authed bool
	subs   map[string]struct{}
}

// enqueue queues a frame without blocking; false means the queue is full.
func (c *client) enqueue(frame []byte) bool {
	select {
	case <-c.done:
		return true
	default:
	}
	select {
	case c.send <- frame:
		return true
	default:
		return false
	}
}

func (c *client) close() {
	c.once.Do(func() {
		close(c.done)
		_ = c.conn.Close()
	})
}

func (c *client) writeLoop() {
	defer c.b.wg.Done()
	for {
		select {
		case <-c.done:
			return
		case frame := <-c.send:
			_ = c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
			if err := c.conn.WriteMessage(websocket.BinaryMessage, frame); err != nil {
				c.close()
				return
			}
		}
	}
}

func (c *client) readLoop() {
	defer c.b.wg.Done()
	defer c.b.remove(c)
	defer c.close()
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(c.b.IdleTimeout))
		kind, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		if kind != websocket.BinaryMessage {
			continue
		}
		if len(data) == 0 {
			if c.authed && !c.enqueue([]byte{}) {
				return
			}
			continue
		}
		req, err := decodeRequest(data)
		if err != nil {
			continue
		}
		if !c.handle(req) {
			return
		}
	}
}

// handle runs one request; false closes the connection.
func (c *client) handle(req request) bool {
	if !c.authed {
		if req.typ != "auth" || !req.hasToken {
			return c.enqueue(encodeError("not_authenticated"))
		}
		c.token = req.token
		c.authed = true
		return c.enqueue(encodeAuthOK(c.token))
	}
	switch req.typ {
	case "auth":
		if req.hasToken {
			c.token = req.token
			return c.enqueue(encodeAuthOK(c.token))
		}
	case "subscribe":
		if !req.hasTopic {
			return true
		}
		c.subs[req.topic] = struct{}{}
		c.b.subscribe(c, req.topic)
		return c.enqueue(encodeSubscribed(req.topic))
	case "unsubscribe":
		if !req.hasTopic {
			return true
		}
		delete(c.subs, req.topic)
		c.b.unsubscribe(c, req.topic)
		return c.enqueue(encodeTopicReply("unsubscribed", req.topic))
	case "publish":
		if !req.hasTopic || req.data == nil {
			return true
		}
		if req.msgRef != "" && !c.enqueue(encodePublished(req.topic, req.msgRef)) {
			return false
		}
		frame := encodeMessage(req.topic, req.data, c.b.nextMsgID(), c.token, time.Now().UnixMilli())
		c.b.publish(c, req.topic, frame, req.echo)
	}
	return true
}
