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

// Tests of edits 7–14 of kraken.patch (PATCH.md): what an idle connection
// holds, and the behaviour that the lazy parts must keep.

package netpoll

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestIdleConnectionSizes pins the sizes PATCH.md quotes: a regression that
// grows the connection record out of its size class, or the operator, fails
// here.
func TestIdleConnectionSizes(t *testing.T) {
	if got := unsafe.Sizeof(connection{}); got != 240 {
		t.Errorf("connection is %d bytes, PATCH.md says 240 (the 240-byte size class)", got)
	}
	if got := unsafe.Sizeof(FDOperator{}); got != 96 {
		t.Errorf("FDOperator is %d bytes, PATCH.md says 96", got)
	}
	if got := unsafe.Sizeof(peerAddr{}); got != 24 {
		t.Errorf("peerAddr is %d bytes, want 24", got)
	}
}

// idleServer is an event loop on a fresh listener whose connections are sent
// to conns from OnPrepare, and whose OnRequest consumes everything buffered
// into got.
type idleServer struct {
	loop  EventLoop
	ln    Listener
	conns chan Connection

	mu  sync.Mutex
	got bytes.Buffer
}

func newIdleServer(t *testing.T, network, addr string, opts ...Option) *idleServer {
	ln, err := CreateListener(network, addr)
	if err != nil {
		t.Skipf("listen %s %s: %v", network, addr, err)
	}
	s := &idleServer{ln: ln, conns: make(chan Connection, 16)}
	prepare := func(c Connection) context.Context {
		s.conns <- c
		return context.Background()
	}
	onRequest := func(_ context.Context, c Connection) error {
		r := c.Reader()
		b, err := r.Next(r.Len())
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.got.Write(b)
		s.mu.Unlock()
		return r.Release()
	}
	s.loop, err = NewEventLoop(onRequest, append([]Option{WithOnPrepare(prepare)}, opts...)...)
	MustNil(t, err)
	go s.loop.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = s.loop.Shutdown(ctx)
	})
	return s
}

func (s *idleServer) received() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.got.Bytes()...)
}

func (s *idleServer) accepted(t *testing.T) *connection {
	select {
	case c := <-s.conns:
		return c.(*connection)
	case <-time.After(5 * time.Second):
		t.Fatal("no connection accepted")
		return nil
	}
}

// TestAcceptedRemoteAddr: an accepted connection's RemoteAddr and LocalAddr
// (edit 9: made from the address kept, when called) are what the client sees
// from its side, with a 4-byte IP for IPv4 and a 16-byte one for IPv6, as
// sockaddrToAddr made them at accept; a new value on every call, valid after
// the close too.
func TestAcceptedRemoteAddr(t *testing.T) {
	for _, tc := range []struct {
		network, addr string
		ipLen         int
	}{
		{"tcp", "127.0.0.1:0", net.IPv4len},
		{"tcp", "[::1]:0", net.IPv6len},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			s := newIdleServer(t, tc.network, tc.addr)
			client, err := net.Dial("tcp", s.ln.Addr().String())
			if err != nil {
				t.Skipf("dial %s: %v", s.ln.Addr(), err)
			}
			defer client.Close()
			c := s.accepted(t)
			if c.remoteAddr != nil || c.peer.family == 0 {
				t.Fatalf("accepted connection keeps remoteAddr %v, peer %+v: want the peer kept in place", c.remoteAddr, c.peer)
			}
			check := func() {
				ra, ok := c.RemoteAddr().(*net.TCPAddr)
				if !ok {
					t.Fatalf("RemoteAddr is %T, want *net.TCPAddr", c.RemoteAddr())
				}
				want := client.LocalAddr().(*net.TCPAddr)
				if len(ra.IP) != tc.ipLen || !ra.IP.Equal(want.IP) || ra.Port != want.Port || ra.Zone != "" {
					t.Fatalf("RemoteAddr = %#v (IP %d bytes), want %v (%d bytes)", ra, len(ra.IP), want, tc.ipLen)
				}
				if ra.String() != want.String() || c.RemoteAddr().Network() != "tcp" {
					t.Fatalf("RemoteAddr = %s/%s, want %s/tcp", ra, ra.Network(), want)
				}
				if la := c.LocalAddr(); la.String() != s.ln.Addr().String() {
					t.Fatalf("LocalAddr = %s, want the listener's %s", la, s.ln.Addr())
				}
			}
			check()
			a, b := c.RemoteAddr().(*net.TCPAddr), c.RemoteAddr().(*net.TCPAddr)
			a.IP[0]++ // a caller changing the value it got changes nothing kept
			if a == b || !b.IP.Equal(client.LocalAddr().(*net.TCPAddr).IP) {
				t.Fatal("RemoteAddr's values share memory")
			}
			check()
			MustNil(t, c.Close())
			check()
		})
	}
}

// TestPeerAddrScoped: a scoped IPv6 address keeps its zone (the interface
// index, its name made by RemoteAddr), as sockaddrToAddr did at accept.
func TestPeerAddrScoped(t *testing.T) {
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skip("no loopback interface:", err)
	}
	sa := &syscall.SockaddrInet6{Port: 4242, ZoneId: uint32(lo.Index), Addr: [16]byte{0xfe, 0x80, 15: 1}}
	var p peerAddr
	if !p.set(sa) {
		t.Fatal("an IPv6 address was not kept")
	}
	got, want := p.addr().(*net.TCPAddr), sockaddrToAddr(sa).(*net.TCPAddr)
	if got.String() != want.String() || got.Zone != "lo" || len(got.IP) != len(want.IP) {
		t.Fatalf("addr() = %v (%d bytes), sockaddrToAddr = %v (%d bytes)", got, len(got.IP), want, len(want.IP))
	}
	if p.set(&syscall.SockaddrUnix{Name: "/x"}) {
		t.Fatal("a unix address was kept as an IP one")
	}
}

// TestReadAfterInputDropped: a Release that leaves the input empty drops the
// input buffer (edit 11); the next bytes are read into a new one, in order,
// through OnRequest and through a reader that waits (Next) on a dialed
// connection.
func TestReadAfterInputDropped(t *testing.T) {
	s := newIdleServer(t, "tcp", "127.0.0.1:0")
	client, err := net.Dial("tcp", s.ln.Addr().String())
	MustNil(t, err)
	defer client.Close()
	c := s.accepted(t)
	var want []byte
	dropped := 0
	for i := 0; i < 20; i++ {
		msg := bytes.Repeat([]byte{byte('a' + i)}, 1+i*97)
		want = append(want, msg...)
		_, err := client.Write(msg)
		MustNil(t, err)
		deadline := time.Now().Add(5 * time.Second)
		for len(s.received()) < len(want) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if !bytes.Equal(s.received(), want) {
			t.Fatalf("after message %d: got %d bytes, want %d, or not in order", i, len(s.received()), len(want))
		}
		// OnRequest's Release drops the buffer unless the poller is still
		// handling the read that started it (its do fails then, and the
		// buffer stays until a later Release): count, do not require.
		wait := time.Now().Add(100 * time.Millisecond)
		for c.input() != nil && time.Now().Before(wait) {
			time.Sleep(time.Millisecond)
		}
		if c.input() == nil {
			dropped++
		}
	}
	t.Logf("OnRequest's Release dropped the input buffer after %d of 20 messages", dropped)

	// A dialed connection read by a goroutine that waits for its bytes.
	dc, err := DialConnection("tcp", s.ln.Addr().String(), time.Second)
	MustNil(t, err)
	defer dc.Close()
	peer := s.accepted(t)
	for i := 0; i < 5; i++ {
		msg := bytes.Repeat([]byte{byte('0' + i)}, 300)
		done := make(chan []byte, 1)
		go func() {
			b, err := dc.Reader().Next(len(msg))
			MustNil(t, err)
			done <- append([]byte(nil), b...)
			MustNil(t, dc.Reader().Release())
		}()
		time.Sleep(5 * time.Millisecond) // let the reader wait, with no input buffer
		_, err := peer.Writer().WriteBinary(msg)
		MustNil(t, err)
		MustNil(t, peer.Writer().Flush())
		select {
		case b := <-done:
			if !bytes.Equal(b, msg) {
				t.Fatalf("read %q, want %q", b, msg)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting reader got nothing")
		}
		// The reader's goroutine has returned; once the poller is done with
		// the event that woke it, a Release drops the buffer, so the next
		// read starts without one.
		deadline := time.Now().Add(5 * time.Second)
		for (&dc.(*TCPConnection).connection).input() != nil && time.Now().Before(deadline) {
			MustNil(t, dc.Reader().Release())
			time.Sleep(time.Millisecond)
		}
		if (&dc.(*TCPConnection).connection).input() != nil {
			t.Fatal("the dialed connection's drained input buffer is still held")
		}
	}
	// Reads of nothing on a connection without an input buffer.
	if n := dc.Reader().Len(); n != 0 {
		t.Fatalf("Len = %d", n)
	}
	if b, err := dc.Reader().Next(0); err != nil || len(b) != 0 {
		t.Fatalf("Next(0) = %q, %v", b, err)
	}
	MustNil(t, dc.Reader().Release())
}

// TestCloseOrder: the close path (edit 10) runs, once, the server's table
// removal, then the callbacks added with AddCloseCallback, the latest first
// (the first one added is held without a node, and runs last of them), then
// the finalizer, which closes the descriptor: every callback still sees it
// open.
func TestCloseOrder(t *testing.T) {
	var order []string
	var mu sync.Mutex
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	var srv *server
	done := make(chan struct{})
	s := newIdleServer(t, "tcp", "127.0.0.1:0")
	client, err := net.Dial("tcp", s.ln.Addr().String())
	MustNil(t, err)
	defer client.Close()
	c := s.accepted(t)
	srv = (*server)(atomic.LoadPointer(&c.srv))
	if srv == nil {
		t.Fatal("the accepted connection does not know its server")
	}
	fd := c.Fd()
	for i, name := range []string{"first", "second", "third"} {
		name, last := name, i == 0
		MustNil(t, c.AddCloseCallback(func(Connection) error {
			var st syscall.Stat_t
			if err := syscall.Fstat(fd, &st); err != nil {
				t.Errorf("callback %s: the descriptor is closed already: %v", name, err)
			}
			srv.mu.Lock()
			if fd < len(srv.connections) && srv.connections[fd] == c {
				t.Errorf("callback %s: the connection is still in the server's table", name)
			}
			srv.mu.Unlock()
			note(name)
			if last {
				close(done)
			}
			return nil
		}))
	}
	_ = client.Close() // the peer hangs up: the poller closes it
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the close callbacks did not run")
	}
	deadline := time.Now().Add(5 * time.Second)
	for atomic.LoadUint32(&c.closed) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if atomic.LoadUint32(&c.closed) == 0 {
		t.Fatal("the finalizer did not close the descriptor")
	}
	MustNil(t, c.Close()) // a second close runs nothing again
	time.Sleep(10 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if got := len(order); got != 3 || order[0] != "third" || order[1] != "second" || order[2] != "first" {
		t.Fatalf("callbacks ran %v, want [third second first]", order)
	}
}

// TestTimeoutsLazy: timeouts and deadlines are held apart once one is set
// (edit 13) and act as before; setting zero on a connection without them
// creates nothing.
func TestTimeoutsLazy(t *testing.T) {
	s := newIdleServer(t, "tcp", "127.0.0.1:0")
	dc, err := DialConnection("tcp", s.ln.Addr().String(), time.Second)
	MustNil(t, err)
	defer dc.Close()
	c := &dc.(*TCPConnection).connection
	MustNil(t, c.SetReadTimeout(0))
	MustNil(t, c.SetWriteTimeout(0))
	MustNil(t, c.SetDeadline(time.Time{}))
	MustNil(t, c.SetReadDeadline(time.Time{}))
	MustNil(t, c.SetWriteDeadline(time.Time{}))
	if c.loadTimeouts() != nil {
		t.Fatal("zero timeouts created the timeouts")
	}
	MustNil(t, c.SetReadTimeout(30*time.Millisecond))
	start := time.Now()
	_, err = c.Reader().Next(1)
	if err == nil || time.Since(start) < 25*time.Millisecond {
		t.Fatalf("Next with a read timeout: %v after %v", err, time.Since(start))
	}
	MustNil(t, c.SetReadDeadline(time.Now().Add(-time.Second)))
	if _, err = c.Reader().Next(1); err == nil {
		t.Fatal("Next past the read deadline did not fail")
	}
	MustNil(t, c.SetReadTimeout(0)) // clears the deadline and the timeout
	if tm := c.loadTimeouts(); tm == nil || tm.readTimeout != 0 || tm.readDeadline != 0 {
		t.Fatalf("timeouts after SetReadTimeout(0): %+v", tm)
	}
}
