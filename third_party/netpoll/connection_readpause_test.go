// Copyright 2026 kraken authors (added to netpoll v0.7.2 by kraken.patch)
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//    http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

//go:build linux
// +build linux

package netpoll

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// The tests of connection.SetReadPaused run a netpoll server on 127.0.0.1
// whose OnRequest consumes everything and checks it against a byte pattern,
// and a client that is a plain net.Conn writing that pattern.

type readPauser interface{ SetReadPaused(bool) error }

const (
	pausePeriod = 251 // the pattern: byte i of the stream is byte(i % pausePeriod)
	pauseChunk  = 64 << 10
	// The client's send buffer is fixed at pauseSendBuffer (the kernel doubles
	// it), not autotuned: loopback autotuning grows it up to tcp_wmem's maximum
	// (4 MB by default), and the client would then queue that much in its own
	// kernel before a write blocks.
	pauseSendBuffer = 64 << 10
	// pauseBound is the most the client may write to a paused connection: the
	// two kernel buffers (the client's send buffer, the server's receive
	// buffer), with room; TestReadPauseBackpressure logs what they took.
	// Without the pause the server reads at memory speed and the client gets
	// to pauseCap.
	pauseBound = 1 << 20
	pauseCap   = 64 << 20
)

var pausePattern = func() []byte {
	b := make([]byte, pausePeriod+pauseChunk)
	for i := range b {
		b[i] = byte(i % pausePeriod)
	}
	return b
}()

// patternAt returns n ≤ pauseChunk bytes of the pattern from stream offset off.
func patternAt(off int64, n int) []byte {
	s := int(off % pausePeriod)
	return pausePattern[s : s+n]
}

// pauseServer is a server for one connection.
type pauseServer struct {
	loop     EventLoop
	addr     string
	conn     chan Connection // the accepted connection
	closed   chan struct{}   // closed by the connection's close callback
	paused   chan struct{}   // closed once OnRequest has paused the connection
	pauseAt  int64           // OnRequest pauses once it has consumed this many bytes (0: never)
	onClose  func(c Connection)
	received int64 // bytes consumed, in order
	calls    int64 // OnRequest calls
	didPause bool  // OnRequest's own (OnRequest calls are serial)

	mu     sync.Mutex
	failed []string
}

func (s *pauseServer) fail(format string, args ...interface{}) {
	s.mu.Lock()
	s.failed = append(s.failed, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

func (s *pauseServer) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.failed {
		t.Error("server: " + f)
	}
}

// newPauseServer starts a server whose OnRequest pauses the connection once
// it has consumed pauseAt bytes (0: never), and whose close callback calls
// onClose (if not nil) first.
func newPauseServer(t *testing.T, pauseAt int64, onClose func(Connection)) *pauseServer {
	s := &pauseServer{
		conn:    make(chan Connection, 1),
		closed:  make(chan struct{}),
		paused:  make(chan struct{}),
		pauseAt: pauseAt,
		onClose: onClose,
	}
	onRequest := func(ctx context.Context, c Connection) error {
		atomic.AddInt64(&s.calls, 1)
		r := c.Reader()
		n := r.Len()
		buf, err := r.Next(n)
		if err != nil {
			s.fail("Next(%d): %v", n, err)
			return err
		}
		off := atomic.LoadInt64(&s.received)
		for i := 0; i < len(buf); i += pauseChunk {
			part := buf[i:]
			if len(part) > pauseChunk {
				part = part[:pauseChunk]
			}
			if !bytes.Equal(part, patternAt(off+int64(i), len(part))) {
				s.fail("bytes %d..%d are not the ones written there", off+int64(i), off+int64(i+len(part)))
				break
			}
		}
		r.Release()
		atomic.AddInt64(&s.received, int64(n))
		if s.pauseAt > 0 && !s.didPause && off+int64(n) >= s.pauseAt {
			s.didPause = true
			if err := c.(readPauser).SetReadPaused(true); err != nil {
				s.fail("SetReadPaused(true) in OnRequest: %v", err)
			}
			close(s.paused)
		}
		return nil
	}
	onPrepare := func(c Connection) context.Context {
		c.AddCloseCallback(func(c Connection) error {
			if s.onClose != nil {
				s.onClose(c)
			}
			close(s.closed)
			return nil
		})
		s.conn <- c
		return context.Background()
	}
	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	s.addr = ln.Addr().String()
	s.loop, err = NewEventLoop(onRequest, WithOnPrepare(onPrepare))
	MustNil(t, err)
	go s.loop.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.loop.Shutdown(ctx)
	})
	return s
}

// pauseClient writes the pattern.
type pauseClient struct {
	net.Conn
	written int64
}

func dialPauseClient(t *testing.T, addr string) *pauseClient {
	c, err := net.Dial("tcp", addr)
	MustNil(t, err)
	t.Cleanup(func() { c.Close() })
	MustNil(t, c.(*net.TCPConn).SetWriteBuffer(pauseSendBuffer))
	return &pauseClient{Conn: c}
}

// write writes n bytes of the pattern, each write with the given deadline,
// and returns the error of the write that failed (a timeout, say).
func (c *pauseClient) write(n int64, deadline time.Duration) error {
	for n > 0 {
		k := int64(pauseChunk)
		if k > n {
			k = n
		}
		c.SetWriteDeadline(time.Now().Add(deadline))
		w, err := c.Write(patternAt(c.written, int(k)))
		c.written += int64(w)
		n -= int64(w)
		if err != nil {
			return err
		}
	}
	return nil
}

// fill writes until a write has been blocked for deadline, at most pauseCap
// bytes in all, and returns what it wrote.
func (c *pauseClient) fill(t *testing.T, deadline time.Duration) int64 {
	t.Helper()
	start := c.written
	err := c.write(pauseCap-start, deadline)
	var ne net.Error
	if err == nil {
		t.Fatalf("the client wrote %d bytes to a paused connection and no write blocked", c.written-start)
	} else if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("write: %v", err)
	}
	return c.written - start
}

func waitClosed(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// pauseFirst starts a server that pauses its connection in OnRequest after
// the first bytes, and a client that sends them; it returns once the
// connection is paused.
func pauseFirst(t *testing.T) (*pauseServer, Connection, *pauseClient) {
	s := newPauseServer(t, 1, nil)
	c := dialPauseClient(t, s.addr)
	MustNil(t, c.write(1000, 5*time.Second))
	var conn Connection
	select {
	case conn = <-s.conn:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
	}
	waitClosed(t, s.paused, "OnRequest to pause the connection")
	return s, conn, c
}

// TestReadPauseBackpressure: while paused the server reads nothing (its input
// buffer and OnRequest stand still) and the client's writes block once the
// kernel's buffers are full; after the resume every byte arrives in order.
func TestReadPauseBackpressure(t *testing.T) {
	s, conn, c := pauseFirst(t)
	calls, received, buffered := atomic.LoadInt64(&s.calls), atomic.LoadInt64(&s.received), conn.Reader().Len()

	queued := c.fill(t, 300*time.Millisecond)
	fd := conn.(*connection).fd
	inq, rcvbuf := sockQueue(t, fd, 0x541B /* SIOCINQ */), sockOpt(t, fd, syscall.SO_RCVBUF)
	cfd := clientFD(t, c)
	outq, sndbuf := sockQueue(t, cfd, 0x5411 /* SIOCOUTQ */), sockOpt(t, cfd, syscall.SO_SNDBUF)
	t.Logf("a paused connection took %d bytes before a write blocked for 300ms: "+
		"%d in the server's receive queue (SO_RCVBUF %d), %d in the client's send queue (SO_SNDBUF %d)",
		queued, inq, rcvbuf, outq, sndbuf)
	Assert(t, queued <= pauseBound, "the client wrote", queued, "bytes to a paused connection")
	Assert(t, inq <= rcvbuf, "the server's receive queue holds", inq, "bytes, SO_RCVBUF", rcvbuf)
	time.Sleep(100 * time.Millisecond)
	Equal(t, atomic.LoadInt64(&s.calls), calls)
	Equal(t, atomic.LoadInt64(&s.received), received)
	Equal(t, conn.Reader().Len(), buffered)

	// Resume from another goroutine than OnRequest; then the rest, in order.
	MustNil(t, conn.(readPauser).SetReadPaused(false))
	MustNil(t, c.write(1<<20, 10*time.Second))
	deadline := time.Now().Add(10 * time.Second)
	for atomic.LoadInt64(&s.received) < c.written && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	Equal(t, atomic.LoadInt64(&s.received), c.written)
	s.check(t)
	select {
	case <-s.closed:
		t.Fatal("the connection was closed")
	default:
	}
}

// TestReadPausePeerReset: a client that resets the connection while it is
// paused (close with SO_LINGER 0: the connection is shut both ways, EPOLLHUP)
// is noticed at once, without a resume.
func TestReadPausePeerReset(t *testing.T) {
	s, _, c := pauseFirst(t)
	c.fill(t, 100*time.Millisecond)
	received := atomic.LoadInt64(&s.received)
	MustNil(t, c.Conn.(*net.TCPConn).SetLinger(0))
	MustNil(t, c.Close())
	waitClosed(t, s.closed, "the close callback of a reset paused connection")
	Equal(t, atomic.LoadInt64(&s.received), received) // nothing read meanwhile
	s.check(t)
}

// TestReadPausePeerClose: a client's plain close (a FIN, behind the data not
// read yet) is noticed after the resume, once all the data has been read.
func TestReadPausePeerClose(t *testing.T) {
	s, conn, c := pauseFirst(t)
	c.fill(t, 100*time.Millisecond)
	MustNil(t, c.Close())
	time.Sleep(200 * time.Millisecond)
	select {
	case <-s.closed:
		t.Fatal("a paused connection noticed its peer's FIN before reading the data in front of it")
	default:
	}

	MustNil(t, conn.(readPauser).SetReadPaused(false))
	waitClosed(t, s.closed, "the close callback after the resume")
	Equal(t, atomic.LoadInt64(&s.received), c.written)
	s.check(t)
}

// TestReadPauseAfterClose: once the connection is detached (in a close
// callback, before netpoll's own closes the descriptor) SetReadPaused returns
// ENOENT and does nothing.
func TestReadPauseAfterClose(t *testing.T) {
	errs := make([]error, 2)
	s := newPauseServer(t, 0, func(conn Connection) {
		errs[0] = conn.(readPauser).SetReadPaused(true)
		errs[1] = conn.(readPauser).SetReadPaused(false)
	})
	c := dialPauseClient(t, s.addr)
	MustNil(t, c.write(1000, 5*time.Second))
	select {
	case <-s.conn:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
	}
	MustNil(t, c.Close())
	waitClosed(t, s.closed, "the close callback")
	for i, err := range errs {
		Assert(t, errors.Is(err, syscall.ENOENT), i, err)
	}
}

// sockQueue returns the bytes in a socket's receive (SIOCINQ) or send
// (SIOCOUTQ) queue.
func sockQueue(t *testing.T, fd int, req uintptr) int {
	t.Helper()
	var n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("ioctl(%d, %#x): %v", fd, req, e)
	}
	return int(n)
}

func sockOpt(t *testing.T, fd, opt int) int {
	t.Helper()
	v, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, opt)
	MustNil(t, err)
	return v
}

// clientFD returns the descriptor of the client's socket (used only while the
// client is open).
func clientFD(t *testing.T, c *pauseClient) (fd int) {
	t.Helper()
	rc, err := c.Conn.(*net.TCPConn).SyscallConn()
	MustNil(t, err)
	MustNil(t, rc.Control(func(s uintptr) { fd = int(s) }))
	return fd
}

// TestReadPauseThenClose: a call that returned before another goroutine
// closes the connection, with nothing else ordering the two, is ordered
// before netpoll's close callback frees the operator (the race detector
// checks it).
func TestReadPauseThenClose(t *testing.T) {
	s := newPauseServer(t, 0, nil)
	c := dialPauseClient(t, s.addr)
	MustNil(t, c.write(1000, 5*time.Second))
	var conn Connection
	select {
	case conn = <-s.conn:
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted")
	}
	for atomic.LoadInt64(&s.received) < 1000 { // registered (OnPrepare runs before)
		time.Sleep(time.Millisecond)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		conn.Close()
	}()
	MustNil(t, conn.(readPauser).SetReadPaused(true))
	waitClosed(t, s.closed, "the close callback")
}
