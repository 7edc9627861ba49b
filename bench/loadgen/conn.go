package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/ws"
)

// ipBindAddressNoPort (IP_BIND_ADDRESS_NO_PORT) defers the choice of the
// local port from bind to connect, so one source address can reuse a port
// towards different destinations and skip ports in TIME_WAIT.
const ipBindAddressNoPort = 24

// conn is one client connection. Idle connections have no goroutine: the
// socket is held and read only by drain and probe.
type conn struct {
	nc      net.Conn
	wmu     sync.Mutex
	pending []byte      // bytes read past the last parsed frame
	reading bool        // a reader goroutine owns the read side
	mqtt    bool        // an MQTT connection (mqtt.go), not a WebSocket one
	closed  atomic.Bool // seen closed by drain or probe
}

// write sends b under the write lock with a deadline.
func (c *conn) write(b []byte, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(timeout))
	_, err := c.nc.Write(b)
	return err
}

// abort closes the connection with a reset (SO_LINGER 0): the peer sees
// ECONNRESET at once, as when a network path fails, and neither end keeps
// a TIME_WAIT socket, so closed connections do not linger in the kernel's
// memory and skew the next measurement.
func (c *conn) abort() {
	c.closed.Store(true)
	if tc, ok := c.nc.(interface{ SetLinger(int) error }); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.nc.Close()
}

// dialer opens and prepares connections.
type dialer struct {
	url      string
	local    *net.TCPAddr
	token    string
	tokens   int    // distinct tokens; <= 1: every connection sends token
	authF    []byte // the auth frame of token
	timeout  time.Duration
	wsDialer ws.Dialer
	// netDialer dials from the source address; mqttAddr, when not "", is
	// the broker's MQTT listener, which subscriber connections then use
	// (mqtt.go).
	netDialer net.Dialer
	mqttAddr  string
}

func newDialer(url, token string, tokens int, sourceIP string, timeout time.Duration) (*dialer, error) {
	d := &dialer{url: url, token: token, tokens: tokens, authF: clientFrame(authPayload(token)), timeout: timeout}
	if sourceIP != "" {
		ip := net.ParseIP(sourceIP)
		if ip == nil {
			return nil, fmt.Errorf("bad source address %q", sourceIP)
		}
		d.local = &net.TCPAddr{IP: ip}
	}
	nd := net.Dialer{
		LocalAddr: d.local,
		Control: func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				if d.local != nil {
					serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
				}
			})
			if err != nil {
				return err
			}
			return serr
		},
	}
	d.netDialer = nd
	d.netDialer.Timeout = timeout
	d.wsDialer = ws.Dialer{
		Timeout:        timeout,
		ReadBufferSize: 1024,
		NetDial:        nd.DialContext,
	}
	return d, nil
}

// tokenFor is the token of the connection with global index g: with
// --tokens K > 1 it is TOKEN-<g mod K>, so K distinct tokens are spread
// evenly over the connections (K >= N gives each its own); otherwise TOKEN.
func tokenFor(token string, tokens, g int) string {
	if tokens <= 1 {
		return token
	}
	return fmt.Sprintf("%s-%d", token, g%tokens)
}

// authFrame is the auth frame of the connection with global index g.
func (d *dialer) authFrame(g int) []byte {
	if d.tokens <= 1 {
		return d.authF
	}
	return clientFrame(authPayload(tokenFor(d.token, d.tokens, g)))
}

// errAuth is a refused auth reply.
var errAuth = errors.New("auth refused")

// open dials, upgrades, authenticates with the frame authF and subscribes
// to topics, waiting for the auth reply and every subscribed reply. buf is
// scratch space. authNs is the time from writing the auth frame to reading
// the auth reply.
func (d *dialer) open(ctx context.Context, authF []byte, subFrames [][]byte, buf []byte) (*conn, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	nc, br, _, err := d.wsDialer.Dial(ctx, d.url)
	if err != nil {
		return nil, 0, err
	}
	c := &conn{nc: nc}
	if br != nil {
		if n := br.Buffered(); n > 0 {
			c.pending = make([]byte, n)
			_, _ = io.ReadFull(br, c.pending)
		}
		ws.PutReader(br)
	}
	deadline := time.Now().Add(d.timeout)
	if dl, ok := ctx.Deadline(); ok {
		deadline = dl
	}
	fail := func(err error) (*conn, int64, error) {
		_ = nc.Close()
		return nil, 0, err
	}
	tAuth := time.Now()
	if err := c.write(authF, d.timeout); err != nil {
		return fail(err)
	}
	var authErr error
	got := false
	err = c.readFrames(buf, deadline, func(op byte, p []byte) bool {
		if op != opBinary || len(p) == 0 {
			return false
		}
		m, err := scanServerMsg(p)
		if err != nil || string(m.typ) != "auth" {
			return false
		}
		got = true
		if !m.success {
			authErr = fmt.Errorf("%w: %s", errAuth, m.errCode)
		}
		return true
	})
	if err != nil {
		return fail(fmt.Errorf("auth reply: %w", err))
	}
	authNs := time.Since(tAuth).Nanoseconds()
	if !got || authErr != nil {
		return fail(authErr)
	}
	if len(subFrames) == 0 {
		return c, authNs, nil
	}
	var out []byte
	for _, f := range subFrames {
		out = append(out, f...)
	}
	if err := c.write(out, d.timeout); err != nil {
		return fail(err)
	}
	want := len(subFrames)
	var subErr error
	err = c.readFrames(buf, deadline, func(op byte, p []byte) bool {
		if op != opBinary || len(p) == 0 {
			return false
		}
		m, err := scanServerMsg(p)
		if err != nil {
			return false
		}
		switch string(m.typ) {
		case "subscribed":
			want--
		case "error":
			subErr = fmt.Errorf("subscribe refused: %s", m.errCode)
			return true
		}
		return want == 0
	})
	if err != nil {
		return fail(fmt.Errorf("subscribe reply: %w", err))
	}
	if subErr != nil {
		return fail(subErr)
	}
	return c, authNs, nil
}

// errClosed reports a close frame or EOF.
var errClosed = errors.New("connection closed by the server")

// readFrames reads frames with buf as scratch space (plus c.pending) until
// stop returns true or the deadline passes. Bytes after the last consumed
// frame are kept in c.pending.
func (c *conn) readFrames(buf []byte, deadline time.Time, stop func(op byte, p []byte) bool) error {
	start, end := 0, 0
	if len(c.pending) > 0 {
		if len(c.pending) > len(buf) {
			buf = make([]byte, len(c.pending)*2)
		}
		end = copy(buf, c.pending)
		c.pending = nil
	}
	keep := func() {
		if start < end {
			c.pending = append([]byte(nil), buf[start:end]...)
		}
	}
	_ = c.nc.SetReadDeadline(deadline)
	defer func() { _ = c.nc.SetReadDeadline(time.Time{}) }()
	for {
		for {
			op, p, n, err := parseFrame(buf[start:end])
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			start += n
			if op == opClose {
				c.closed.Store(true)
				return errClosed
			}
			if stop(op, p) {
				keep()
				return nil
			}
		}
		buf, end = compact(buf, start, end)
		start = 0
		n, err := c.nc.Read(buf[end:])
		end += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				c.closed.Store(true)
				keep()
				return errClosed
			}
			keep()
			return err
		}
	}
}

// readLoop reads frames until the connection fails, calling handle for
// each one. It owns its buffer.
func (c *conn) readLoop(handle func(op byte, p []byte)) error {
	buf := make([]byte, 4096)
	start, end := 0, 0
	if len(c.pending) > 0 {
		if len(c.pending) > len(buf) {
			buf = make([]byte, len(c.pending)*2)
		}
		end = copy(buf, c.pending)
		c.pending = nil
	}
	for {
		for {
			op, p, n, err := parseFrame(buf[start:end])
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			start += n
			if op == opClose {
				return errClosed
			}
			handle(op, p)
		}
		buf, end = compact(buf, start, end)
		start = 0
		n, err := c.nc.Read(buf[end:])
		end += n
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errClosed
			}
			return err
		}
	}
}

// compact moves the unparsed bytes buf[start:end] to the front of the
// buffer, growing it when the frame they begin needs more room, and returns
// the buffer and the new end.
func compact(buf []byte, start, end int) ([]byte, int) {
	end = copy(buf, buf[start:end])
	if need := frameNeed(buf[:end]); need > len(buf) {
		nb := make([]byte, need)
		copy(nb, buf[:end])
		buf = nb
	}
	return buf, end
}
