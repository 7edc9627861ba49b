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

package netpoll

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

func openPoll() (Poll, error) {
	return openDefaultPoll()
}

func openDefaultPoll() (*defaultPoll, error) {
	poll := new(defaultPoll)

	poll.buf = make([]byte, 8)
	p, err := EpollCreate(0)
	if err != nil {
		return nil, err
	}
	poll.fd = p

	r0, _, e0 := syscall.Syscall(syscall.SYS_EVENTFD2, 0, 0, 0)
	if e0 != 0 {
		_ = syscall.Close(poll.fd)
		return nil, e0
	}

	poll.Reset = poll.reset
	poll.Handler = poll.handler
	poll.wop = &FDOperator{FD: int(r0)}

	if err = poll.Control(poll.wop, PollReadable); err != nil {
		_ = syscall.Close(poll.wop.FD)
		_ = syscall.Close(poll.fd)
		return nil, err
	}

	poll.opcache = newOperatorCache()
	return poll, nil
}

type defaultPoll struct {
	pollArgs
	fd      int            // epoll fd
	wop     *FDOperator    // eventfd, wake epoll_wait
	buf     []byte         // read wfd trigger msg
	trigger uint32         // trigger flag
	m       sync.Map       //nolint:unused // only used in go:race
	opcache *operatorCache // operator cache
	// fns for handle events
	Reset   func(size, caps int)
	Handler func(events []epollevent) (closed bool)
}

type pollArgs struct {
	size   int
	caps   int
	events []epollevent
	// barrier is the I/O vector block of the event being handled. The handler
	// works through the events one after another, so one block serves them all,
	// whatever the size of the event array.
	barrier barrier
	hups    []hup
}

func (a *pollArgs) reset(size, caps int) {
	a.size = size
	a.events = make([]epollevent, size)
	if a.caps != caps || a.barrier.bs == nil {
		a.caps = caps
		a.barrier.bs = make([][]byte, caps)
		a.barrier.ivs = make([]syscall.Iovec, caps)
	}
}

// The event array starts at minEvents slots and doubles, up to maxEvents,
// whenever one wait fills it. After shrinkAfter waits in a row that used less
// than a quarter of it, it is halved again, so a burst of ready sockets does
// not leave a large array behind.
const (
	minEvents   = 128
	maxEvents   = 128 * 1024
	shrinkAfter = 64
)

// Wait implements Poll.
func (p *defaultPoll) Wait() (err error) {
	// init
	caps, msec, n, small := barriercap, -1, 0, 0
	p.Reset(minEvents, caps)
	// wait
	for {
		switch {
		case n == p.size && p.size < maxEvents:
			p.Reset(p.size<<1, caps)
			small = 0
		case p.size > minEvents && n < p.size/4:
			if small++; small >= shrinkAfter {
				p.Reset(p.size>>1, caps)
				small = 0
			}
		default:
			small = 0
		}
		n, err = EpollWait(p.fd, p.events, msec)
		if err != nil && err != syscall.EINTR {
			return err
		}
		if n <= 0 {
			msec = -1
			runtime.Gosched()
			continue
		}
		msec = 0
		if p.Handler(p.events[:n]) {
			return nil
		}
		// we can make sure that there is no op remaining if Handler finished
		p.opcache.free()
	}
}

func (p *defaultPoll) handler(events []epollevent) (closed bool) {
	var triggerRead, triggerWrite, triggerHup, triggerError bool
	var err error
	for i := range events {
		operator := p.getOperator(0, unsafe.Pointer(&events[i].data))
		if operator == nil || !operator.do() {
			continue
		}

		var totalRead int
		evt := events[i].events
		triggerRead = evt&syscall.EPOLLIN != 0
		triggerWrite = evt&syscall.EPOLLOUT != 0
		triggerHup = evt&(syscall.EPOLLHUP|syscall.EPOLLRDHUP) != 0
		triggerError = evt&syscall.EPOLLERR != 0

		// trigger or exit gracefully
		if operator.FD == p.wop.FD {
			// must clean trigger first
			syscall.Read(p.wop.FD, p.buf)
			atomic.StoreUint32(&p.trigger, 0)
			// if closed & exit
			if p.buf[0] > 0 {
				syscall.Close(p.wop.FD)
				syscall.Close(p.fd)
				operator.done()
				return true
			}
			operator.done()
			continue
		}

		if (triggerRead || triggerHup) && operator.readPaused() {
			// Fetched before PollPauseRead changed the registration: read
			// nothing, and leave a half close (EPOLLRDHUP) to the resume,
			// which reports it again (level-triggered). A hang-up still
			// closes.
			triggerRead = false
			triggerHup = evt&syscall.EPOLLHUP != 0
		}
		if triggerRead {
			if operator.OnRead != nil {
				// for non-connection
				operator.OnRead(p)
			} else if operator.hasInputs() {
				// for connection
				bs := operator.inputs(p.barrier.bs)
				if len(bs) > 0 {
					n, err := ioread(operator.FD, bs, p.barrier.ivs)
					operator.inputAck(n)
					totalRead += n
					if err != nil {
						p.appendHup(operator)
						continue
					}
				}
			} else {
				logger.Printf("NETPOLL: operator has critical problem! event=%d operator=%v", evt, operator)
			}
		}
		if triggerHup {
			if triggerRead && operator.hasInputs() {
				// read all left data if peer send and close
				var leftRead int
				// read all left data if peer send and close
				if leftRead, err = readall(operator, p.barrier); err != nil && !errors.Is(err, ErrEOF) {
					logger.Printf("NETPOLL: readall(fd=%d)=%d before close: %s", operator.FD, total, err.Error())
				}
				totalRead += leftRead
			}
			// only close connection if no further read bytes
			if totalRead == 0 {
				p.appendHup(operator)
				continue
			}
		}
		if triggerError {
			// Under block-zerocopy, the kernel may give an error callback, which is not a real error, just an EAGAIN.
			// So here we need to check this error, if it is EAGAIN then do nothing, otherwise still mark as hup.
			if _, _, _, _, err := syscall.Recvmsg(operator.FD, nil, nil, syscall.MSG_ERRQUEUE); err != syscall.EAGAIN {
				p.appendHup(operator)
			} else {
				operator.done()
			}
			continue
		}
		if triggerWrite {
			if operator.OnWrite != nil {
				// for non-connection
				operator.OnWrite(p)
			} else if operator.hasOutputs() {
				// for connection
				bs, _ := operator.outputs(p.barrier.bs)
				if len(bs) > 0 {
					n, err := iosend(operator.FD, bs, p.barrier.ivs, false)
					operator.outputAck(n)
					if err != nil {
						p.appendHup(operator)
						continue
					}
				}
			} else {
				logger.Printf("NETPOLL: operator has critical problem! event=%d operator=%v", evt, operator)
			}
		}
		operator.done()
	}
	// hup conns together to avoid blocking the poll.
	p.onhups()
	return false
}

// Close will write 10000000
func (p *defaultPoll) Close() error {
	_, err := syscall.Write(p.wop.FD, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	return err
}

// Trigger implements Poll.
func (p *defaultPoll) Trigger() error {
	if atomic.AddUint32(&p.trigger, 1) > 1 {
		return nil
	}
	// MAX(eventfd) = 0xfffffffffffffffe
	_, err := syscall.Write(p.wop.FD, []byte{0, 0, 0, 0, 0, 0, 0, 1})
	return err
}

// Control implements Poll.
func (p *defaultPoll) Control(operator *FDOperator, event PollEvent) error {
	// DON'T move `fd=operator.FD` behind inuse() call, we can only access operator before op.inuse() for avoid race
	// G1:              G2:
	// op.inuse()       op.unused()
	// op.FD  -- T1     op.FD = 0  -- T2
	// T1 and T2 may happen together
	fd := operator.FD
	switch event {
	case PollR2RW, PollRW2R, PollPauseRead, PollResumeRead:
		return p.modify(fd, operator, event)
	}
	var op int
	var evt epollevent
	p.setOperator(unsafe.Pointer(&evt.data), operator)
	switch event {
	case PollReadable: // server accept a new connection and wait read
		operator.inuse()
		op, evt.events = syscall.EPOLL_CTL_ADD, syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLERR
	case PollWritable: // client create a new connection and wait connect finished
		operator.inuse()
		op, evt.events = syscall.EPOLL_CTL_ADD, EPOLLET|syscall.EPOLLOUT|syscall.EPOLLRDHUP|syscall.EPOLLERR
	case PollDetach: // deregister
		p.delOperator(operator)
		op, evt.events = syscall.EPOLL_CTL_DEL, syscall.EPOLLIN|syscall.EPOLLOUT|syscall.EPOLLRDHUP|syscall.EPOLLERR
	}
	return EpollCtl(p.fd, op, fd, &evt)
}

// modify changes the registration of a registered connection (EPOLL_CTL_MOD):
// waiting for writable or not (PollR2RW, PollRW2R), reading or not
// (PollPauseRead, PollResumeRead). Each sets its own flag and keeps the other
// one, so the registration is
//
//	reading:           EPOLLIN|EPOLLRDHUP|EPOLLERR, plus EPOLLOUT while writing
//	paused:            EPOLLERR, plus EPOLLOUT while writing
//
// (EPOLLHUP is always reported). A paused registration has no EPOLLRDHUP: it
// is level-triggered, so a peer's half close would be reported again and again
// while nothing reads, and it comes after the data not yet read anyway.
func (p *defaultPoll) modify(fd int, operator *FDOperator, event PollEvent) error {
	var evt epollevent
	old := operator.lockMod()
	if !p.modOperator(unsafe.Pointer(&evt.data), operator) {
		operator.unlockMod(old)
		return syscall.ENOENT // race builds: detached (see modOperator)
	}
	flags := modFlags(old, event)
	evt.events = syscall.EPOLLERR
	if flags&modReadPaused == 0 {
		evt.events |= syscall.EPOLLIN | syscall.EPOLLRDHUP
	}
	if flags&modWrite != 0 {
		evt.events |= syscall.EPOLLOUT
	}
	operator.setMod(flags)
	err := EpollCtl(p.fd, syscall.EPOLL_CTL_MOD, fd, &evt)
	if err != nil {
		flags = old // the registration is unchanged (ENOENT: detached)
	}
	operator.unlockMod(flags)
	return err
}
