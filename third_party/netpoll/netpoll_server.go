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
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// newServer wrap listener into server, quit will be invoked when server exit.
func newServer(ln Listener, opts *options, onQuit func(err error)) *server {
	s := &server{
		ln:     ln,
		opts:   opts,
		onQuit: onQuit,
	}
	return s
}

type server struct {
	operator FDOperator
	ln       Listener
	opts     *options
	onQuit   func(err error)

	// connections holds the open connections by file descriptor. Descriptors
	// are small and reused, so the slice costs about a pointer per connection.
	mu          sync.Mutex
	connections []*connection
}

// Run this server.
func (s *server) Run() (err error) {
	s.operator = FDOperator{
		FD:     s.ln.Fd(),
		OnRead: s.OnRead,
		OnHup:  s.OnHup,
	}
	s.operator.poll = pollmanager.Pick().(*defaultPoll)
	err = s.operator.Control(PollReadable)
	if err != nil {
		s.onQuit(err)
	}
	return err
}

// Close this server with deadline.
func (s *server) Close(ctx context.Context) error {
	s.operator.Control(PollDetach)
	s.ln.Close()

	for {
		activeConn := 0
		for _, conn := range s.open() {
			if conn.isIdle() {
				conn.Close()
			} else {
				activeConn++
			}
		}
		if activeConn == 0 { // all connections have been closed
			return nil
		}

		// smart control graceful shutdown check internal
		// we should wait for more time if there are more active connections
		waitTime := time.Millisecond * time.Duration(activeConn)
		if waitTime > time.Second { // max wait time is 1000 ms
			waitTime = time.Millisecond * 1000
		} else if waitTime < time.Millisecond*50 { // min wait time is 50 ms
			waitTime = time.Millisecond * 50
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(waitTime):
			continue
		}
	}
}

// OnRead implements FDOperator.
func (s *server) OnRead(p Poll) error {
	// accept socket
	var err error
	if ln, ok := s.ln.(*listener); ok && ln.pconn == nil {
		// A TCP or Unix listener of this package: accepted into the new
		// connection's netFD, not into a *netFD that init would copy.
		var nfd netFD
		if ok, err = ln.accept(&nfd); ok {
			nconn := new(connection)
			nconn.netFD = nfd
			s.register(nconn, nil)
		}
	} else {
		var conn net.Conn
		if conn, err = s.ln.Accept(); err == nil && conn != nil {
			s.onAccept(conn.(Conn))
		}
	}
	if err == nil {
		// EAGAIN | EWOULDBLOCK if nothing was accepted and err is nil
		return nil
	}
	logger.Printf("NETPOLL: accept conn failed: %v", err)

	// delay accept when too many open files
	if isOutOfFdErr(err) {
		// since we use Epoll LT, we have to detach listener fd from epoll first
		// and re-register it when accept successfully or there is no available connection
		cerr := s.operator.Control(PollDetach)
		if cerr != nil {
			logger.Printf("NETPOLL: detach listener fd failed: %v", cerr)
			return err
		}
		go func() {
			retryTimes := []time.Duration{0, 10, 50, 100, 200, 500, 1000} // ms
			retryTimeIndex := 0
			for {
				if retryTimeIndex > 0 {
					time.Sleep(retryTimes[retryTimeIndex] * time.Millisecond)
				}
				conn, err := s.ln.Accept()
				if err == nil {
					if conn == nil {
						// recovery accept poll loop
						s.operator.Control(PollReadable)
						return
					}
					s.onAccept(conn.(Conn))
					logger.Println("NETPOLL: re-accept conn success:", conn.RemoteAddr())
					retryTimeIndex = 0
					continue
				}
				if retryTimeIndex+1 < len(retryTimes) {
					retryTimeIndex++
				}
				logger.Printf("NETPOLL: re-accept conn failed, err=[%s] and next retrytime=%dms", err.Error(), retryTimes[retryTimeIndex])
			}
		}()
	}

	// shut down
	if strings.Contains(err.Error(), "closed") {
		s.operator.Control(PollDetach)
		s.onQuit(err)
		return err
	}

	return err
}

// OnHup implements FDOperator.
func (s *server) OnHup(p Poll) error {
	s.onQuit(errors.New("listener close"))
	return nil
}

func (s *server) onAccept(conn Conn) {
	s.register(new(connection), conn)
}

// register initialises nconn for conn (nil: its netFD is already set, by
// OnRead's accept), adds it to the server and triggers its onConnect.
func (s *server) register(nconn *connection, conn Conn) {
	// The server is known to the connection before OnPrepare: a close during
	// it runs the server's OnClose too. closeCallback takes the connection
	// out of the table (remove), a no-op before add.
	atomic.StorePointer(&nconn.srv, unsafe.Pointer(s))
	// store & register connection
	if conn != nil {
		nconn.init(conn, s.opts)
	} else {
		nconn.initAccepted(s.opts)
	}
	if !nconn.IsActive() {
		return
	}
	if testHookAdding != nil {
		testHookAdding(nconn)
	}
	s.add(nconn)
	// A close between the check and add took it out of the table before it
	// was in (remove); take it out now. The close marks the connection
	// before its close path removes it, so one of the two removes finds it.
	if !nconn.IsActive() {
		s.remove(nconn)
	}

	// trigger onConnect asynchronously
	nconn.onConnect()
}

// testHookAdding, when set (by tests only), runs in register between the
// connection's last check and its entry into the table: a Close from it
// lands where a Close from another goroutine may.
var testHookAdding func(c *connection)

// add records an accepted connection under its descriptor.
func (s *server) add(c *connection) {
	s.mu.Lock()
	if c.fd >= len(s.connections) {
		n := 2 * len(s.connections)
		if n <= c.fd {
			n = c.fd + 1
		}
		if n < 64 {
			n = 64
		}
		grown := make([]*connection, n)
		copy(grown, s.connections)
		s.connections = grown
	}
	s.connections[c.fd] = c
	s.mu.Unlock()
}

// remove forgets a closed connection; closeCallback calls it for every
// connection the server accepted (connection.srv), in place of a close
// callback per connection.
func (s *server) remove(c *connection) {
	s.mu.Lock()
	if c.fd >= 0 && c.fd < len(s.connections) && s.connections[c.fd] == c {
		s.connections[c.fd] = nil
	}
	s.mu.Unlock()
}

// open returns the connections open now.
func (s *server) open() []gracefulExit {
	s.mu.Lock()
	defer s.mu.Unlock()
	var conns []gracefulExit
	for _, c := range s.connections {
		if c != nil {
			conns = append(conns, c)
		}
	}
	return conns
}

func isOutOfFdErr(err error) bool {
	se, ok := err.(syscall.Errno)
	return ok && (se == syscall.EMFILE || se == syscall.ENFILE)
}
