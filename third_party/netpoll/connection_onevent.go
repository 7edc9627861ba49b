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
	"context"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cloudwego/netpoll/internal/runner"
)

// ------------------------------------ implement OnPrepare, OnRequest, CloseCallback ------------------------------------

type gracefulExit interface {
	isIdle() (yes bool)
	Close() (err error)
}

// onEvent is the collection of event processing.
// OnPrepare, OnRequest, CloseCallback share the lock processing,
// which is a CAS lock and can only be cleared by OnRequest.
type onEvent struct {
	ctx context.Context
	// The OnConnect, OnDisconnect and OnRequest callbacks, each a func value
	// held in an unsafe.Pointer (storeFunc, loadOnConnect...): a word each,
	// read and written atomically, where an atomic.Value took two.
	onConnectCallback    unsafe.Pointer
	onDisconnectCallback unsafe.Pointer
	onRequestCallback    unsafe.Pointer
	// closeFirst is the first callback added (AddCloseCallback), held
	// without a node: most connections have one at most. It is a CloseCallback
	// stored through an unsafe.Pointer (see loadCloseFirst), so that it can
	// be read atomically in a word. closeCallbacks holds those added after
	// it, the latest first.
	closeFirst     unsafe.Pointer
	closeCallbacks unsafe.Pointer // *callbackNode
	// srv is the *server that accepted the connection, nil for a dialed one:
	// the close path takes the connection out of its table (server.remove).
	srv unsafe.Pointer
}

type callbackNode struct {
	fn  CloseCallback
	pre *callbackNode
}

// SetOnConnect set the OnConnect callback.
func (c *connection) SetOnConnect(onConnect OnConnect) error {
	if onConnect != nil {
		storeFunc(&c.onConnectCallback, unsafe.Pointer(&onConnect))
	}
	return nil
}

// SetOnDisconnect set the OnDisconnect callback.
func (c *connection) SetOnDisconnect(onDisconnect OnDisconnect) error {
	if onDisconnect != nil {
		storeFunc(&c.onDisconnectCallback, unsafe.Pointer(&onDisconnect))
	}
	return nil
}

// SetOnRequest initialize ctx when setting OnRequest.
func (c *connection) SetOnRequest(onRequest OnRequest) error {
	if onRequest == nil {
		return nil
	}
	storeFunc(&c.onRequestCallback, unsafe.Pointer(&onRequest))
	// fix: trigger OnRequest if there is already input data.
	if c.Len() > 0 {
		c.onRequest()
	}
	return nil
}

// AddCloseCallback adds a CloseCallback to this connection.
func (c *connection) AddCloseCallback(callback CloseCallback) error {
	if callback == nil {
		return nil
	}
	if atomic.LoadPointer(&c.closeFirst) == nil {
		storeFunc(&c.closeFirst, unsafe.Pointer(&callback))
		return nil
	}
	cb := &callbackNode{}
	cb.fn = callback
	cb.pre = (*callbackNode)(atomic.LoadPointer(&c.closeCallbacks))
	atomic.StorePointer(&c.closeCallbacks, unsafe.Pointer(cb))
	return nil
}

// storeFunc stores the func value that fn points to (a *OnConnect,
// *OnDisconnect, *OnRequest or *CloseCallback) in *p. A func value is one
// pointer, which the collector follows in an unsafe.Pointer as anywhere else.
func storeFunc(p *unsafe.Pointer, fn unsafe.Pointer) {
	atomic.StorePointer(p, *(*unsafe.Pointer)(fn))
}

func (c *connection) loadOnConnect() (fn OnConnect) {
	*(*unsafe.Pointer)(unsafe.Pointer(&fn)) = atomic.LoadPointer(&c.onConnectCallback)
	return fn
}

func (c *connection) loadOnDisconnect() (fn OnDisconnect) {
	*(*unsafe.Pointer)(unsafe.Pointer(&fn)) = atomic.LoadPointer(&c.onDisconnectCallback)
	return fn
}

func (c *connection) loadOnRequest() (fn OnRequest) {
	*(*unsafe.Pointer)(unsafe.Pointer(&fn)) = atomic.LoadPointer(&c.onRequestCallback)
	return fn
}

// loadCloseFirst returns the first close callback added, nil if none was.
func (c *connection) loadCloseFirst() (fn CloseCallback) {
	*(*unsafe.Pointer)(unsafe.Pointer(&fn)) = atomic.LoadPointer(&c.closeFirst)
	return fn
}

// onPrepare supports close connection, but not read/write data.
// connection will be registered by this call after preparing.
func (c *connection) onPrepare(opts *options) (err error) {
	if opts != nil {
		c.SetOnConnect(opts.onConnect)
		c.SetOnDisconnect(opts.onDisconnect)
		c.SetOnRequest(opts.onRequest)
		c.SetReadTimeout(opts.readTimeout)
		c.SetWriteTimeout(opts.writeTimeout)
		c.SetIdleTimeout(opts.idleTimeout)

		// calling prepare first and then register.
		if opts.onPrepare != nil {
			return c.prepare(opts.onPrepare)
		}
	}

	if c.ctx == nil {
		c.ctx = context.Background()
	}
	// prepare may close the connection.
	if c.IsActive() {
		return c.register()
	}
	return nil
}

// prepare runs onPrepare, then registers the connection with its poller,
// both with the processing lock held, as OnRequest runs. A Close meanwhile,
// by onPrepare, by a goroutine it handed the connection to, or by a failed
// register, finds the lock taken and leaves the close path to its holder:
// the close callbacks (those added in onPrepare too) and the server's
// OnClose run here, with the context onPrepare returned, and the
// descriptor is detached only if it was registered. Nothing else has the
// connection before onPrepare, so the lock is free.
func (c *connection) prepare(onPrepare OnPrepare) (err error) {
	c.lock(processing)
	c.ctx = onPrepare(c)
	if c.ctx == nil {
		c.ctx = context.Background()
	}
	if testHookPrepared != nil {
		testHookPrepared(c)
	}
	registered := false
	if c.status(closing) == none {
		err = c.register() // on failure it closes the connection
		registered = err == nil
	}
	if c.status(closing) != none {
		c.closeCallback(false, registered)
		return err
	}
	c.unlock(processing)
	if c.status(closing) != none {
		// A Close between the check and the unlock failed to take the
		// lock and left the close path to its holder; one after the unlock
		// runs it itself. Whichever takes the lock runs it.
		if c.lock(processing) {
			return c.closeCallback(false, true)
		}
		return nil
	}
	// Input the poller read while the lock was held found it taken and
	// started no OnRequest (onProcess); start one now. Input read after
	// the unlock starts its own.
	if c.Len() > 0 {
		c.onRequest()
	}
	return nil
}

// testHookPrepared, when set (by tests only), runs in prepare once
// OnPrepare has returned, before the connection is registered: a Close
// from it lands where a Close from another goroutine may.
var testHookPrepared func(c *connection)

// onConnect is responsible for executing onRequest if there is new data coming after onConnect callback finished.
func (c *connection) onConnect() {
	onConnect := c.loadOnConnect()
	if onConnect == nil {
		c.changeState(connStateNone, connStateConnected)
		return
	}
	if !c.lock(connecting) {
		// it never happens because onDisconnect will not lock connecting if c.connected == 0
		return
	}
	onRequest := c.loadOnRequest()
	c.onProcess(onConnect, onRequest)
}

// when onDisconnect called, c.IsActive() must return false
func (c *connection) onDisconnect() {
	onDisconnect := c.loadOnDisconnect()
	if onDisconnect == nil {
		return
	}
	onConnect := c.loadOnConnect()
	if onConnect == nil {
		// no need lock if onConnect is nil
		// it's ok to force set state to disconnected since onConnect is nil
		c.setState(connStateDisconnected)
		onDisconnect(c.ctx, c)
		return
	}
	// check if OnConnect finished when onConnect != nil && onDisconnect != nil
	if c.getState() != connStateNone && c.lock(connecting) { // means OnConnect already finished
		// protect onDisconnect run once
		// if CAS return false, means OnConnect already helps to run onDisconnect
		if c.changeState(connStateConnected, connStateDisconnected) {
			onDisconnect(c.ctx, c)
		}
		c.unlock(connecting)
		return
	}
	// OnConnect is not finished yet, return and let onConnect helps to call onDisconnect
}

// onRequest is responsible for executing the closeCallbacks after the connection has been closed.
func (c *connection) onRequest() (needTrigger bool) {
	onRequest := c.loadOnRequest()
	if onRequest == nil {
		return true
	}
	// wait onConnect finished first
	if c.getState() == connStateNone && c.loadOnConnect() != nil {
		// let onConnect to call onRequest
		return
	}
	processed := c.onProcess(nil, onRequest)
	// if not processed, should trigger read
	return !processed
}

// onProcess is responsible for executing the onConnect/onRequest function serially,
// and make sure the connection has been closed correctly if user call c.Close() in onConnect/onRequest function.
func (c *connection) onProcess(onConnect OnConnect, onRequest OnRequest) (processed bool) {
	// task already exists
	if !c.lock(processing) {
		return false
	}

	// add new task: a pooled processTask, whose run is made once per
	// processTask, so that handing the task over allocates nothing
	t := processTasks.Get().(*processTask)
	t.c, t.onConnect, t.onRequest = c, onConnect, onRequest
	runner.RunTask(c.ctx, t.run)
	return true
}

// processTask is the task onProcess hands to the runner: the connection and
// the callbacks to run, and run, the method value t.process made once when
// the processTask is created, in place of a closure made per onProcess call.
type processTask struct {
	c         *connection
	onConnect OnConnect
	onRequest OnRequest
	run       func()
}

// processTasks holds the idle processTasks; its New is set by init (it
// refers back to onProcess through process).
var processTasks sync.Pool

func init() {
	processTasks.New = func() interface{} {
		t := new(processTask)
		t.run = t.process
		return t
	}
}

// process takes the connection and callbacks out of t, puts t back in
// processTasks (the runner calls run once, and nothing here reads t again,
// so another onProcess may use t while this one runs) and processes the
// connection.
func (t *processTask) process() {
	c, onConnect, onRequest := t.c, t.onConnect, t.onRequest
	t.c, t.onConnect, t.onRequest = nil, nil, nil
	processTasks.Put(t)
	c.process(onConnect, onRequest)
}

// process is onProcess's task: onConnect first, then onRequest while there is
// input, with the processing lock held (onProcess took it).
func (c *connection) process(onConnect OnConnect, onRequest OnRequest) {
	panicked := true
	defer func() {
		if !panicked {
			return
		}
		// cannot use recover() here, since we don't want to break the panic stack
		c.unlock(processing)
		if c.IsActive() {
			c.Close()
		} else {
			c.closeCallback(false, false)
		}
	}()
	// trigger onConnect first
	if onConnect != nil && c.changeState(connStateNone, connStateConnected) {
		c.ctx = onConnect(c.ctx, c)
		if !c.IsActive() && c.changeState(connStateConnected, connStateDisconnected) {
			// since we hold connecting lock, so we should help to call onDisconnect here
			onDisconnect := c.loadOnDisconnect()
			if onDisconnect != nil {
				onDisconnect(c.ctx, c)
			}
		}
		c.unlock(connecting)
	}
START:
	// The `onRequest` must be executed at least once if conn have any readable data,
	// which is in order to cover the `send & close by peer` case.
	if onRequest != nil && c.Reader().Len() > 0 {
		_ = onRequest(c.ctx, c)
	}
	// The processing loop must ensure that the connection meets `IsActive`.
	// `onRequest` must either eventually read all the input data or actively Close the connection,
	// otherwise the goroutine will fall into a dead loop.
	var closedBy who
	for {
		closedBy = c.status(closing)
		// close by user or not processable
		if closedBy == user || onRequest == nil || c.Reader().Len() == 0 {
			break
		}
		_ = onRequest(c.ctx, c)
	}
	// handling callback if connection has been closed.
	if closedBy != none {
		//  if closed by user when processing, it "may" needs detach
		needDetach := closedBy == user
		// Here is a conor case that operator will be detached twice:
		//   If server closed the connection(client OnHup will detach op first and closeBy=poller),
		//   and then client's OnRequest function also closed the connection(closeBy=user).
		// But operator already prevent that detach twice will not cause any problem
		c.closeCallback(false, needDetach)
		panicked = false
		return
	}
	c.unlock(processing)
	// Note: Poller's closeCallback call will try to get processing lock failed but here already neer to unlock processing.
	//       So here we need to check connection state again, to avoid connection leak
	// double check close state
	if c.status(closing) != 0 && c.lock(processing) {
		// poller will get the processing lock failed, here help poller do closeCallback
		// fd must already detach by poller
		c.closeCallback(false, false)
		panicked = false
		return
	}
	// double check is processable
	if onRequest != nil && c.Reader().Len() > 0 && c.lock(processing) {
		goto START
	}
	// task exits
	panicked = false
}

// closeCallback .
// It can be confirmed that closeCallback and onRequest will not be executed concurrently.
// If onRequest is still running, it will trigger closeCallback on exit.
func (c *connection) closeCallback(needLock, needDetach bool) (err error) {
	if needLock && !c.lock(processing) {
		return nil
	}
	if needDetach && c.operator.poll != nil { // If Close is called during OnPrepare, poll is not registered.
		// PollDetach only happen when user call conn.Close() or poller detect error
		if err := c.operator.Control(PollDetach); err != nil {
			logger.Printf("NETPOLL: closeCallback[%v,%v] detach operator failed: %v", needLock, needDetach, err)
		}
	}
	// In the order of the close callbacks they replace (one closure and node
	// each, before): the server's table first, then the callbacks added with
	// AddCloseCallback, the latest first, then the server's OnClose (where a
	// callback added first in OnPrepare ran), then the finalizer.
	srv := (*server)(atomic.LoadPointer(&c.srv))
	if srv != nil {
		srv.remove(c)
	}
	for callback := (*callbackNode)(atomic.LoadPointer(&c.closeCallbacks)); callback != nil; callback = callback.pre {
		callback.fn(c)
	}
	if first := c.loadCloseFirst(); first != nil {
		first(c)
	}
	// The server's options are set before it accepts and never change; c.ctx
	// was last written under the processing lock, which this path holds.
	if srv != nil && srv.opts != nil && srv.opts.onClose != nil {
		srv.opts.onClose(c.ctx, c)
	}
	c.finalize()
	return nil
}

// register only use for connection register into poll.
func (c *connection) register() (err error) {
	err = c.operator.Control(PollReadable)
	if err != nil {
		logger.Printf("NETPOLL: connection register failed: %v", err)
		c.Close()
		return Exception(ErrConnClosed, err.Error())
	}
	return nil
}

// isIdle implements gracefulExit.
func (c *connection) isIdle() (yes bool) {
	return c.isUnlock(processing) &&
		c.Len() == 0 &&
		(c.output() == nil || c.output().IsEmpty())
}
