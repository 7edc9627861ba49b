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
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

var _ Conn = &netFD{}

// Fd implements Conn.
func (c *netFD) Fd() (fd int) {
	return c.fd
}

// Read implements Conn.
func (c *netFD) Read(b []byte) (n int, err error) {
	n, err = syscall.Read(c.fd, b)
	if err != nil {
		if err == syscall.EAGAIN || err == syscall.EINTR {
			return 0, nil
		}
	}
	return n, err
}

// Write implements Conn.
func (c *netFD) Write(b []byte) (n int, err error) {
	n, err = syscall.Write(c.fd, b)
	if err != nil {
		if err == syscall.EAGAIN {
			return 0, nil
		}
	}
	return n, err
}

// Close will be executed only once.
func (c *netFD) Close() (err error) {
	if atomic.AddUint32(&c.closed, 1) != 1 {
		return nil
	}
	if !c.detaching && c.fd > 2 {
		err = syscall.Close(c.fd)
		if err != nil {
			logger.Printf("NETPOLL: netFD[%d] close error: %s", c.fd, err.Error())
		}
	}
	return err
}

// LocalAddr implements Conn.
func (c *netFD) LocalAddr() (addr net.Addr) {
	return c.localAddr
}

// RemoteAddr implements Conn. For a connection accepted by a listener it is
// a new *net.TCPAddr on every call, made from the address kept (peerAddr).
func (c *netFD) RemoteAddr() (addr net.Addr) {
	if c.remoteAddr == nil && c.peer.family != 0 {
		return c.peer.addr()
	}
	return c.remoteAddr
}

// RemoteAddrPort returns the peer's IP address and port. For a connection
// accepted by a listener of this package it is read from the address kept
// (peerAddr), with no allocation unless it is a scoped IPv6 address (whose
// zone is the interface's name, as in RemoteAddr); otherwise it is
// RemoteAddr's, if that is a *net.TCPAddr, else the zero netip.AddrPort.
// The IP is an IPv4 address for an IPv4 peer and an IPv6 one (possibly
// IPv4-mapped) for an IPv6 peer, as RemoteAddr's IP is 4 or 16 bytes.
func (c *netFD) RemoteAddrPort() netip.AddrPort {
	if c.remoteAddr == nil && c.peer.family != 0 {
		return c.peer.addrPort()
	}
	if a, ok := c.remoteAddr.(*net.TCPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// SetKeepAlive implements Conn.
// TODO: only tcp conn is ok.
func (c *netFD) SetKeepAlive(second int) error {
	if !strings.HasPrefix(c.network, "tcp") {
		return nil
	}
	if second > 0 {
		return SetKeepAlive(c.fd, second)
	}
	return nil
}

// SetDeadline implements Conn.
func (c *netFD) SetDeadline(t time.Time) error {
	return Exception(ErrUnsupported, "SetDeadline")
}

// SetReadDeadline implements Conn.
func (c *netFD) SetReadDeadline(t time.Time) error {
	return Exception(ErrUnsupported, "SetReadDeadline")
}

// SetWriteDeadline implements Conn.
func (c *netFD) SetWriteDeadline(t time.Time) error {
	return Exception(ErrUnsupported, "SetWriteDeadline")
}
