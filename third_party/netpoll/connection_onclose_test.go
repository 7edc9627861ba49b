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

// Tests of edit 20 of kraken.patch (PATCH.md): the event loop's OnClose.

package netpoll

import (
	"bytes"
	"context"
	"net"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

type onCloseKey struct{}

// onCloseCall is what OnClose saw of one connection.
type onCloseCall struct {
	c       *connection
	ctx     context.Context
	notes   []string // the connection's close callbacks that had run
	fdErr   error    // fstat of its descriptor
	inTable bool     // still in the server's table
}

// onCloseServer is an event loop on a fresh listener with an OnClose that
// records every call; prepare is its OnPrepare.
type onCloseServer struct {
	loop   EventLoop
	ln     Listener
	conns  chan *connection // from OnPrepare
	called chan *connection // from OnClose

	mu     sync.Mutex
	lastID int64
	ids    map[*connection]int64
	notes  map[*connection][]string
	calls  []onCloseCall
}

func newOnCloseServer(t *testing.T, prepare func(s *onCloseServer, c *connection) context.Context) *onCloseServer {
	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	s := &onCloseServer{ln: ln, conns: make(chan *connection, 16), called: make(chan *connection, 16),
		ids: map[*connection]int64{}, notes: map[*connection][]string{}}
	onClose := func(ctx context.Context, conn Connection) {
		c := conn.(*connection)
		var st syscall.Stat_t
		call := onCloseCall{c: c, ctx: ctx, fdErr: syscall.Fstat(c.Fd(), &st)}
		if srv := (*server)(atomic.LoadPointer(&c.srv)); srv != nil {
			srv.mu.Lock()
			call.inTable = c.fd < len(srv.connections) && srv.connections[c.fd] == c
			srv.mu.Unlock()
		}
		s.mu.Lock()
		call.notes = append([]string(nil), s.notes[c]...)
		s.calls = append(s.calls, call)
		s.mu.Unlock()
		s.called <- c
	}
	onRequest := func(_ context.Context, c Connection) error {
		r := c.Reader()
		_ = r.Skip(r.Len())
		return r.Release()
	}
	s.loop, err = NewEventLoop(onRequest,
		WithOnPrepare(func(c Connection) context.Context { return prepare(s, c.(*connection)) }),
		WithOnClose(onClose))
	MustNil(t, err)
	go s.loop.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.loop.Shutdown(ctx)
	})
	return s
}

// withID returns a context holding a new number for c, kept for idOf.
func (s *onCloseServer) withID(c *connection) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastID++
	s.ids[c] = s.lastID
	return context.WithValue(context.Background(), onCloseKey{}, s.lastID)
}

func (s *onCloseServer) idOf(c *connection) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids[c]
}

// note returns a close callback that notes name for c.
func (s *onCloseServer) note(c *connection, name string) CloseCallback {
	return func(Connection) error {
		s.mu.Lock()
		s.notes[c] = append(s.notes[c], name)
		s.mu.Unlock()
		return nil
	}
}

func (s *onCloseServer) accepted(t *testing.T) *connection {
	t.Helper()
	select {
	case c := <-s.conns:
		return c
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// waitCalled waits for OnClose of c and returns what it saw.
func (s *onCloseServer) waitCalled(t *testing.T, c *connection) onCloseCall {
	t.Helper()
	select {
	case got := <-s.called:
		if got != c {
			t.Fatalf("OnClose ran for %p, want %p", got, c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnClose did not run")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[len(s.calls)-1]
}

// callsOf counts the OnClose calls of c.
func (s *onCloseServer) callsOf(c *connection) (n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, call := range s.calls {
		if call.c == c {
			n++
		}
	}
	return n
}

func waitFinalized(t *testing.T, c *connection) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for atomic.LoadUint32(&c.closed) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if atomic.LoadUint32(&c.closed) == 0 {
		t.Fatal("the finalizer did not close the descriptor")
	}
}

// TestOnCloseAccepted: OnClose runs once for an accepted connection closed by
// the peer or by the server, with the context OnPrepare returned, after the
// connection's close callbacks (the latest first) and the table removal, the
// descriptor still open, before the finalizer.
func TestOnCloseAccepted(t *testing.T) {
	s := newOnCloseServer(t, func(s *onCloseServer, c *connection) context.Context {
		MustNil(t, c.AddCloseCallback(s.note(c, "first")))
		MustNil(t, c.AddCloseCallback(s.note(c, "second")))
		ctx := s.withID(c)
		s.conns <- c
		return ctx
	})
	for _, by := range []string{"peer", "server"} {
		t.Run(by, func(t *testing.T) {
			client, err := net.Dial("tcp", s.ln.Addr().String())
			MustNil(t, err)
			defer client.Close()
			c := s.accepted(t)
			id := s.idOf(c)
			if by == "peer" {
				MustNil(t, client.Close())
			} else {
				MustNil(t, c.Close())
			}
			call := s.waitCalled(t, c)
			if got, _ := call.ctx.Value(onCloseKey{}).(int64); got != id {
				t.Errorf("OnClose's ctx holds %v, want OnPrepare's %d", call.ctx.Value(onCloseKey{}), id)
			}
			if want := []string{"second", "first"}; !reflect.DeepEqual(call.notes, want) {
				t.Errorf("close callbacks run before OnClose: %v, want %v", call.notes, want)
			}
			if call.fdErr != nil {
				t.Errorf("the descriptor was closed before OnClose: %v", call.fdErr)
			}
			if call.inTable {
				t.Error("the connection was still in the server's table in OnClose")
			}
			waitFinalized(t, c)
			MustNil(t, c.Close()) // a second close runs nothing
			time.Sleep(20 * time.Millisecond)
			if n := s.callsOf(c); n != 1 {
				t.Errorf("OnClose ran %d times, want 1", n)
			}
		})
	}
}

// TestOnCloseNotDialed: a dialed connection never gets OnClose, whichever
// side closes it; the accepted side does.
func TestOnCloseNotDialed(t *testing.T) {
	s := newOnCloseServer(t, func(s *onCloseServer, c *connection) context.Context {
		s.conns <- c
		return nil
	})
	for _, by := range []string{"dialer", "server"} {
		t.Run(by, func(t *testing.T) {
			conn, err := DialConnection("tcp", s.ln.Addr().String(), time.Second)
			MustNil(t, err)
			dialed := &conn.(*TCPConnection).connection
			dialedClosed := make(chan struct{})
			MustNil(t, dialed.AddCloseCallback(func(Connection) error { close(dialedClosed); return nil }))
			c := s.accepted(t)
			if by == "dialer" {
				MustNil(t, dialed.Close())
			} else {
				MustNil(t, c.Close())
			}
			call := s.waitCalled(t, c)
			if call.ctx != context.Background() {
				t.Errorf("OnClose's ctx is %v, want context.Background() (OnPrepare returned nil)", call.ctx)
			}
			if by == "server" {
				// a dialed connection without OnRequest is closed by its user
				// once the poller has seen the hang-up
				deadline := time.Now().Add(5 * time.Second)
				for dialed.IsActive() && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				MustNil(t, dialed.Close())
			}
			select {
			case <-dialedClosed:
			case <-time.After(5 * time.Second):
				t.Fatal("the dialed connection's close path did not run")
			}
			_ = dialed.Close()
			time.Sleep(20 * time.Millisecond)
			if n := s.callsOf(dialed); n != 0 {
				t.Errorf("OnClose ran %d times for the dialed connection, want 0", n)
			}
		})
	}
}

// TestOnCloseDuringPrepare: a connection closed while its OnPrepare runs, by
// another goroutine or by OnPrepare itself, gets OnClose once, with the
// context OnPrepare returned, once OnPrepare has returned: the callbacks
// added in OnPrepare after the Close run too, before it. It is never put in
// the server's table. (A race between the Close and OnPrepare's write of the
// context would be reported under -race.)
func TestOnCloseDuringPrepare(t *testing.T) {
	for _, by := range []string{"goroutine", "prepare"} {
		t.Run(by, func(t *testing.T) {
			s := newOnCloseServer(t, func(s *onCloseServer, c *connection) context.Context {
				if by == "goroutine" {
					closed := make(chan struct{})
					go func() {
						_ = c.Close()
						close(closed)
					}()
					<-closed // Close has returned; the close path waits for OnPrepare
				} else {
					_ = c.Close()
				}
				MustNil(t, c.AddCloseCallback(s.note(c, "added after the close")))
				ctx := s.withID(c)
				s.conns <- c
				return ctx
			})
			client, err := net.Dial("tcp", s.ln.Addr().String())
			MustNil(t, err)
			defer client.Close()
			c := s.accepted(t)
			id := s.idOf(c)
			call := s.waitCalled(t, c)
			if got, _ := call.ctx.Value(onCloseKey{}).(int64); got != id {
				t.Errorf("OnClose's ctx holds %v, want OnPrepare's %d", call.ctx.Value(onCloseKey{}), id)
			}
			if want := []string{"added after the close"}; !reflect.DeepEqual(call.notes, want) {
				t.Errorf("close callbacks run before OnClose: %v, want %v", call.notes, want)
			}
			if call.fdErr != nil {
				t.Errorf("the descriptor was closed before OnClose: %v", call.fdErr)
			}
			waitFinalized(t, c)
			time.Sleep(20 * time.Millisecond)
			if n := s.callsOf(c); n != 1 {
				t.Errorf("OnClose ran %d times, want 1", n)
			}
			srv := (*server)(atomic.LoadPointer(&c.srv))
			srv.mu.Lock()
			inTable := c.fd < len(srv.connections) && srv.connections[c.fd] == c
			srv.mu.Unlock()
			if inTable {
				t.Error("a connection closed in OnPrepare is in the server's table")
			}
		})
	}
}

// TestCloseRacingPrepare closes every connection from a goroutine its
// OnPrepare starts, so the Close lands anywhere around the end of
// OnPrepare, the register with the poller and the server's table: each
// connection still gets OnClose exactly once, with OnPrepare's context,
// and none is left in the server's table (which would keep server.Close
// waiting for it). Run it under -race.
func TestCloseRacingPrepare(t *testing.T) {
	const n = 300
	var prepared, closed, wrongCtx atomic.Int32
	var mu sync.Mutex
	seen := map[*connection]int{}
	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	loop, err := NewEventLoop(func(_ context.Context, c Connection) error {
		r := c.Reader()
		_ = r.Skip(r.Len())
		return r.Release()
	}, WithOnPrepare(func(c Connection) context.Context {
		ctx := context.WithValue(context.Background(), onCloseKey{}, c)
		i := prepared.Add(1)
		go func() {
			for j := int32(0); j < i%4; j++ {
				runtime.Gosched()
			}
			_ = c.Close()
		}()
		return ctx
	}), WithOnClose(func(ctx context.Context, c Connection) {
		if ctx.Value(onCloseKey{}) != c {
			wrongCtx.Add(1)
		}
		mu.Lock()
		seen[c.(*connection)]++
		mu.Unlock()
		closed.Add(1)
	}))
	MustNil(t, err)
	go loop.Serve(ln)
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		MustNil(t, err)
		_, _ = c.Write([]byte{1})
		defer c.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for closed.Load() < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a second OnClose, if any
	el := loop.(*eventLoop)
	el.Lock()
	srv := el.svr
	el.Unlock()
	if got := closed.Load(); got != n || wrongCtx.Load() != 0 {
		t.Fatalf("OnClose ran %d times for %d connections (%d with another context)", got, n, wrongCtx.Load())
	}
	mu.Lock()
	for c, k := range seen {
		if k != 1 {
			t.Fatalf("OnClose ran %d times for %p", k, c)
		}
	}
	mu.Unlock()
	if open := srv.open(); len(open) != 0 {
		t.Fatalf("%d closed connections left in the server's table", len(open))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := loop.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// closeFromElsewhere closes c from another goroutine and waits until that
// Close has returned, as a Close racing the accept path does.
func closeFromElsewhere(c *connection) {
	done := make(chan struct{})
	go func() {
		_ = c.Close()
		close(done)
	}()
	<-done
}

// hookedServer serves an event loop whose OnPrepare returns a context
// naming the connection and whose OnClose counts its calls per connection;
// it returns the loop's server (its table) and the counts.
func hookedServer(t *testing.T, n int) (srv *server, closes func() map[*connection]int) {
	var mu sync.Mutex
	seen := map[*connection]int{}
	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	loop, err := NewEventLoop(func(_ context.Context, c Connection) error {
		r := c.Reader()
		_ = r.Skip(r.Len())
		return r.Release()
	}, WithOnPrepare(func(c Connection) context.Context {
		return context.WithValue(context.Background(), onCloseKey{}, c)
	}), WithOnClose(func(ctx context.Context, c Connection) {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Value(onCloseKey{}) == c {
			seen[c.(*connection)]++
		}
	}))
	MustNil(t, err)
	go loop.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = loop.Shutdown(ctx)
	})
	for i := 0; i < n; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		MustNil(t, err)
		_, _ = c.Write([]byte{1})
		t.Cleanup(func() { _ = c.Close() })
	}
	closes = func() map[*connection]int {
		mu.Lock()
		defer mu.Unlock()
		out := make(map[*connection]int, len(seen))
		for c, k := range seen {
			out[c] = k
		}
		return out
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(closes()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	el := loop.(*eventLoop)
	el.Lock()
	defer el.Unlock()
	return el.svr, closes
}

// A Close between OnPrepare's return and the register with the poller
// (PATCH.md edit 20) waits for the accept path, which runs the close path
// once and does not register the connection: nothing is logged (a register
// of the closed descriptor failed and logged) and OnClose runs once.
func TestCloseBeforeRegister(t *testing.T) {
	var log syncBuffer
	SetLoggerOutput(&log)
	defer SetLoggerOutput(os.Stderr)
	testHookPrepared = closeFromElsewhere
	defer func() { testHookPrepared = nil }()
	const n = 20
	_, closes := hookedServer(t, n)
	got := closes()
	if len(got) != n {
		t.Fatalf("OnClose ran for %d of %d connections", len(got), n)
	}
	for c, k := range got {
		if k != 1 {
			t.Fatalf("OnClose ran %d times for %p", k, c)
		}
	}
	if s := log.String(); s != "" {
		t.Fatalf("netpoll logged: %s", s)
	}
}

// A Close between the accept path's last check and the connection's entry
// in the server's table (PATCH.md F5) leaves no entry: the table is empty
// once every connection is closed, so server.Close does not wait for one.
func TestCloseBeforeTableEntry(t *testing.T) {
	testHookAdding = closeFromElsewhere
	defer func() { testHookAdding = nil }()
	const n = 20
	srv, closes := hookedServer(t, n)
	if got := closes(); len(got) != n {
		t.Fatalf("OnClose ran for %d of %d connections", len(got), n)
	}
	if open := srv.open(); len(open) != 0 {
		t.Fatalf("%d closed connections left in the server's table", len(open))
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's writes from pollers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
