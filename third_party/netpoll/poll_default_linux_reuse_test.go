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
	"sync/atomic"
	"syscall"
	"testing"
)

// TestPollStaleEventOfReusedFD plays, step by step, the batch in which
// epoll_wait returned an event for a socket that is then detached and
// closed, and its descriptor reused by a dial that registers before the
// poller reaches the event. The event belongs to the old registration and
// must not reach the dial's operator (in race builds, where the event data
// is the descriptor, it did: the dial failed with "closed by peer").
func TestPollStaleEventOfReusedFD(t *testing.T) {
	p, err := openDefaultPoll()
	MustNil(t, err)
	defer syscall.Close(p.fd)
	defer syscall.Close(p.wop.FD)

	// The old socket: registered for reading, its peer closed.
	old, peer := GetSysFdPairs()
	oldop := p.Alloc()
	oldop.FD = old
	oldop.OnRead = func(Poll) error { return nil }
	oldop.OnHup = func(Poll) error { return nil }
	MustNil(t, oldop.Control(PollReadable))
	MustNil(t, syscall.Close(peer))
	events := make([]epollevent, 8)
	n, err := EpollWait(p.fd, events, 0)
	MustNil(t, err)
	Equal(t, n, 1)
	Assert(t, events[0].events&syscall.EPOLLRDHUP != 0, events[0].events)

	// Before the poller handles that event: detach and close the old socket,
	// and a new one on the same descriptor waits for its connect.
	MustNil(t, oldop.Control(PollDetach))
	MustNil(t, syscall.Close(old))
	a, b := GetSysFdPairs()
	defer syscall.Close(b)
	if a != old {
		MustNil(t, syscall.Dup3(a, old, syscall.O_CLOEXEC))
		MustNil(t, syscall.Close(a))
	}
	defer syscall.Close(old)
	var hups, writes int32
	newop := p.Alloc()
	newop.FD = old
	newop.OnWrite = func(Poll) error { atomic.AddInt32(&writes, 1); return nil }
	newop.OnHup = func(Poll) error { atomic.AddInt32(&hups, 1); return nil }
	MustNil(t, newop.Control(PollWritable))

	// The stale event leaves the new operator alone (a hup would detach it).
	p.handler(events[:n])
	Equal(t, atomic.LoadInt32(&newop.detached), int32(0))
	Equal(t, atomic.LoadInt32(&hups), int32(0))

	// The new registration's own event reaches it.
	n, err = EpollWait(p.fd, events, 0)
	MustNil(t, err)
	Equal(t, n, 1)
	p.handler(events[:n])
	Equal(t, atomic.LoadInt32(&writes), int32(1))
	Equal(t, atomic.LoadInt32(&hups), int32(0))
}
