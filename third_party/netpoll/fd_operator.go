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
	"runtime"
	"sync/atomic"
)

// FDOperator is a collection of operations on file descriptors.
type FDOperator struct {
	// FD is file descriptor, poll will bind when register.
	FD int

	// The FDOperator provides three operations of reading, writing, and hanging.
	// The poll actively fire the FDOperator when fd changes, no check the return value of FDOperator.
	OnRead  func(p Poll) error
	OnWrite func(p Poll) error
	OnHup   func(p Poll) error

	// The following is the required fn, which must exist when used, or directly panic.
	// Fns are only called by the poll when handles connection events.
	Inputs   func(vs [][]byte) (rs [][]byte)
	InputAck func(n int) (err error)

	// Outputs will locked if len(rs) > 0, which need unlocked by OutputAck.
	// supportZeroCopy is not implemented, and it will be ignored
	Outputs   func(vs [][]byte) (rs [][]byte, supportZeroCopy bool)
	OutputAck func(n int) (err error)

	// poll is the registered location of the file descriptor: a
	// *defaultPoll, the only Poll there is, held as such (one word, not an
	// interface's two; operatorPoll).
	poll operatorPoll

	// protect only detach once
	detached int32

	// mod holds the flags of the registration that Control changes with
	// PollR2RW/PollRW2R (modWrite) and PollPauseRead/PollResumeRead
	// (modReadPaused), and modLocked while such a change is under way; see
	// lockMod. (It fills padding: FDOperator keeps its size.)
	mod int32

	// conn, when set, receives the events of a connection (OnHup, Inputs,
	// InputAck, Outputs, OutputAck are then nil): a pointer instead of five
	// method values allocated per connection. See the dispatch methods below.
	conn *connection

	// private, used by operatorCache (its free list holds indexes, so no
	// next pointer is needed: FDOperator is 96 bytes)
	state int32 // CAS: 0(unused) 1(inuse) 2(do-done)
	index int32 // index in operatorCache
}

func (op *FDOperator) Control(event PollEvent) error {
	if event == PollDetach && atomic.AddInt32(&op.detached, 1) > 1 {
		return nil
	}
	return op.poll.Control(op, event)
}

func (op *FDOperator) Free() {
	op.poll.Free(op)
}

func (op *FDOperator) do() (can bool) {
	return atomic.CompareAndSwapInt32(&op.state, 1, 2)
}

func (op *FDOperator) done() {
	atomic.StoreInt32(&op.state, 1)
}

func (op *FDOperator) inuse() {
	for !atomic.CompareAndSwapInt32(&op.state, 0, 1) {
		if atomic.LoadInt32(&op.state) == 1 {
			return
		}
		runtime.Gosched()
	}
}

func (op *FDOperator) unused() {
	for !atomic.CompareAndSwapInt32(&op.state, 1, 0) {
		if atomic.LoadInt32(&op.state) == 0 {
			return
		}
		runtime.Gosched()
	}
}

func (op *FDOperator) isUnused() bool {
	return atomic.LoadInt32(&op.state) == 0
}

// Flags of FDOperator.mod. A change of the registration (Control with
// PollR2RW, PollRW2R, PollPauseRead or PollResumeRead) holds modLocked from
// reading the flags to the end of its system call, so the flags and the
// poller's registration change together: a flush's PollR2RW and a concurrent
// PollPauseRead cannot leave the registration of one with the flags of the
// other, and neither undoes the other.
const (
	modWrite      int32 = 1 << iota // waiting for writable (PollR2RW)
	modReadPaused                   // not reading (PollPauseRead)
	modLocked                       // a change is under way
)

// lockMod waits for any other change of the registration to finish and
// returns the flags. The holder publishes the flags it is applying with
// setMod and releases the lock with unlockMod.
func (op *FDOperator) lockMod() (flags int32) {
	for {
		flags = atomic.LoadInt32(&op.mod)
		if flags&modLocked == 0 && atomic.CompareAndSwapInt32(&op.mod, flags, flags|modLocked) {
			return flags
		}
		runtime.Gosched()
	}
}

// setMod publishes flags while the lock is held (before the system call
// that applies them, so the poller honours a pause from then on).
func (op *FDOperator) setMod(flags int32) {
	atomic.StoreInt32(&op.mod, flags|modLocked)
}

func (op *FDOperator) unlockMod(flags int32) {
	atomic.StoreInt32(&op.mod, flags)
}

// readPaused reports whether reading is paused (PollPauseRead): the poller
// then reads nothing, also on an event it fetched before the pause.
func (op *FDOperator) readPaused() bool {
	return atomic.LoadInt32(&op.mod)&modReadPaused != 0
}

// modFlags returns flags changed by one of PollR2RW, PollRW2R, PollPauseRead
// or PollResumeRead.
func modFlags(flags int32, event PollEvent) int32 {
	switch event {
	case PollR2RW:
		flags |= modWrite
	case PollRW2R:
		flags &^= modWrite
	case PollPauseRead:
		flags |= modReadPaused
	case PollResumeRead:
		flags &^= modReadPaused
	}
	return flags &^ modLocked
}

func (op *FDOperator) reset() {
	// Take the lock of the registration's changes: a change under way finishes
	// first, and every change made so far (a SetReadPaused in a goroutine that
	// nothing else orders with the close callbacks, say) reads FD and poll
	// before they are cleared here. Storing mod below releases it.
	op.lockMod()
	op.FD = 0
	op.OnRead, op.OnWrite, op.OnHup = nil, nil, nil
	op.Inputs, op.InputAck = nil, nil
	op.Outputs, op.OutputAck = nil, nil
	op.conn = nil
	op.poll = nil
	op.detached = 0
	atomic.StoreInt32(&op.mod, 0)
}
