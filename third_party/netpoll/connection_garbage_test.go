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
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestInputBufferPooled: an input buffer that Release dropped and inputPool
// hands to another connection (edit 15) starts empty, with no bytes of its
// earlier owner readable, and reads exactly what its new owner books.
func TestInputBufferPooled(t *testing.T) {
	old := newInputBuffer(512)
	p := old.book(512, 512)
	copy(p, "old owner's bytes")
	_, err := old.bookAck(len("old owner's bytes"))
	MustNil(t, err)
	_, err = old.Next(3)
	MustNil(t, err)
	freeInput(old)

	for i := 0; i < 4; i++ { // whichever buffer the pool gives
		b := newInputBuffer(512)
		if n := b.Len(); n != 0 {
			t.Fatalf("reused buffer: Len = %d", n)
		}
		if _, err := b.Peek(1); err == nil {
			t.Fatal("reused buffer: Peek(1) found a byte")
		}
		q := b.book(512, 512)
		copy(q, "new")
		_, err := b.bookAck(3)
		MustNil(t, err)
		got, err := b.Next(b.Len())
		MustNil(t, err)
		if string(got) != "new" {
			t.Fatalf("reused buffer read %q, want %q", got, "new")
		}
		MustNil(t, b.Release())
		freeInput(b)
	}
}

// TestInputBuffersAcrossConnections: connections that read and drain their
// input in turn, so that their input buffers go through inputPool from one
// to another, each read exactly their own bytes, in order.
func TestInputBuffersAcrossConnections(t *testing.T) {
	var mu sync.Mutex
	got := map[Connection]*bytes.Buffer{}
	onRequest := func(_ context.Context, c Connection) error {
		r := c.Reader()
		b, err := r.Next(r.Len())
		if err != nil {
			return err
		}
		mu.Lock()
		if got[c] == nil {
			got[c] = new(bytes.Buffer)
		}
		got[c].Write(b)
		mu.Unlock()
		return r.Release()
	}
	conns := make(chan Connection, 8)
	prepare := func(c Connection) context.Context {
		conns <- c
		return context.Background()
	}
	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	loop, err := NewEventLoop(onRequest, WithOnPrepare(prepare))
	MustNil(t, err)
	go loop.Serve(ln)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = loop.Shutdown(ctx)
	}()

	const n = 4
	clients := make([]net.Conn, n)
	servers := make([]Connection, n)
	want := make([][]byte, n)
	for i := range clients {
		clients[i], err = net.Dial("tcp", ln.Addr().String())
		MustNil(t, err)
		defer clients[i].Close()
		select {
		case servers[i] = <-conns:
		case <-time.After(5 * time.Second):
			t.Fatal("no connection accepted")
		}
	}
	read := func(i int) []byte {
		mu.Lock()
		defer mu.Unlock()
		if got[servers[i]] == nil {
			return nil
		}
		return append([]byte(nil), got[servers[i]].Bytes()...)
	}
	for round := 0; round < 30; round++ {
		for i := range clients {
			msg := []byte(fmt.Sprintf("<conn %d round %d %s>", i, round, bytes.Repeat([]byte{byte('a' + i)}, round*7)))
			want[i] = append(want[i], msg...)
			_, err := clients[i].Write(msg)
			MustNil(t, err)
			deadline := time.Now().Add(5 * time.Second)
			for len(read(i)) < len(want[i]) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if b := read(i); !bytes.Equal(b, want[i]) {
				t.Fatalf("connection %d, round %d: read %q, want %q", i, round, b, want[i])
			}
		}
	}
}

// TestSysAccept: sysAccept (edit 16, accept4 into a sockaddr on the stack)
// gives the peer address that syscall.Accept gives for the same kind of
// connection: an IPv4 and an IPv6 peer kept in peerAddr as peerAddr.set
// keeps them, a Unix peer (unnamed, and bound to a path) as the net.Addr
// that sockaddrToAddr makes.
func TestSysAccept(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		network, addr, client string
	}{
		{"tcp4", "127.0.0.1:0", ""},
		{"tcp6", "[::1]:0", ""},
		{"unix", filepath.Join(dir, "srv.sock"), ""},
		{"unix", filepath.Join(dir, "srv2.sock"), filepath.Join(dir, "cli.sock")},
	}
	for _, tc := range cases {
		t.Run(tc.network+tc.client, func(t *testing.T) {
			ln, err := CreateListener(tc.network, tc.addr)
			if err != nil {
				t.Skipf("listen %s %s: %v", tc.network, tc.addr, err)
			}
			defer ln.Close()
			dial := func() net.Conn {
				d := net.Dialer{}
				if tc.client != "" {
					os.Remove(tc.client)
					d.LocalAddr = &net.UnixAddr{Net: "unix", Name: tc.client}
				}
				c, err := d.Dial(tc.network, ln.Addr().String())
				MustNil(t, err)
				return c
			}
			accept := func(f func() (int, error)) int {
				deadline := time.Now().Add(5 * time.Second)
				for {
					fd, err := f()
					if err == nil {
						return fd
					}
					if err != syscall.EAGAIN || time.Now().After(deadline) {
						t.Fatalf("accept: %v", err)
					}
					time.Sleep(time.Millisecond)
				}
			}
			lfd := ln.(*listener).fd

			c1 := dial()
			defer c1.Close()
			var sa syscall.Sockaddr
			fd1 := accept(func() (fd int, err error) {
				fd, sa, err = syscall.Accept(lfd)
				return
			})
			defer syscall.Close(fd1)
			var want peerAddr
			var wantAddr net.Addr
			if !want.set(sa) {
				wantAddr = sockaddrToAddr(sa)
			}
			c1.Close()

			c2 := dial()
			defer c2.Close()
			var got peerAddr
			var gotAddr net.Addr
			fd2 := accept(func() (fd int, err error) {
				fd, gotAddr, err = sysAccept(lfd, &got)
				return
			})
			defer syscall.Close(fd2)

			if tc.network == "unix" {
				if got.family != 0 || gotAddr == nil || !reflect.DeepEqual(gotAddr, wantAddr) {
					t.Fatalf("sysAccept: %+v %#v, syscall.Accept: %#v", got, gotAddr, wantAddr)
				}
				return
			}
			// The client's port differs between the two connections.
			want.port = uint16(c2.LocalAddr().(*net.TCPAddr).Port)
			if gotAddr != nil || got != want {
				t.Fatalf("sysAccept: %+v %v, want %+v (syscall.Accept's, with the second client's port)", got, gotAddr, want)
			}
			if a := got.addr().String(); a != c2.LocalAddr().String() {
				t.Fatalf("RemoteAddr %s, the client's %s", a, c2.LocalAddr())
			}
		})
	}
	// A listener closed: the error syscall.Accept gives.
	var p peerAddr
	if _, _, err := sysAccept(-1, &p); err != syscall.EBADF {
		t.Fatalf("sysAccept(-1): %v, want EBADF", err)
	}
}

// TestCloseErrors: the errors of the close path made once (edit 18) have the
// text and the errors.Is answers that Exception gives them per call.
func TestCloseErrors(t *testing.T) {
	cases := []struct {
		err    error
		no     error
		suffix string
	}{
		{errEOF, ErrEOF, ""},
		{errPeerCloseEOF, ErrEOF, "peer close"},
		{errPeerCloseClosed, ErrConnClosed, "peer close"},
		{errSelfClose, ErrConnClosed, "self close"},
	}
	for _, tc := range cases {
		fresh := Exception(tc.no, tc.suffix)
		if tc.err.Error() != fresh.Error() {
			t.Fatalf("%q, Exception gives %q", tc.err.Error(), fresh.Error())
		}
		for _, target := range []error{ErrEOF, ErrConnClosed, ErrReadTimeout, ErrWriteTimeout, syscall.EPIPE} {
			if errors.Is(tc.err, target) != errors.Is(fresh, target) {
				t.Fatalf("errors.Is(%q, %v) = %v, not Exception's", tc.err, target, errors.Is(tc.err, target))
			}
		}
		if errors.Unwrap(tc.err) != tc.no {
			t.Fatalf("Unwrap(%q) = %v", tc.err, errors.Unwrap(tc.err))
		}
		var ne net.Error
		if !errors.As(tc.err, &ne) || ne.Timeout() {
			t.Fatalf("%q: not a net.Error, or a timeout", tc.err)
		}
	}
	if got := errEOF.Error(); got != "EOF" {
		t.Fatalf("ioread's EOF: %q", got)
	}
	if got := errPeerCloseEOF.Error(); got != "EOF peer close" {
		t.Fatalf("onHup's: %q", got)
	}
	if got := errSelfClose.Error(); got != "connection has been closed self close" {
		t.Fatalf("onClose's: %q", got)
	}
}

// TestRemoteAddrPort: RemoteAddrPort (edit 19) is RemoteAddr as a
// netip.AddrPort, for an accepted connection (IPv4, IPv6: without
// allocating; a scoped IPv6 address with its zone) and a dialed one.
func TestRemoteAddrPort(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		s := newIdleServer(t, "tcp", addr)
		client, err := net.Dial("tcp", s.ln.Addr().String())
		MustNil(t, err)
		defer client.Close()
		c := s.accepted(t)
		want := c.RemoteAddr().(*net.TCPAddr).AddrPort()
		if got := c.RemoteAddrPort(); got != want || got.String() != client.LocalAddr().String() {
			t.Fatalf("%s: RemoteAddrPort %v, RemoteAddr's %v, the client's %v", addr, got, want, client.LocalAddr())
		}
		if n := testing.AllocsPerRun(100, func() { _ = c.RemoteAddrPort() }); n != 0 {
			t.Fatalf("%s: RemoteAddrPort allocates %v times", addr, n)
		}
		dc, err := DialConnection("tcp", s.ln.Addr().String(), time.Second)
		MustNil(t, err)
		if got, want := dc.(*TCPConnection).RemoteAddrPort(), dc.RemoteAddr().(*net.TCPAddr).AddrPort(); got != want {
			t.Fatalf("%s: dialed: RemoteAddrPort %v, RemoteAddr's %v", addr, got, want)
		}
		dc.Close()
	}
	if lo, err := net.InterfaceByName("lo"); err == nil {
		var p peerAddr
		p.set(&syscall.SockaddrInet6{Port: 4242, ZoneId: uint32(lo.Index), Addr: [16]byte{0xfe, 0x80, 15: 1}})
		if got, want := p.addrPort(), p.addr().(*net.TCPAddr).AddrPort(); got != want || got.Addr().Zone() != "lo" {
			t.Fatalf("scoped: %v, want %v", got, want)
		}
	}
	var none netFD
	if got := none.RemoteAddrPort(); got.IsValid() {
		t.Fatalf("no address: %v", got)
	}
}
