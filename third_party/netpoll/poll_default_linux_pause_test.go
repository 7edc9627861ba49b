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
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// epollMask returns the events that the epoll instance epfd has registered
// for fd, as /proc/self/fdinfo shows them, without EPOLLHUP (which epoll_ctl
// always adds).
func epollMask(t *testing.T, epfd, fd int) uint32 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/self/fdinfo/%d", epfd))
	MustNil(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		var tfd int
		var events uint32
		if n, _ := fmt.Sscanf(line, "tfd: %d events: %x", &tfd, &events); n == 2 && tfd == fd {
			return events &^ syscall.EPOLLHUP
		}
	}
	t.Fatalf("fd %d is not registered in epoll fd %d", fd, epfd)
	return 0
}

const (
	maskRead      = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLERR
	maskReadWrite = maskRead | syscall.EPOLLOUT
	maskPaused    = syscall.EPOLLERR
	maskPausedW   = maskPaused | syscall.EPOLLOUT
)

func newPausePoll(t *testing.T) (p *defaultPoll, op *FDOperator, peer int) {
	p, err := openDefaultPoll()
	MustNil(t, err)
	p.Reset(minEvents, barriercap)
	fd, peer := GetSysFdPairs()
	t.Cleanup(func() {
		syscall.Close(fd)
		syscall.Close(peer)
		syscall.Close(p.wop.FD)
		syscall.Close(p.fd)
	})
	op = p.Alloc()
	op.FD = fd
	MustNil(t, op.Control(PollReadable))
	return p, op, peer
}

// TestReadPauseRegistration: PollPauseRead/PollResumeRead and
// PollR2RW/PollRW2R each change their own part of the registration and keep
// the other's, in any order.
func TestReadPauseRegistration(t *testing.T) {
	p, op, _ := newPausePoll(t)
	steps := []struct {
		event PollEvent
		mask  uint32
	}{
		{PollPauseRead, maskPaused},
		{PollPauseRead, maskPaused},
		{PollR2RW, maskPausedW}, // a flush while paused does not resume reading
		{PollResumeRead, maskReadWrite},
		{PollPauseRead, maskPausedW}, // pausing keeps waiting for writable
		{PollRW2R, maskPaused},       // the end of a flush does not resume reading
		{PollResumeRead, maskRead},
		{PollResumeRead, maskRead},
		{PollR2RW, maskReadWrite},
		{PollRW2R, maskRead},
	}
	Equal(t, epollMask(t, p.fd, op.FD), uint32(maskRead))
	for i, s := range steps {
		MustNil(t, op.Control(s.event))
		if got := epollMask(t, p.fd, op.FD); got != s.mask {
			t.Fatalf("step %d (event %d): registered %#x, want %#x", i, s.event, got, s.mask)
		}
		Equal(t, op.readPaused(), s.mask&syscall.EPOLLIN == 0)
	}

	// Detached: ENOENT, and nothing changes.
	MustNil(t, op.Control(PollDetach))
	err := op.Control(PollPauseRead)
	Assert(t, errors.Is(err, syscall.ENOENT), err)
	Equal(t, op.readPaused(), false)
}

// TestReadPauseConcurrentChanges: a change of the registration waits for one
// under way, and changes from several goroutines at once leave the
// registration that the flags say.
func TestReadPauseConcurrentChanges(t *testing.T) {
	p, op, _ := newPausePoll(t)

	old := op.lockMod() // as a change under way does
	done := make(chan error, 1)
	go func() { done <- op.Control(PollPauseRead) }()
	select {
	case err := <-done:
		t.Fatalf("a change did not wait for the one under way (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	Equal(t, epollMask(t, p.fd, op.FD), uint32(maskRead))
	op.unlockMod(old)
	MustNil(t, <-done)
	Equal(t, epollMask(t, p.fd, op.FD), uint32(maskPaused))

	events := []PollEvent{PollPauseRead, PollResumeRead, PollR2RW, PollRW2R}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				if err := op.Control(events[(g+i*(g+1))%len(events)]); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	flags := atomic.LoadInt32(&op.mod)
	want := uint32(maskRead)
	switch {
	case flags&modReadPaused != 0 && flags&modWrite != 0:
		want = maskPausedW
	case flags&modReadPaused != 0:
		want = maskPaused
	case flags&modWrite != 0:
		want = maskReadWrite
	}
	Equal(t, flags&modLocked, int32(0))
	Equal(t, epollMask(t, p.fd, op.FD), want)
}

// TestReadPauseStaleEvent: events that epoll_wait returned before the pause
// (the poller may handle them after it) read nothing and leave a half close
// to the resume; a hang-up still closes. A paused registration reports
// neither new data nor the peer's half close; the resume reports both again.
func TestReadPauseStaleEvent(t *testing.T) {
	p, op, peer := newPausePoll(t)
	var inputs, hups int32
	hup := make(chan struct{})
	op.Inputs = func(vs [][]byte) [][]byte { atomic.AddInt32(&inputs, 1); return nil }
	op.InputAck = func(int) error { return nil }
	op.OnHup = func(Poll) error { atomic.AddInt32(&hups, 1); close(hup); return nil }

	_, err := syscall.Write(peer, []byte("hello"))
	MustNil(t, err)
	events := make([]epollevent, 8)
	n, err := EpollWait(p.fd, events, 0)
	MustNil(t, err)
	Equal(t, n, 1)
	Equal(t, events[0].events, uint32(syscall.EPOLLIN))

	MustNil(t, op.Control(PollPauseRead))
	p.handler(events[:1]) // fetched before the pause
	Equal(t, atomic.LoadInt32(&inputs), int32(0))
	n, err = EpollWait(p.fd, events[1:], 0)
	MustNil(t, err)
	Equal(t, n, 0) // the data is not reported while paused
	MustNil(t, syscall.Shutdown(peer, syscall.SHUT_WR))
	n, err = EpollWait(p.fd, events[1:], 0)
	MustNil(t, err)
	Equal(t, n, 0) // nor the half close

	MustNil(t, op.Control(PollResumeRead))
	n, err = EpollWait(p.fd, events, 0)
	MustNil(t, err)
	Equal(t, n, 1)
	Equal(t, events[0].events, uint32(syscall.EPOLLIN|syscall.EPOLLRDHUP))

	// The same event, handled after another pause: nothing read, no close.
	MustNil(t, op.Control(PollPauseRead))
	p.handler(events[:1])
	Equal(t, atomic.LoadInt32(&inputs), int32(0))
	time.Sleep(20 * time.Millisecond) // onhups runs OnHup in a goroutine
	Equal(t, atomic.LoadInt32(&hups), int32(0))
	Equal(t, atomic.LoadInt32(&op.detached), int32(0))

	// A hang-up closes a paused connection, still without reading.
	events[0].events |= syscall.EPOLLHUP
	p.handler(events[:1])
	select {
	case <-hup:
	case <-time.After(5 * time.Second):
		t.Fatal("OnHup was not called")
	}
	Equal(t, atomic.LoadInt32(&inputs), int32(0))
	Equal(t, atomic.LoadInt32(&op.detached), int32(1))
	err = op.Control(PollResumeRead)
	Assert(t, errors.Is(err, syscall.ENOENT), err)
}
