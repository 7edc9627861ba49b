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

//go:build !windows
// +build !windows

package netpoll

import (
	"sync/atomic"
	"unsafe"
)

// ------------------------------------------ implement FDOperator ------------------------------------------

// onHup means close by poller.
func (c *connection) onHup(p Poll) error {
	if !c.closeBy(poller) {
		return nil
	}
	c.triggerRead(errPeerCloseEOF)
	c.triggerWrite(errPeerCloseClosed)

	// call Disconnect callback first
	c.onDisconnect()

	// It depends on closing by user if OnConnect and OnRequest is nil, otherwise it needs to be released actively.
	// It can be confirmed that the OnRequest goroutine has been exited before closeCallback executing,
	// and it is safe to close the buffer at this time.
	onConnect := c.loadOnConnect()
	onRequest := c.loadOnRequest()
	needCloseByUser := onConnect == nil && onRequest == nil
	if !needCloseByUser {
		// already PollDetach when call OnHup
		c.closeCallback(true, false)
	}
	return nil
}

// onClose means close by user.
func (c *connection) onClose() error {
	// user code close the connection
	if c.closeBy(user) {
		c.triggerRead(errSelfClose)
		c.triggerWrite(errSelfClose)
		// Detach from poller when processing finished, otherwise it will cause race
		c.closeCallback(true, true)
		return nil
	}

	// closed by poller
	// still need to change closing status to `user` since OnProcess should not be processed again
	c.force(closing, user)

	// user code should actively close the connection to recycle resources.
	// poller already detached operator
	return c.closeCallback(true, false)
}

// closeBuffer recycle input & output LinkBuffer.
func (c *connection) closeBuffer() {
	onConnect := c.loadOnConnect()
	onRequest := c.loadOnRequest()
	// if client close the connection, we cannot ensure that the poller is not process the buffer,
	// so we need to check the buffer length, and if it's an "unclean" close operation, let's give up to reuse the buffer
	// The buffer is taken out (compare-and-swap) before it is closed, so that
	// a Release that drops it at the same time does not also recycle it
	// (inputPool); a reader after this finds no buffer and creates an empty
	// one (reader).
	if in := c.input(); in != nil && (in.Len() == 0 || onConnect != nil || onRequest != nil) &&
		atomic.CompareAndSwapPointer(&c.inputBuffer, unsafe.Pointer(in), nil) {
		in.Close()
	}
	if out := c.output(); out == nil || out.Len() == 0 || onConnect != nil || onRequest != nil {
		if out != nil {
			out.Close()
		}
		if t := (*triggers)(atomic.LoadPointer(&c.triggers)); t != nil && t.outputBarrier != nil {
			barrierPool.Put(t.outputBarrier)
			t.outputBarrier = nil
		}
	}
}

// inputs implements FDOperator.
func (c *connection) inputs(vs [][]byte) (rs [][]byte) {
	in := c.input()
	if in == nil {
		// Nothing buffered since the last Release dropped the buffer (or
		// before the first read): a new one, with the node book would add.
		in = c.newInput(int(c.maxSize))
	}
	vs[0] = in.book(int(c.bookSize), int(c.maxSize))
	return vs[:1]
}

// inputAck implements FDOperator.
func (c *connection) inputAck(n int) (err error) {
	if n <= 0 {
		c.input().bookAck(0)
		return nil
	}

	// Auto size bookSize.
	if n == int(c.bookSize) && c.bookSize < mallocMax {
		c.bookSize <<= 1
	}

	length, _ := c.input().bookAck(n)
	if int(c.maxSize) < length {
		c.maxSize = clampInt32(length)
	}
	if c.maxSize > mallocMax {
		c.maxSize = mallocMax
	}

	needTrigger := true
	if length == n { // first start onRequest
		needTrigger = c.onRequest()
	}
	// A reader waits only once the triggers exist (waitRead): without them
	// triggerRead has nobody to wake.
	if t := (*triggers)(atomic.LoadPointer(&c.triggers)); needTrigger && t != nil && length >= int(atomic.LoadInt64(&t.waitReadSize)) {
		c.triggerRead(nil)
	}
	return nil
}

// outputs implements FDOperator.
func (c *connection) outputs(vs [][]byte) (rs [][]byte, _ bool) {
	out := c.output()
	if out == nil || out.IsEmpty() {
		c.rw2r()
		return rs, false
	}
	rs = out.GetBytes(vs)
	return rs, false
}

// outputAck implements FDOperator.
func (c *connection) outputAck(n int) (err error) {
	out := c.output()
	if n > 0 && out != nil {
		out.Skip(n)
		out.Release()
	}
	if out == nil || out.IsEmpty() {
		c.rw2r()
	}
	return nil
}

// rw2r removed the monitoring of write events.
func (c *connection) rw2r() {
	c.operator.Control(PollRW2R)
	c.triggerWrite(nil)
}
