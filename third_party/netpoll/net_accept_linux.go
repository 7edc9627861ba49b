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
	"net"
	"syscall"
	"unsafe"
)

// sysAccept accepts a connection on the listening socket fd, as
// syscall.Accept does (accept4 with no flags), and keeps an IPv4 or IPv6
// peer's address in peer; it returns any other peer address (a Unix
// socket's) as the net.Addr that sockaddrToAddr makes of it. The address is
// read from a sockaddr on the stack: unlike syscall.Accept, nothing is
// allocated for an IP peer.
func sysAccept(fd int, peer *peerAddr) (nfd int, remote net.Addr, err error) {
	var rsa syscall.RawSockaddrAny
	n := uint32(syscall.SizeofSockaddrAny)
	r, _, e := syscall.Syscall6(syscall.SYS_ACCEPT4, uintptr(fd),
		uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)), 0, 0, 0)
	if e != 0 {
		return -1, nil, e
	}
	nfd = int(r)
	switch rsa.Addr.Family {
	case syscall.AF_INET:
		pp := (*syscall.RawSockaddrInet4)(unsafe.Pointer(&rsa))
		copy(peer.ip[:], pp.Addr[:])
		p := (*[2]byte)(unsafe.Pointer(&pp.Port))
		peer.port, peer.family = uint16(p[0])<<8|uint16(p[1]), 4
		return nfd, nil, nil
	case syscall.AF_INET6:
		pp := (*syscall.RawSockaddrInet6)(unsafe.Pointer(&rsa))
		peer.ip, peer.zone = pp.Addr, pp.Scope_id
		p := (*[2]byte)(unsafe.Pointer(&pp.Port))
		peer.port, peer.family = uint16(p[0])<<8|uint16(p[1]), 6
		return nfd, nil, nil
	case syscall.AF_UNIX:
		// As syscall's anyToSockaddr reads it: a leading NUL (an abstract
		// or unnamed socket) becomes '@', the name ends at the first NUL.
		pp := (*syscall.RawSockaddrUnix)(unsafe.Pointer(&rsa))
		if pp.Path[0] == 0 {
			pp.Path[0] = '@'
		}
		l := 0
		for l < len(pp.Path) && pp.Path[l] != 0 {
			l++
		}
		name := make([]byte, l)
		for i := range name {
			name[i] = byte(pp.Path[i])
		}
		return nfd, &net.UnixAddr{Net: "unix", Name: string(name)}, nil
	}
	// syscall.Accept fails the same way for an address it cannot read.
	syscall.Close(nfd)
	return -1, nil, syscall.EAFNOSUPPORT
}
