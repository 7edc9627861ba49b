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
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

type connState = int32

const (
	connStateNone         = 0
	connStateConnected    = 1
	connStateDisconnected = 2
)

// connection is the implement of Connection
type connection struct {
	netFD
	onEvent
	locker
	operator     *FDOperator
	timeouts     unsafe.Pointer // *timeouts, created by the first Set... that sets one; see loadTimeouts
	triggers     unsafe.Pointer // *triggers, created by the first wait; see waitTriggers
	inputBuffer  unsafe.Pointer // *LinkBuffer, nil while nothing is buffered; see input
	outputBuffer unsafe.Pointer // *LinkBuffer, created by the first write; see writer
	maxSize      int32          // The maximum size of data between two Release().
	bookSize     int32          // The size of data that can be read at once.
	state        connState      // Connection state should be changed sequentially.
}

var (
	_ Connection = &connection{}
	_ Reader     = &connection{}
	_ Writer     = &connection{}
)

// Reader implements Connection.
func (c *connection) Reader() Reader {
	return c
}

// Writer implements Connection.
func (c *connection) Writer() Writer {
	return c
}

// IsActive implements Connection.
func (c *connection) IsActive() bool {
	return c.isCloseBy(none)
}

// SetReadPaused stops (true) or resumes (false) reading the socket: while
// paused, the poller reads nothing from the connection's descriptor, so the
// input buffer does not grow, OnRequest runs only for data already buffered,
// and once the kernel's receive buffer is full TCP's flow control holds the
// peer's sends back. Resuming registers the descriptor for reading again; the
// registration is level-triggered, so data that arrived meanwhile is reported
// and read at once, in order. Writes (Flush, waiting for writable) are not
// affected, and calling it twice with the same value is harmless. OnRequest's
// contract is unchanged: netpoll calls it again as long as the input buffer is
// not empty, so while paused too it must consume (or copy out) what is
// buffered, or it is called in a loop until the resume.
//
// On linux the paused registration is EPOLLERR only (no EPOLLIN, no
// EPOLLRDHUP): a hang-up (EPOLLHUP: the peer reset the connection, or both
// directions are shut down) and errors still close the connection as usual,
// but a peer's half close (its FIN, behind the data not yet read) is noticed
// only after resuming, once that data has been read. On kqueue systems the read
// filter is disabled (EV_DISABLE), so neither a FIN nor a reset is noticed until
// resuming.
//
// Once SetReadPaused(true) has returned, the poller starts no new read of the
// descriptor, also for an event it fetched before; a read it had already
// started may still complete and hand its bytes to the input buffer.
//
// Concurrency: it may be called from any goroutine while the connection is
// open (OnRequest included), concurrently with the poller, Flush and other
// calls of it; concurrent calls are serialised, and the registration is that of
// the one that ran last. The caller must make sure that every call has
// returned before netpoll's finalizer runs: it frees the operator and closes
// the descriptor, whose number may then be reused by another connection, whose
// registration a late call would change. The callbacks added with
// AddCloseCallback run before it, so a caller that stops calling in one of them
// (ordered with its calls, e.g. by a lock) is safe; the finalizer synchronises
// with every call that has returned, from whatever goroutine. A call after the connection
// was detached from the poller (closed by either side, so in a close callback
// too) but before the descriptor is closed returns an error (syscall.ENOENT)
// and does nothing, as does a call before the connection is registered
// (OnPrepare).
//
// It is not part of the Connection interface; a user of the package reaches it
// through a type assertion:
//
//	p, ok := conn.(interface{ SetReadPaused(bool) error })
func (c *connection) SetReadPaused(paused bool) error {
	event := PollResumeRead
	if paused {
		event = PollPauseRead
	}
	return c.operator.Control(event)
}

// SetIdleTimeout implements Connection.
func (c *connection) SetIdleTimeout(timeout time.Duration) error {
	if timeout > 0 {
		return c.SetKeepAlive(int(timeout.Seconds()))
	}
	return nil
}

// SetReadTimeout implements Connection.
func (c *connection) SetReadTimeout(timeout time.Duration) error {
	if tm := c.setTimeouts(timeout > 0); tm != nil {
		if timeout >= 0 {
			tm.readTimeout = timeout
		}
		tm.readDeadline = 0
	}
	return nil
}

// SetWriteTimeout implements Connection.
func (c *connection) SetWriteTimeout(timeout time.Duration) error {
	if tm := c.setTimeouts(timeout > 0); tm != nil {
		if timeout >= 0 {
			tm.writeTimeout = timeout
		}
		tm.writeDeadline = 0
	}
	return nil
}

// SetDeadline implements net.Conn.SetDeadline
func (c *connection) SetDeadline(t time.Time) error {
	v := int64(0)
	if !t.IsZero() {
		v = t.UnixNano()
	}
	if tm := c.setTimeouts(v != 0); tm != nil {
		tm.readDeadline = v
		tm.writeDeadline = v
	}
	return nil
}

// SetReadDeadline implements net.Conn.SetReadDeadline
func (c *connection) SetReadDeadline(t time.Time) error {
	if tm := c.setTimeouts(!t.IsZero()); tm != nil {
		if t.IsZero() {
			tm.readDeadline = 0
		} else {
			tm.readDeadline = t.UnixNano()
		}
	}
	return nil
}

// SetWriteDeadline implements net.Conn.SetWriteDeadline
func (c *connection) SetWriteDeadline(t time.Time) error {
	if tm := c.setTimeouts(!t.IsZero()); tm != nil {
		if t.IsZero() {
			tm.writeDeadline = 0
		} else {
			tm.writeDeadline = t.UnixNano()
		}
	}
	return nil
}

// timeouts are a connection's read and write timeouts and deadlines. A
// connection has none (all zero) until one is set to something else than
// zero; most never do.
type timeouts struct {
	readTimeout   time.Duration
	readDeadline  int64 // UnixNano(). it overwrites readTimeout. 0 if not set.
	writeTimeout  time.Duration
	writeDeadline int64 // UnixNano(). it overwrites writeTimeout. 0 if not set.
}

// loadTimeouts returns the connection's timeouts, nil while none was set.
func (c *connection) loadTimeouts() *timeouts {
	return (*timeouts)(atomic.LoadPointer(&c.timeouts))
}

// setTimeouts returns the timeouts for a Set... call to change, creating them
// if create is set (the call sets something else than zero); nil if there
// are none and create is not set, in which case the call changes nothing:
// every timeout and deadline is already zero.
func (c *connection) setTimeouts(create bool) *timeouts {
	if tm := c.loadTimeouts(); tm != nil || !create {
		return tm
	}
	tm := &timeouts{}
	if atomic.CompareAndSwapPointer(&c.timeouts, nil, unsafe.Pointer(tm)) {
		return tm
	}
	return c.loadTimeouts()
}

// ------------------------------------------ implement zero-copy reader ------------------------------------------

// Next implements Connection.
func (c *connection) Next(n int) (p []byte, err error) {
	if err = c.waitRead(n); err != nil {
		return p, err
	}
	return c.reader().Next(n)
}

// Peek implements Connection.
func (c *connection) Peek(n int) (buf []byte, err error) {
	if err = c.waitRead(n); err != nil {
		return buf, err
	}
	return c.reader().Peek(n)
}

// Skip implements Connection.
func (c *connection) Skip(n int) (err error) {
	if err = c.waitRead(n); err != nil {
		return err
	}
	return c.reader().Skip(n)
}

// Release implements Connection.
func (c *connection) Release() (err error) {
	in := c.input()
	if in == nil {
		return nil
	}
	// Check inputBuffer length first to reduce contention in mux situation.
	// c.operator.do competes with c.inputs/c.inputAck
	if in.Len() == 0 && c.operator.do() {
		maxSize := in.calcMaxSize()
		// Set the maximum value of maxsize equal to mallocMax to prevent GC pressure.
		if maxSize > mallocMax {
			maxSize = mallocMax
		}

		if maxSize > int(c.maxSize) {
			c.maxSize = int32(maxSize) // at most mallocMax
		}
		// Double check length, then drop the whole input buffer: a connection
		// with nothing buffered holds no input memory while idle, and the
		// poller's next read creates one with a node of c.maxSize (inputs).
		// The poller is not booking now (do), and only it creates the buffer
		// besides this goroutine.
		// The buffer goes back to inputPool unless closeBuffer has just
		// taken it (compare-and-swap: only one of them recycles it).
		if in.Len() == 0 {
			dropped := atomic.CompareAndSwapPointer(&c.inputBuffer, unsafe.Pointer(in), nil)
			c.operator.done()
			if dropped {
				freeInput(in)
			}
			return nil
		}
		c.operator.done()
	}
	return in.Release()
}

// Slice implements Connection.
func (c *connection) Slice(n int) (r Reader, err error) {
	if err = c.waitRead(n); err != nil {
		return nil, err
	}
	return c.reader().Slice(n)
}

// Len implements Connection.
func (c *connection) Len() (length int) {
	if in := c.input(); in != nil {
		return in.Len()
	}
	return 0
}

// Until implements Connection.
func (c *connection) Until(delim byte) (line []byte, err error) {
	var n, l int
	for {
		if err = c.waitRead(n + 1); err != nil {
			// return all the data in the buffer
			line, _ = c.reader().Next(c.Len())
			return
		}

		l = c.Len()
		i := c.reader().indexByte(delim, n)
		if i < 0 {
			n = l // skip all exists bytes
			continue
		}
		return c.Next(i + 1)
	}
}

// ReadString implements Connection.
func (c *connection) ReadString(n int) (s string, err error) {
	if err = c.waitRead(n); err != nil {
		return s, err
	}
	return c.reader().ReadString(n)
}

// ReadBinary implements Connection.
func (c *connection) ReadBinary(n int) (p []byte, err error) {
	if err = c.waitRead(n); err != nil {
		return p, err
	}
	return c.reader().ReadBinary(n)
}

// ReadByte implements Connection.
func (c *connection) ReadByte() (b byte, err error) {
	if err = c.waitRead(1); err != nil {
		return b, err
	}
	return c.reader().ReadByte()
}

// ------------------------------------------ implement zero-copy writer ------------------------------------------

// Malloc implements Connection.
func (c *connection) Malloc(n int) (buf []byte, err error) {
	return c.writer().Malloc(n)
}

// MallocLen implements Connection.
func (c *connection) MallocLen() (length int) {
	if b := c.output(); b != nil {
		return b.MallocLen()
	}
	return 0
}

// Flush will send all malloc data to the peer,
// so must confirm that the allocated bytes have been correctly assigned.
//
// Flush first checks whether the out buffer is empty.
// If empty, it will call syscall.Write to send data directly,
// otherwise the buffer will be sent asynchronously by the epoll trigger.
func (c *connection) Flush() error {
	if !c.IsActive() {
		return Exception(ErrConnClosed, "when flush")
	}

	if !c.lock(flushing) {
		return Exception(ErrConcurrentAccess, "when flush")
	}
	defer c.unlock(flushing)

	if b := c.output(); b != nil {
		b.Flush()
	}
	return c.flush()
}

// MallocAck implements Connection.
func (c *connection) MallocAck(n int) (err error) {
	return c.writer().MallocAck(n)
}

// Append implements Connection.
func (c *connection) Append(w Writer) (err error) {
	return c.writer().Append(w)
}

// WriteString implements Connection.
func (c *connection) WriteString(s string) (n int, err error) {
	return c.writer().WriteString(s)
}

// WriteBinary implements Connection.
func (c *connection) WriteBinary(b []byte) (n int, err error) {
	return c.writer().WriteBinary(b)
}

// WriteDirect implements Connection.
func (c *connection) WriteDirect(p []byte, remainCap int) (err error) {
	return c.writer().WriteDirect(p, remainCap)
}

// WriteByte implements Connection.
func (c *connection) WriteByte(b byte) (err error) {
	return c.writer().WriteByte(b)
}

// ------------------------------------------ implement net.Conn ------------------------------------------

// Read behavior is the same as net.Conn, it will return io.EOF if buffer is empty.
func (c *connection) Read(p []byte) (n int, err error) {
	l := len(p)
	if l == 0 {
		return 0, nil
	}
	if err = c.waitRead(1); err != nil {
		return 0, err
	}
	in := c.reader()
	if has := in.Len(); has < l {
		l = has
	}
	src, err := in.Next(l)
	n = copy(p, src)
	if err == nil {
		err = in.Release()
	}
	return n, err
}

// Write will Flush soon.
func (c *connection) Write(p []byte) (n int, err error) {
	if !c.IsActive() {
		return 0, Exception(ErrConnClosed, "when write")
	}

	if !c.lock(flushing) {
		return 0, Exception(ErrConcurrentAccess, "when write")
	}
	defer c.unlock(flushing)

	out := c.writer()
	dst, _ := out.Malloc(len(p))
	n = copy(dst, p)
	out.Flush()
	err = c.flush()
	return n, err
}

// Close implements Connection.
func (c *connection) Close() error {
	return c.onClose()
}

// Detach detaches the connection from poller but doesn't close it.
func (c *connection) Detach() error {
	c.detaching = true
	return c.onClose()
}

// ------------------------------------------ private ------------------------------------------

var barrierPool = sync.Pool{
	New: func() interface{} {
		return &barrier{
			bs:  make([][]byte, barriercap),
			ivs: make([]syscall.Iovec, barriercap),
		}
	},
}

// init initializes the connection with options
func (c *connection) init(conn Conn, opts *options) (err error) {
	c.initNetFD(conn) // conn must be *netFD{}
	return c.initAccepted(opts)
}

// initAccepted is init for a connection whose netFD is already set (the
// server's poller accepts into it).
func (c *connection) initAccepted(opts *options) (err error) {
	// init buffer, barrier, finalizer
	c.bookSize, c.maxSize = clampInt32(defaultLinkBufferSize), clampInt32(defaultLinkBufferSize)
	// Nothing is allocated here that the connection may never use: the input
	// buffer is created by the first read (input), the output buffer by the
	// first write (writer), the write-vector block is taken by the first
	// flush and the trigger channels by the first wait (waitTriggers).
	c.state = connStateNone
	c.initFDOperator()

	syscall.SetNonblock(c.fd, true)
	// enable TCP_NODELAY by default
	switch c.network {
	case "tcp", "tcp4", "tcp6":
		setTCPNoDelay(c.fd, true)
	}

	// connection initialized and prepare options
	return c.onPrepare(opts)
}

func (c *connection) initNetFD(conn Conn) {
	if nfd, ok := conn.(*netFD); ok {
		c.netFD = *nfd
		return
	}
	c.netFD = netFD{
		fd:         conn.Fd(),
		localAddr:  conn.LocalAddr(),
		remoteAddr: conn.RemoteAddr(),
	}
}

func (c *connection) initFDOperator() {
	poll := pollmanager.Pick()
	op := poll.Alloc()
	op.FD = c.fd
	// Events reach the connection through op.conn, not through method values
	// in the func fields (five allocations per connection).
	op.OnRead, op.OnWrite, op.OnHup = nil, nil, nil
	op.Inputs, op.InputAck, op.Outputs, op.OutputAck = nil, nil, nil, nil
	op.conn = c
	c.operator = op
}

// finalize releases what the connection holds once it is closed: the
// operator, the descriptor, the buffers. It runs at the end of closeCallback,
// after every close callback: where netpoll's own close callback, added first
// and so run last, did it before (one closure and one node less per
// connection).
func (c *connection) finalize() {
	c.stop(flushing)
	c.operator.Free()
	if err := c.netFD.Close(); err != nil {
		logger.Printf("NETPOLL: netFD close failed: %v", err)
	}
	c.closeBuffer()
}

// clampInt32 returns n, or the largest int32 if n is larger: maxSize and
// bookSize are int32 to keep the connection small; both are at most mallocMax
// once the connection has read (an 8 MiB bound), and start at the configured
// buffer size.
func clampInt32(n int) int32 {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(n)
}

// input returns the input buffer, nil while there is none: before the first
// read, and after a Release that left it empty (it is then dropped).
func (c *connection) input() *LinkBuffer {
	return (*LinkBuffer)(atomic.LoadPointer(&c.inputBuffer))
}

// reader returns the input buffer for the reader's methods, creating an empty
// one if there is none (a reader asking for 0 bytes, or after a close). The
// poller creates it too (inputs); whichever stores it first wins.
func (c *connection) reader() *LinkBuffer {
	if in := c.input(); in != nil {
		return in
	}
	return c.newInput(0)
}

// newInput creates the input buffer, with a first node of size bytes (an
// empty read-only node if size is 0), unless another goroutine has just
// created it.
func (c *connection) newInput(size int) *LinkBuffer {
	b := newInputBuffer(size)
	if atomic.CompareAndSwapPointer(&c.inputBuffer, nil, unsafe.Pointer(b)) {
		return b
	}
	freeInput(b)
	return c.input()
}

// inputPool holds the input buffers that Release dropped, closed (no nodes,
// no length), for the next connection's read: a connection that drains its
// input on every request would otherwise allocate a LinkBuffer per read.
var inputPool sync.Pool

// newInputBuffer returns an input buffer from inputPool, or a new one, with a
// first node of size bytes (an empty read-only node if size is 0).
func newInputBuffer(size int) *LinkBuffer {
	b, _ := inputPool.Get().(*LinkBuffer)
	if b == nil {
		return NewLinkBuffer(size)
	}
	node := newLinkBufferNode(size)
	b.head, b.read, b.flush, b.write = node, node, node, node
	return b
}

// freeInput closes b, an input buffer no longer reachable from its connection
// (Release or newInput took it out, or never stored it), and pools it.
func freeInput(b *LinkBuffer) {
	b.Close()
	inputPool.Put(b)
}

// output returns the output buffer, nil before the first write.
func (c *connection) output() *LinkBuffer {
	return (*LinkBuffer)(atomic.LoadPointer(&c.outputBuffer))
}

// writer returns the output buffer, creating it on the first call. Writes
// come from one goroutine at a time (the Writer contract); the pointer is
// atomic because the poller and the close callback read it too.
func (c *connection) writer() *LinkBuffer {
	if b := c.output(); b != nil {
		return b
	}
	b := NewLinkBuffer()
	if atomic.CompareAndSwapPointer(&c.outputBuffer, nil, unsafe.Pointer(b)) {
		return b
	}
	return c.output()
}

// triggers are the channels a waiting reader or flusher sleeps on.
type triggers struct {
	// waitReadSize is the size a reader waits for (waitRead), 0 when none
	// waits; first, for 64-bit atomic access on 32-bit platforms.
	waitReadSize int64
	read         chan error
	write        chan error
	// outputBarrier is the write-vector block of a flush, taken by the first
	// flush and put back by closeBuffer.
	outputBarrier *barrier
	// The timers of a reader waiting with a timeout (waitReadWithTimeout) and
	// of a flush waiting with one (waitFlush), created by their first wait
	// and used only by the reader and the flusher, as when they were fields of
	// the connection.
	readTimer  *time.Timer
	writeTimer *time.Timer
}

// waitTriggers returns the connection's triggers, creating them on the first
// call: a connection nobody ever waits on (a reader that only takes what is
// buffered, a writer that never flushes through netpoll) has none. A waiter
// calls it before it publishes what it waits for (waitReadSize, the write
// event), so a trigger sent after that finds the channels; fresh reports
// whether this call created them, in which case a close that happened before
// sent its trigger to nobody and the caller checks the state itself.
func (c *connection) waitTriggers() (t *triggers, fresh bool) {
	if p := atomic.LoadPointer(&c.triggers); p != nil {
		return (*triggers)(p), false
	}
	t = &triggers{read: make(chan error, 1), write: make(chan error, 1)}
	if atomic.CompareAndSwapPointer(&c.triggers, nil, unsafe.Pointer(t)) {
		return t, true
	}
	return (*triggers)(atomic.LoadPointer(&c.triggers)), false
}

func (c *connection) triggerRead(err error) {
	p := atomic.LoadPointer(&c.triggers)
	if p == nil {
		return // nobody has waited yet
	}
	select {
	case (*triggers)(p).read <- err:
	default:
	}
}

func (c *connection) triggerWrite(err error) {
	p := atomic.LoadPointer(&c.triggers)
	if p == nil {
		return // nobody has waited yet
	}
	select {
	case (*triggers)(p).write <- err:
	default:
	}
}

// waitRead will wait full n bytes.
func (c *connection) waitRead(n int) (err error) {
	if n <= c.Len() {
		return nil
	}
	t, _ := c.waitTriggers() // the loops below check the closing state themselves
	atomic.StoreInt64(&t.waitReadSize, int64(n))
	defer atomic.StoreInt64(&t.waitReadSize, 0)
	var dl int64
	var readTimeout time.Duration
	if tm := c.loadTimeouts(); tm != nil {
		dl, readTimeout = tm.readDeadline, tm.readTimeout
	}
	if dl > 0 {
		timeout := time.Duration(dl - time.Now().UnixNano())
		if timeout <= 0 {
			return Exception(ErrReadTimeout, c.RemoteAddr().String())
		}
		return c.waitReadWithTimeout(n, timeout, t)
	} else if readTimeout > 0 {
		return c.waitReadWithTimeout(n, readTimeout, t)
	}
	// wait full n
	for c.Len() < n {
		switch c.status(closing) {
		case poller:
			return Exception(ErrEOF, "wait read")
		case user:
			return Exception(ErrConnClosed, "wait read")
		default:
			err = <-t.read
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// waitReadWithTimeout will wait full n bytes or until timeout.
func (c *connection) waitReadWithTimeout(n int, timeout time.Duration, t *triggers) (err error) {
	if t.readTimer == nil {
		t.readTimer = time.NewTimer(timeout)
	} else {
		t.readTimer.Reset(timeout)
	}

	for c.Len() < n {
		switch c.status(closing) {
		case poller:
			// cannot return directly, stop timer first!
			err = Exception(ErrEOF, "wait read")
			goto RET
		case user:
			// cannot return directly, stop timer first!
			err = Exception(ErrConnClosed, "wait read")
			goto RET
		default:
			select {
			case <-t.readTimer.C:
				// double check if there is enough data to be read
				if c.Len() >= n {
					return nil
				}
				return Exception(ErrReadTimeout, c.RemoteAddr().String())
			case err = <-t.read:
				if err != nil {
					goto RET
				}
				continue
			}
		}
	}
RET:
	// clean timer.C
	if !t.readTimer.Stop() {
		<-t.readTimer.C
	}
	return err
}

// flush writes data directly.
func (c *connection) flush() error {
	out := c.output()
	if out == nil || out.IsEmpty() {
		return nil
	}
	t, fresh := c.waitTriggers() // before the write event is registered
	if fresh && !c.IsActive() {
		return Exception(ErrConnClosed, "when flush")
	}
	if t.outputBarrier == nil {
		t.outputBarrier = barrierPool.Get().(*barrier)
	}
	bs := out.GetBytes(t.outputBarrier.bs)
	n, err := sendmsg(c.fd, bs, t.outputBarrier.ivs, false)
	if err != nil && err != syscall.EAGAIN {
		return Exception(err, "when flush")
	}
	if n > 0 {
		err = out.Skip(n)
		out.Release()
		if err != nil {
			return Exception(err, "when flush")
		}
	}
	// return if write all buffer.
	if out.IsEmpty() {
		return nil
	}
	err = c.operator.Control(PollR2RW)
	if err != nil {
		return Exception(err, "when flush")
	}

	return c.waitFlush(t)
}

func (c *connection) waitFlush(t *triggers) (err error) {
	var timeout time.Duration
	var dl int64
	if tm := c.loadTimeouts(); tm != nil {
		timeout, dl = tm.writeTimeout, tm.writeDeadline
	}
	if dl > 0 {
		timeout = time.Duration(dl - time.Now().UnixNano())
		if timeout <= 0 {
			return Exception(ErrWriteTimeout, c.RemoteAddr().String())
		}
	}
	if timeout == 0 {
		return <-t.write
	}

	// set write timeout
	if t.writeTimer == nil {
		t.writeTimer = time.NewTimer(timeout)
	} else {
		t.writeTimer.Reset(timeout)
	}

	select {
	case err = <-t.write:
		if !t.writeTimer.Stop() { // clean timer
			<-t.writeTimer.C
		}
		return err
	case <-t.writeTimer.C:
		select {
		// try fetch the write trigger if both cases fires
		case err = <-t.write:
			return err
		default:
		}
		// if timeout, remove write event from poller
		// we cannot flush it again, since we don't if the poller is still process outputBuffer
		c.operator.Control(PollRW2R)
		return Exception(ErrWriteTimeout, c.RemoteAddr().String())
	}
}

func (c *connection) getState() connState {
	return atomic.LoadInt32(&c.state)
}

func (c *connection) setState(newState connState) {
	atomic.StoreInt32(&c.state, newState)
}

func (c *connection) changeState(from, to connState) bool {
	return atomic.CompareAndSwapInt32(&c.state, from, to)
}
