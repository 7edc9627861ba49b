package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// writeTimeout bounds one frame write.
const writeTimeout = 10 * time.Second

// maxInbound bounds one inbound message.
const maxInbound = 16 << 20

// lostWait bounds how long a request whose write failed waits for the
// reader to learn why the connection ended (a close frame already on its
// way, read after the write failed).
const lostWait = time.Second

// conn is one WebSocket connection.
type conn struct {
	nc   net.Conn
	br   *bufio.Reader
	wmu  sync.Mutex
	done chan struct{}
	once sync.Once

	causeMu sync.Mutex
	cause   error // why the connection ended, as its reader saw it
}

// setCause records why the connection ended; the first cause stays.
func (cn *conn) setCause(err error) {
	cn.causeMu.Lock()
	defer cn.causeMu.Unlock()
	if cn.cause == nil {
		cn.cause = err
	}
}

// lostError is the error of a request whose write on cn failed: it waits
// up to lostWait for the reader to see the end of the connection, so a
// close frame the broker sent before it hung up is reported, not lost.
func (cn *conn) lostError() error {
	t := time.NewTimer(lostWait)
	defer t.Stop()
	select {
	case <-cn.done:
	case <-t.C:
	}
	cn.causeMu.Lock()
	defer cn.causeMu.Unlock()
	return disconnected(cn.cause)
}

// write sends one binary message (masked, as a client must).
func (cn *conn) write(p []byte) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	_ = cn.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return wsutil.WriteClientMessage(cn.nc, ws.OpBinary, p)
}

func (cn *conn) writeControl(op ws.OpCode, p []byte) error {
	cn.wmu.Lock()
	defer cn.wmu.Unlock()
	_ = cn.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	return ws.WriteFrame(cn.nc, ws.MaskFrame(ws.NewFrame(op, true, p)))
}

// tryWriteControl writes a control frame, bounded by a short deadline,
// unless another write is in progress: a frame cannot go in the middle of
// another, and the connection is ending anyway.
func (cn *conn) tryWriteControl(op ws.OpCode, p []byte) {
	if !cn.wmu.TryLock() {
		return
	}
	defer cn.wmu.Unlock()
	_ = cn.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_ = ws.WriteFrame(cn.nc, ws.MaskFrame(ws.NewFrame(op, true, p)))
}

// closeWith sends a close frame with code (unless code is 0, or a write is
// in progress) and closes the socket, once.
func (cn *conn) closeWith(code ws.StatusCode, reason string) {
	cn.once.Do(func() {
		if code != 0 {
			cn.tryWriteControl(ws.OpClose, ws.NewCloseFrameBody(code, reason))
		}
		_ = cn.nc.Close()
		close(cn.done)
	})
}

// dial opens a connection and runs the auth exchange (wire-reference.md §2).
func (c *Client) dial(ctx context.Context, reconnect bool) (*conn, Info, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
	defer cancel()
	stop := context.AfterFunc(c.closeCtx, cancel)
	defer stop()
	diag := &dialDiag{}
	d := ws.Dialer{Timeout: c.opts.DialTimeout, NetDial: diag.netDial, OnStatusError: diag.onStatusError, TLSConfig: c.opts.TLSConfig}
	nc, br, _, err := d.Dial(ctx, c.opts.URL)
	if err != nil {
		if c.isClosed() {
			return nil, Info{}, ErrClosed
		}
		return nil, Info{}, fmt.Errorf("client: dial %s: %w", c.opts.URL, diag.explain(c.opts.URL, err))
	}
	if diag.raw != nil {
		diag.raw.stopped = true
	}
	if br == nil {
		br = bufio.NewReader(nc)
	}
	cn := &conn{nc: nc, br: br, done: make(chan struct{})}
	// Abort the exchange when ctx ends.
	unblock := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	info, err := c.authenticate(cn, reconnect)
	if !unblock() || err != nil {
		cn.closeWith(0, "")
		switch {
		case c.isClosed():
			return nil, Info{}, ErrClosed
		case err == nil || ctx.Err() != nil:
			return nil, Info{}, fmt.Errorf("client: auth: %w", ctx.Err())
		}
		return nil, Info{}, err
	}
	_ = nc.SetDeadline(time.Time{})
	return cn, info, nil
}

// authenticate sends the auth frame and reads frames until the auth reply.
func (c *Client) authenticate(cn *conn, reconnect bool) (Info, error) {
	if err := cn.write(authFrame(c.token, c.opts.ProjectID, c.opts.ClientID, c.opts.ProtocolVersion, reconnect)); err != nil {
		return Info{}, fmt.Errorf("client: send auth: %w", err)
	}
	rd := &wsutil.Reader{Source: cn.br, State: ws.StateClientSide, MaxFrameSize: maxInbound}
	for {
		payload, op, err := c.nextMessage(cn, rd)
		if err != nil {
			return Info{}, fmt.Errorf("client: waiting for the auth reply: %w", err)
		}
		if op != ws.OpBinary || len(payload) == 0 {
			continue
		}
		f, err := parseFrame(payload)
		if err != nil || f.typ != "auth" {
			continue
		}
		if !f.success {
			if f.errStr == "" {
				f.errStr = "auth_failed"
			}
			return Info{}, &Error{Err: f.errStr, Code: f.code, Hint: f.hint, Detail: f.detail}
		}
		v := f.protocolVersion
		if v < 1 {
			v = 1
		}
		return Info{ActorTokenID: f.actorTokenID, ProjectID: f.projectID, ActorType: f.actorType,
			ProtocolVersion: v, RestoredSubscriptions: append(Data(nil), f.restored...)}, nil
	}
}

// nextMessage reads one data message, answering pings and close frames.
func (c *Client) nextMessage(cn *conn, rd *wsutil.Reader) ([]byte, ws.OpCode, error) {
	rd.OnIntermediate = func(h ws.Header, r io.Reader) error { return control(cn, h, r) }
	for {
		hdr, err := rd.NextFrame()
		if err != nil {
			return nil, 0, err
		}
		if hdr.OpCode.IsControl() {
			if err := control(cn, hdr, rd); err != nil {
				return nil, 0, err
			}
			continue
		}
		if hdr.OpCode&(ws.OpText|ws.OpBinary) == 0 {
			if err := rd.Discard(); err != nil {
				return nil, 0, err
			}
			continue
		}
		payload, err := io.ReadAll(io.LimitReader(rd, maxInbound+1))
		if err != nil {
			return nil, 0, err
		}
		if len(payload) > maxInbound {
			return nil, 0, errors.New("inbound message too large")
		}
		return payload, hdr.OpCode, nil
	}
}

// control answers a ping with a pong and a close with a close; a close ends
// the connection with a *CloseError.
func control(cn *conn, h ws.Header, r io.Reader) error {
	p, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	switch h.OpCode {
	case ws.OpPing:
		return cn.writeControl(ws.OpPong, p)
	case ws.OpClose:
		// The answer is not waited for: a publish too large for the
		// broker may still be writing (the broker closed with 1009 in the
		// middle of it), and the close frame is what explains its failure.
		code, reason := ws.ParseCloseFrameData(p)
		cn.tryWriteControl(ws.OpClose, ws.NewCloseFrameBody(code, ""))
		if code == 0 {
			code = ws.StatusNoStatusRcvd
		}
		return &CloseError{Code: int(code), Reason: reason}
	}
	return nil
}

// readLoop reads frames until the connection fails, then hands it to lost.
func (c *Client) readLoop(cn *conn) {
	defer c.wg.Done()
	rd := &wsutil.Reader{Source: cn.br, State: ws.StateClientSide, MaxFrameSize: maxInbound}
	var idle time.Duration
	if hb := c.opts.HeartbeatInterval; hb > 0 {
		idle = 2*hb + 10*time.Second
	}
	for {
		if idle > 0 {
			_ = cn.nc.SetReadDeadline(time.Now().Add(idle))
		}
		payload, op, err := c.nextMessage(cn, rd)
		if err != nil {
			cn.setCause(err)
			c.lost(cn, err)
			return
		}
		if op != ws.OpBinary || len(payload) == 0 {
			continue // heartbeat echo, or a text frame the broker never sends
		}
		f, err := parseFrame(payload)
		if err != nil {
			continue
		}
		if f.typ == "disconnect" && f.reason != "" {
			c.report(fmt.Errorf("client: the broker is disconnecting: %s", f.reason))
			continue
		}
		c.handleFrame(f)
	}
}

// pingLoop sends heartbeats and flushes acks for connection cn.
func (c *Client) pingLoop(cn *conn) {
	defer c.wg.Done()
	var hb <-chan time.Time
	if c.opts.HeartbeatInterval > 0 {
		t := time.NewTicker(c.opts.HeartbeatInterval)
		defer t.Stop()
		hb = t.C
	}
	ackT := time.NewTimer(time.Hour)
	ackT.Stop()
	armed := false
	flush := func() {
		for {
			ids := c.acks.take(c.opts.AckBatchSize)
			if len(ids) == 0 {
				return
			}
			if cn.write(batchAckFrame(ids)) != nil {
				return
			}
		}
	}
	if c.acks.len() > 0 { // acks left from a previous connection
		ackT.Reset(c.opts.AckInterval)
		armed = true
	}
	for {
		select {
		case <-cn.done:
			ackT.Stop()
			return
		case <-hb:
			if cn.write(nil) != nil {
				continue // the reader notices the failure
			}
		case <-c.acks.kick:
			if c.acks.len() >= c.opts.AckBatchSize {
				flush()
			}
			if !armed && c.acks.len() > 0 {
				ackT.Reset(c.opts.AckInterval)
				armed = true
			}
		case <-ackT.C:
			armed = false
			flush()
		}
	}
}
