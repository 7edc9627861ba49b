package client_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
	"github.com/tinylib/msgp/msgp"

	"github.com/NoLagApp/kraken/pkg/testpeer"
)

// fakeServer is a scripted WebSocket server: each test reads the frames a
// client sends and writes the replies by hand.
type fakeServer struct {
	t     testing.TB
	ln    net.Listener
	conns chan *fakeConn
	wg    sync.WaitGroup
	mu    sync.Mutex
	all   []*fakeConn
}

type fakeFrame struct {
	op      ws.OpCode
	payload []byte
	m       map[string]any
}

func (f fakeFrame) String() string {
	if f.m != nil {
		b, _ := json.Marshal(f.m)
		return string(b)
	}
	return fmt.Sprintf("op %d %q", f.op, f.payload)
}

type fakeConn struct {
	t      testing.TB
	nc     net.Conn
	frames chan fakeFrame
}

func newFakeServer(t testing.TB) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{t: t, ln: ln, conns: make(chan *fakeConn, 16)}
	s.wg.Add(1)
	go s.acceptLoop()
	t.Cleanup(s.close)
	return s
}

func (s *fakeServer) url() string { return "ws://" + s.ln.Addr().String() + "/ws" }

func (s *fakeServer) acceptLoop() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		if _, err := ws.Upgrade(nc); err != nil {
			_ = nc.Close()
			continue
		}
		fc := &fakeConn{t: s.t, nc: nc, frames: make(chan fakeFrame, 4096)}
		s.mu.Lock()
		s.all = append(s.all, fc)
		s.mu.Unlock()
		s.wg.Add(1)
		go fc.readLoop(&s.wg)
		s.conns <- fc
	}
}

func (s *fakeServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, fc := range s.all {
		_ = fc.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// accept returns the next connection.
func (s *fakeServer) accept() *fakeConn {
	s.t.Helper()
	select {
	case fc := <-s.conns:
		return fc
	case <-time.After(5 * time.Second):
		s.t.Fatal("no connection")
		return nil
	}
}

// noConnection fails if a connection arrives within d.
func (s *fakeServer) noConnection(d time.Duration) {
	s.t.Helper()
	select {
	case <-s.conns:
		s.t.Fatal("unexpected connection")
	case <-time.After(d):
	}
}

func (fc *fakeConn) readLoop(wg *sync.WaitGroup) {
	defer wg.Done()
	defer close(fc.frames)
	for {
		p, op, err := wsutil.ReadClientData(fc.nc)
		if err != nil {
			return
		}
		f := fakeFrame{op: op, payload: p}
		if op == ws.OpBinary && len(p) > 0 {
			f.m, _, _ = msgp.ReadMapStrIntfBytes(p, nil)
		}
		fc.frames <- f
	}
}

// next returns the next frame, heartbeats included.
func (fc *fakeConn) next() fakeFrame {
	fc.t.Helper()
	select {
	case f, ok := <-fc.frames:
		if !ok {
			fc.t.Fatal("connection closed")
		}
		return f
	case <-time.After(5 * time.Second):
		fc.t.Fatal("no frame")
		return fakeFrame{}
	}
}

// expect skips heartbeats and returns the next frame, which must be of
// type typ and have the given fields (compared as JSON).
func (fc *fakeConn) expect(typ string, kv ...any) map[string]any {
	fc.t.Helper()
	for {
		f := fc.next()
		if f.op == ws.OpBinary && len(f.payload) == 0 {
			continue
		}
		if f.m["type"] != typ {
			fc.t.Fatalf("expected a %q frame, got %s", typ, f)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			k := kv[i].(string)
			if !sameJSON(f.m[k], kv[i+1]) {
				fc.t.Fatalf("%s: field %q = %v, want %v", f, k, f.m[k], kv[i+1])
			}
		}
		return f.m
	}
}

func (fc *fakeConn) send(kv ...any) {
	fc.t.Helper()
	if err := wsutil.WriteServerBinary(fc.nc, testpeer.Map(kv...)); err != nil {
		fc.t.Fatalf("send: %v", err)
	}
}

// auth expects the auth frame and accepts it; it returns the auth frame.
func (fc *fakeConn) auth(kv ...any) map[string]any {
	fc.t.Helper()
	m := fc.expect("auth", kv...)
	fc.send("type", "auth", "success", true, "actorTokenId", "bob", "projectId", "demo-project",
		"actorType", "user", "protocolVersion", 2, "restoredSubscriptions", []any{})
	return m
}

func (fc *fakeConn) drop() { _ = fc.nc.Close() }

func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
