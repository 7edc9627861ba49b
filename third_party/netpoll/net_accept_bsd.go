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

//go:build darwin || netbsd || freebsd || openbsd || dragonfly
// +build darwin netbsd freebsd openbsd dragonfly

package netpoll

import (
	"net"
	"syscall"
)

// sysAccept accepts a connection on the listening socket fd with
// syscall.Accept and keeps an IPv4 or IPv6 peer's address in peer; it
// returns any other peer address as the net.Addr that sockaddrToAddr makes
// of it. (On Linux it reads the address without allocating.)
func sysAccept(fd int, peer *peerAddr) (nfd int, remote net.Addr, err error) {
	nfd, sa, err := syscall.Accept(fd)
	if err != nil {
		return nfd, nil, err
	}
	if !peer.set(sa) {
		remote = sockaddrToAddr(sa)
	}
	return nfd, remote, nil
}
