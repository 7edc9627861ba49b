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

//go:build darwin || netbsd || freebsd || openbsd || dragonfly || linux
// +build darwin netbsd freebsd openbsd dragonfly linux

package netpoll

import (
	"net"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestListenerCloseLeavesReusedFD: once a listener is closed, its descriptor
// number may be given to anything opened after; closing the listener again
// (a deferred Close after an event loop's Shutdown closed it) must not close
// that.
func TestListenerCloseLeavesReusedFD(t *testing.T) {
	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	fd := ln.Fd()
	MustNil(t, ln.Close())

	r, w := GetSysFdPairs()
	defer syscall.Close(r)
	defer syscall.Close(w)
	if r != fd && w != fd {
		MustNil(t, unix.Dup2(r, fd))
		defer syscall.Close(fd)
	}
	MustNil(t, ln.Close())
	_, err = unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
	MustNil(t, err)
}

// TestListenerAcceptAfterClose: an Accept after Close (an accept loop that
// has not stopped yet) must fail, not accept on whatever listening socket
// now has the closed listener's number.
func TestListenerAcceptAfterClose(t *testing.T) {
	ln, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	fd := ln.Fd()
	MustNil(t, ln.Close())

	other, err := CreateListener("tcp", "127.0.0.1:0")
	MustNil(t, err)
	defer other.Close()
	if other.Fd() != fd {
		MustNil(t, unix.Dup2(other.Fd(), fd))
		defer syscall.Close(fd)
	}
	conn, err := DialConnection("tcp", other.Addr().String(), time.Second)
	MustNil(t, err)
	defer conn.Close()
	time.Sleep(10 * time.Millisecond) // the handshake completes in the kernel

	stolen, err := ln.Accept()
	Assert(t, stolen == nil && err != nil, stolen, err)
	var accepted net.Conn
	for i := 0; accepted == nil && i < 100; i++ {
		accepted, err = other.Accept()
		MustNil(t, err)
		time.Sleep(time.Millisecond)
	}
	Assert(t, accepted != nil)
	accepted.Close()
}
