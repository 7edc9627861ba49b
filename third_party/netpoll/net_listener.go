// Copyright 2022 CloudWeGo Authors
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
	"errors"
	"net"
	"os"
	"sync"
	"syscall"
)

// CreateListener return a new Listener.
func CreateListener(network, addr string) (l Listener, err error) {
	if network == "udp" {
		// TODO: udp listener.
		return udpListener(network, addr)
	}
	// tcp, tcp4, tcp6, unix
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, err
	}
	return ConvertListener(ln)
}

// ConvertListener converts net.Listener to Listener
func ConvertListener(l net.Listener) (nl Listener, err error) {
	if tmp, ok := l.(Listener); ok {
		return tmp, nil
	}
	ln := &listener{}
	ln.ln = l
	ln.addr = l.Addr()
	err = ln.parseFD()
	if err != nil {
		return nil, err
	}
	return ln, syscall.SetNonblock(ln.fd, true)
}

// TODO: udpListener does not work now.
func udpListener(network, addr string) (l Listener, err error) {
	ln := &listener{}
	ln.pconn, err = net.ListenPacket(network, addr)
	if err != nil {
		return nil, err
	}
	ln.addr = ln.pconn.LocalAddr()
	switch pconn := ln.pconn.(type) {
	case *net.UDPConn:
		ln.file, err = pconn.File()
	}
	if err != nil {
		return nil, err
	}
	ln.fd = int(ln.file.Fd())
	return ln, syscall.SetNonblock(ln.fd, true)
}

var _ net.Listener = &listener{}

type listener struct {
	fd    int
	addr  net.Addr       // listener's local addr
	ln    net.Listener   // tcp|unix listener
	pconn net.PacketConn // udp listener
	file  *os.File

	// fd is a number the kernel gives to the next descriptor opened once the
	// listener is closed. An Accept after Close (a loop that did not stop in
	// time) would accept on that descriptor: another listener's connection,
	// taken away from it. So Close waits for an Accept in progress (the socket
	// is non-blocking, accept does not wait), and every Accept after Close
	// fails with EBADF, as accept on the closed descriptor would have.
	mu     sync.RWMutex
	closed bool
}

// Accept implements Listener.
func (ln *listener) Accept() (net.Conn, error) {
	// udp
	if ln.pconn != nil {
		return ln.UDPAccept()
	}
	// tcp
	var nfd netFD
	ok, err := ln.accept(&nfd)
	if !ok {
		return nil, err
	}
	p := new(netFD)
	*p = nfd
	return p, nil
}

// accept accepts a TCP or Unix connection into nfd; ok is false, and err nil,
// if there was none to accept. The server's poller accepts through it into
// the new connection's netFD (server.OnRead), with nothing allocated for an
// IP peer on Linux (sysAccept).
func (ln *listener) accept(nfd *netFD) (ok bool, err error) {
	ln.mu.RLock()
	if ln.closed {
		ln.mu.RUnlock()
		return false, syscall.EBADF
	}
	fd, remote, err := sysAccept(ln.fd, &nfd.peer)
	ln.mu.RUnlock()
	if err != nil {
		/* https://man7.org/linux/man-pages/man2/accept.2.html
		EAGAIN or EWOULDBLOCK
		  The socket is marked nonblocking and no connections are
		  present to be accepted.  POSIX.1-2001 and POSIX.1-2008
		  allow either error to be returned for this case, and do
		  not require these constants to have the same value, so a
		  portable application should check for both possibilities.
		*/
		if err == syscall.EAGAIN || err == syscall.EWOULDBLOCK {
			return false, nil
		}
		return false, err
	}
	nfd.fd = fd
	nfd.localAddr = ln.addr
	nfd.network = ln.addr.Network()
	nfd.remoteAddr = remote // nil for an IP peer: kept in nfd.peer, made into a net.Addr when asked for
	return true, nil
}

// TODO: UDPAccept Not implemented.
func (ln *listener) UDPAccept() (net.Conn, error) {
	return nil, Exception(ErrUnsupported, "UDP")
}

// Close implements Listener.
func (ln *listener) Close() error {
	ln.mu.Lock()
	ln.closed = true
	ln.mu.Unlock()
	// ln.fd is ln.file's descriptor (parseFD, udpListener), so ln.file.Close
	// closes it, once however often Close is called. It used to be closed here
	// with syscall.Close as well: twice per Close, and again on every further
	// Close, each time closing whatever had been opened under that number in
	// the meantime (a dial's socket, an accepted connection).
	if ln.file != nil {
		ln.file.Close()
	}
	if ln.ln != nil {
		ln.ln.Close()
	}
	if ln.pconn != nil {
		ln.pconn.Close()
	}
	return nil
}

// Addr implements Listener.
func (ln *listener) Addr() net.Addr {
	return ln.addr
}

// Fd implements Listener.
func (ln *listener) Fd() (fd int) {
	return ln.fd
}

func (ln *listener) parseFD() (err error) {
	switch netln := ln.ln.(type) {
	case *net.TCPListener:
		ln.file, err = netln.File()
	case *net.UnixListener:
		ln.file, err = netln.File()
	default:
		return errors.New("listener type can't support")
	}
	if err != nil {
		return err
	}
	ln.fd = int(ln.file.Fd())
	return nil
}
